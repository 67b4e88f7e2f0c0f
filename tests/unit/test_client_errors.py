"""Which failed writes are definite: only a request that provably never left."""

from __future__ import annotations

import socket

import pytest

from harness.load.client import KV, KVError, never_sent


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends: connections are refused


def test_a_put_to_a_port_nobody_listens_on_is_a_definite_failure() -> None:
    """etcd-sdk-python replaces gRPC's UNAVAILABLE by its own ConnectionFailedError; the words that
    say the request never left are on the gRPC error it replaced."""
    kv = KV(f"http://127.0.0.1:{_closed_port()}", timeout=2)
    with pytest.raises(KVError, match="ConnectionFailedError") as caught:
        kv.put("/k", "v")
    assert caught.value.indeterminate is False


@pytest.mark.parametrize("message, sent", [
    ("failed to connect to all addresses; last error: UNKNOWN: ipv4:10.77.1.11:2379: Connection refused", False),
    ("Socket closed", True),
    ("recvmsg:Connection reset by peer", True),
])
def test_only_no_connection_at_all_means_never_sent(message: str, sent: bool) -> None:
    assert never_sent(message) is not sent
