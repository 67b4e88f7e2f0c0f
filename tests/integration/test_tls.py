"""The region's etcd over TLS ([etcd] tls): the harness's clients work, and the members really
check who calls them: no certificate, or one of another CA, is refused."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

import pytest

from harness.config import load_config
from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.kube.pki import EtcdNames, generate_etcd_pki
from harness.load.client import KV, ClientTls, KVError
from harness.netns import entered
from harness.probes.etcd import hashkv
from harness.providers.local.region import LocalEnvironment, LocalRegion


@pytest.fixture(scope="module")
def tls_env() -> Iterator[LocalEnvironment]:
    region = LocalRegion(load_config(overrides={"region.name": "tl", "etcd.tls": True}))
    region.down()
    try:
        yield region.up()
    finally:
        region.down()


def test_every_client_of_the_harness_speaks_tls(tls_env: LocalEnvironment) -> None:
    env = tls_env
    assert env.tls is not None and all(m.client_url.startswith("https://") for m in env.members)
    client = env.client("etcd-0", env.zones[1])
    try:
        revision = client.put("/tls/a", "b")
    finally:
        client.close()
    assert len(set(hashkv(env, revision).values())) == 1
    assert "etcd_network_peer_sent_bytes_total" in env.metrics("etcd-1")  # plain HTTP on 2381
    tls = env.tls
    with entered(env.names.client_ns(env.zones[0])):
        kv = KV(env.members[2].client_url, tls=ClientTls(str(tls.ca), str(tls.cert), str(tls.key)))
        try:
            assert kv.get("/tls/a") == (revision, "b")
        finally:
            kv.close()
    args = " ".join(env.state["members"]["etcd-0"]["args"])
    assert "--client-cert-auth" in args and "--peer-client-cert-auth" in args and "peer-cert-file" in args


def test_a_client_without_a_certificate_the_members_trust_is_refused(tls_env: LocalEnvironment,
                                                                      tmp_path: Path) -> None:
    env = tls_env
    url, ns = env.members[0].client_url, env.names.client_ns(env.members[0].zone)
    with pytest.raises(EtcdRequestError):  # plain HTTP on the TLS port
        EtcdClient(url.replace("https://", "http://"), ns, 2.0).status()
    other = generate_etcd_pki(tmp_path, EtcdNames(()))  # a CA the members do not trust
    assert env.tls is not None
    strangers = [dataclasses.replace(env.tls, cert=other.client_cert, key=other.client_key),  # unknown CA
                 dataclasses.replace(env.tls, ca=other.ca)]  # the members' certificates unknown to the client
    for tls in strangers:
        with pytest.raises(EtcdRequestError, match="(?i)certificate|handshake|reset|alert|SSLEOFError"):
            EtcdClient(url, ns, 2.0, tls).status()
    with entered(ns):
        kv = KV(url, timeout=2.0, tls=ClientTls(str(env.tls.ca), str(other.client_cert), str(other.client_key)))
        try:
            with pytest.raises(KVError):
                kv.put("/tls/stranger", "x")
        finally:
            kv.close()


def _slow_opening_route(target: tuple[str, int], netns: str, opening: float) -> tuple[int, socket.socket]:
    """A local port whose connections go on to `target` in `netns` only `opening` s after they
    were accepted: a route costly to open (a port-forward through the seed's API), quick once open."""
    listener = socket.create_server(("127.0.0.1", 0))

    def pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                s.close()

    def serve(client: socket.socket) -> None:
        time.sleep(opening)
        with entered(netns):
            remote = socket.create_connection(target, 5.0)
        threading.Thread(target=pump, args=(client, remote), daemon=True).start()
        pump(remote, client)

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], listener


def test_a_route_slow_to_open_is_given_its_own_patience_and_requests_theirs(tls_env: LocalEnvironment) -> None:
    """A client whose connection opens slower than one request's patience: without a patience
    of its own to open, no request is ever answered, each attempt abandoned mid-handshake; with
    one, the connection opens once and the requests on it keep their short patience."""
    env = tls_env
    member = env.members[0]
    address = urlsplit(member.client_url)
    assert env.tls is not None and address.hostname and address.port
    port, listener = _slow_opening_route((address.hostname, address.port), env.names.client_ns(member.zone), 0.6)
    tls = dataclasses.replace(env.tls, server_name=address.hostname)
    try:
        impatient = EtcdClient(f"https://127.0.0.1:{port}", None, 0.25, tls)
        for _ in range(3):
            with pytest.raises(EtcdRequestError, match="(?i)timed out"):
                impatient.status()
        patient = EtcdClient(f"https://127.0.0.1:{port}", None, 0.25, tls, connect_timeout=3.0)
        try:
            began = time.monotonic()
            patient.status()
            assert time.monotonic() - began >= 0.6, "the first request waited for the route to open"
            began = time.monotonic()
            for i in range(5):
                patient.put(f"/tls/open-once/{i}", "v")
            assert time.monotonic() - began < 5 * 0.6, "later requests ran on the open connection"
            assert patient._conn is not None and patient._conn.sock.gettimeout() == 0.25
        finally:
            patient.close()
    finally:
        listener.close()
