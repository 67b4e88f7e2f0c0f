"""The region's etcd over TLS ([etcd] tls): the harness's clients work, and the members really
check who calls them: no certificate, or one of another CA, is refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

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
