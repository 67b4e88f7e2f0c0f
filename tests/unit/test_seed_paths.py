"""The parts of reaching a control plane through a seed that run without one: the relay
handshake, the vantage pod's manifest, and which way a zone outage or a node kill goes on an
environment that cannot cause it itself."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from harness.faults.node import NodeFailure
from harness.faults.zone import ZoneOutage
from harness.kube import vantage
from harness.kube.controlplane import AGENT_LABEL, ZONE_LABEL
from harness.kube.portforward import _connected


def _relay(answer: bytes) -> tuple[socket.socket, list[bytes]]:
    """One end of a pair whose other end answers a CONNECT with `answer` (and then b"rest")."""
    ours, theirs = socket.socketpair()
    heard: list[bytes] = []

    def serve() -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            request += theirs.recv(1024)
        heard.append(request)
        try:
            theirs.sendall(answer + b"rest")
        except BrokenPipeError:  # a forward that refuses a cut answer may hang up before the rest
            pass
        theirs.close()

    threading.Thread(target=serve, daemon=True).start()
    return ours, heard


def _client() -> tuple[socket.socket, socket.socket]:
    """(the forward's end, the client's end) of a client connection."""
    return socket.socketpair()


def test_a_relay_connection_is_used_once_the_relay_says_it_connected_and_nothing_past_its_answer_is_eaten() -> None:
    sock, heard = _relay(b"HTTP/1.1 200 Connection established\r\n\r\n")
    ours, _theirs = _client()
    assert _connected(sock, "10.77.1.100:2379", ours)
    assert heard == [b"CONNECT 10.77.1.100:2379 HTTP/1.1\r\nHost: 10.77.1.100:2379\r\n\r\n"]
    assert sock.recv(16) == b"rest"  # what the target sent first is the client's


@pytest.mark.parametrize("answer", [b"HTTP/1.1 502 Bad Gateway\r\n\r\n", b"HTTP/1.1 200 OK but cut"])
def test_a_relay_that_refuses_or_hangs_up_fails_the_connection(answer: bytes) -> None:
    sock, _ = _relay(answer)
    assert not _connected(sock, "10.77.1.100:2379", _client()[0], timeout=2.0)


def test_a_client_that_gives_up_while_the_relay_still_dials_frees_its_place_at_once() -> None:
    """Seen on the cluster provider: connections to a member behind a zone that was down waited
    out the relay's 10 s dial after their clients had timed out, and held every place of the
    forward, so the member's catch-up after the zone's return went unseen for seconds."""
    import time

    relay, silent = socket.socketpair()  # a relay still dialling: it never answers
    ours, theirs = _client()
    theirs.sendall(b"PUT /v3/kv/put HTTP/1.1\r\n\r\n")  # the request, unread behind the close
    threading.Timer(0.2, theirs.close).start()
    started = time.monotonic()
    assert not _connected(relay, "10.77.1.100:2379", ours, timeout=10.0)
    assert time.monotonic() - started < 2.0
    silent.close()


def test_a_vantage_pod_is_pinned_to_its_zone_and_runs_the_relay_from_its_configmap() -> None:
    configmap, pod = vantage.manifests("shoot--x", "zone-b")
    assert "async def _serve" in configmap["data"]["egress_proxy.py"]
    assert pod["metadata"]["name"] == "harness-vantage-zone-b" and pod["spec"]["nodeSelector"] == {ZONE_LABEL: "zone-b"}
    assert pod["metadata"]["labels"][AGENT_LABEL] == "relay"
    (container,) = pod["spec"]["containers"]
    assert container["command"][-1] == f"--listen=0.0.0.0:{vantage.RELAY_PORT}"
    assert container["ports"] == [{"containerPort": vantage.RELAY_PORT}]


class _Env:
    provider = "cluster"

    def __init__(self, account: Any) -> None:
        self._account = account

    def aws(self) -> Any:
        return self._account


def test_a_cluster_without_an_aws_account_says_it_cannot_cut_a_zone_or_kill_a_node() -> None:
    env = _Env(None)
    assert ZoneOutage().available(env) == ("the cluster provider cannot cut a zone off the network, and the cluster "  # type: ignore[arg-type]
                                           "environment has no AWS account: configure [aws] (region, vpc_id, zones)")
    assert NodeFailure("kill").available(env).startswith("the cluster provider cannot fail nodes, and")  # type: ignore[arg-type,union-attr]
    assert NodeFailure("freeze").available(env) == "the cluster provider cannot fail nodes"  # type: ignore[arg-type]


def test_a_cluster_with_an_aws_account_cuts_zones_and_kills_nodes_through_the_cloud() -> None:
    env = _Env(object())
    assert ZoneOutage().available(env) is None  # type: ignore[arg-type]
    assert NodeFailure("kill").available(env) is None  # type: ignore[arg-type]
    assert NodeFailure("kill")._cloud(env).mode == "stop"  # type: ignore[arg-type,union-attr]
    assert NodeFailure("link-down").available(env) == "the cluster provider cannot fail nodes"  # type: ignore[arg-type]
