"""A member's own history, as `EtcdClient.history` replays it from a real etcd, judged by
`missing_from_history`: a write overwritten since is still checked, compaction is said."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.validate.watch import missing_from_history


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def member(tmp_path: Path) -> Iterator[EtcdClient]:
    etcd = shutil.which("etcd")
    assert etcd, "etcd is installed by make setup"
    client, peer = _free_port(), _free_port()
    proc = subprocess.Popen(
        [etcd, "--name", "h", "--data-dir", str(tmp_path / "data"), "--listen-client-urls", f"http://127.0.0.1:{client}",
         "--advertise-client-urls", f"http://127.0.0.1:{client}", "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}", "--initial-cluster", f"h=http://127.0.0.1:{peer}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "etcd.log", "ab"))
    c = EtcdClient(f"http://127.0.0.1:{client}", None, timeout=2.0)
    deadline = time.monotonic() + 30
    while True:
        try:
            c.status()
            break
        except EtcdRequestError:
            assert time.monotonic() < deadline, (tmp_path / "etcd.log").read_text()[-2000:]
            time.sleep(0.1)
    try:
        yield c
    finally:
        c.close()
        proc.kill()
        proc.wait()


def _held(writes: list[tuple[int, str, str | None]]) -> dict[str, list[tuple[int, str | None]]]:
    out: dict[str, list[tuple[int, str | None]]] = {}
    for rev, key, value in writes:
        out.setdefault(key, []).append((rev, value))
    return out


def test_an_overwritten_write_is_checked_in_the_members_history(member: EtcdClient) -> None:
    first = member.put("k", "v1")
    second = member.put("k", "v2")
    member.put("other", "x")
    last = member.put("k", "v3")
    writes, oldest = member.history(first, member.status().revision)
    assert oldest == 0
    assert [(r, k, v) for r, k, v in writes] == [(first, "k", "v1"), (second, "k", "v2"), (last - 1, "other", "x"),
                                                (last, "k", "v3")]
    held = _held(writes)
    assert missing_from_history({"k": [(first, "v1"), (second, "v2"), (last, "v3")]}, held) == []
    # What the final state cannot show: an acknowledgement for revision `second` whose value the
    # member never held there, and one for a revision it holds for another key.
    lost = missing_from_history({"k": [(second, "v2-acked"), (last - 1, "v9")]}, held)
    assert [(x.revision, x.reason) for x in lost] == [
        (second, "the member's history holds 'v2' there"),
        (last - 1, "the member's history of the key has no write at that revision")]


def test_binary_values_are_kept_apart(member: EtcdClient) -> None:
    """A Kubernetes object in etcd is protobuf, not UTF-8."""
    first = member.put("/registry/pods/a", b"k8s\x00\xa4\x01")
    second = member.put("/registry/pods/a", b"k8s\x00\xa5\x01")
    writes, _ = member.history(first, second)
    assert [w[0] for w in writes] == [first, second] and writes[0][2] != writes[1][2]
    assert writes[0][2].encode("utf-8", "surrogateescape") == b"k8s\x00\xa4\x01"


def test_a_compacted_start_is_said_and_only_what_is_left_is_judged(member: EtcdClient) -> None:
    first = member.put("k", "v1")
    second = member.put("k", "v2")
    member.delete_prefix("k")
    member.compact(second)
    writes, oldest = member.history(first, member.status().revision)
    assert oldest == second
    assert writes == [(second, "k", "v2"), (second + 1, "k", None)]
    assert missing_from_history({"k": [(first, "v1"), (second, "v2")]}, _held(writes), oldest) == []
    assert len(missing_from_history({"k": [(first, "v1"), (second, "v2")]}, _held(writes), 0)) == 1


def test_an_endpoint_the_gateway_lacks_is_unsupported_not_a_json_error(member: EtcdClient) -> None:
    from harness.etcd_gateway import EtcdUnsupported

    with pytest.raises(EtcdUnsupported, match="HTTP 404: this etcd's gateway has no such endpoint"):
        member.call("/v3/maintenance/no-such-endpoint", {})
    assert member.status().revision >= 1  # the connection is usable again
