"""What the node agent gives etcd-druid's pods without running them: their cluster DNS as /etc/hosts,
their mounts, and etcd-wrapper's arguments as druid writes them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as O
from typing import Any

import pytest

from harness.kube import druid_pods, etcd_wrapper, sandbox

NS = "shoot--x"


def _pod(name: str, ip: str | None, ready: bool, labels: dict[str, str], hostname: str | None = None,
         subdomain: str | None = None, deleting: bool = False, aliases: list[Any] | None = None) -> Any:
    return O(metadata=O(name=name, namespace=NS, labels=labels, deletion_timestamp="now" if deleting else None),
             spec=O(hostname=hostname, subdomain=subdomain, host_aliases=aliases),
             status=O(pod_ip=ip, conditions=[O(type="Ready", status="True" if ready else "False")]))


def _service(name: str, selector: dict[str, str] | None, headless: bool = False, publish: bool = False) -> Any:
    return O(metadata=O(name=name), spec=O(selector=selector, cluster_ip="None" if headless else "10.0.0.9",
                                          publish_not_ready_addresses=publish))


MAIN = {"app": "etcd-statefulset", "role": "main"}


def test_cluster_dns_as_hosts_lines_peers_published_not_ready_clients_only_ready() -> None:
    pods = [_pod("etcd-main-0", "10.1.1.120", True, MAIN, "etcd-main-0", "etcd-main-peer",
                 aliases=[O(ip="127.0.0.1", hostnames=["etcd-main-local"])]),
            _pod("etcd-main-1", "10.1.2.120", False, MAIN, "etcd-main-1", "etcd-main-peer"),
            _pod("etcd-main-2", None, False, MAIN, "etcd-main-2", "etcd-main-peer"),  # not started: no address
            _pod("etcd-main-3", "10.1.3.9", True, MAIN, "etcd-main-3", "etcd-main-peer", deleting=True),
            _pod("other", "10.1.1.121", True, {"app": "other"})]
    services = [_service("etcd-main-peer", MAIN, headless=True, publish=True), _service("etcd-main-client", MAIN),
                _service("no-selector", None)]
    entries = druid_pods.hosts_entries(pods[0], pods, services)
    peer = "etcd-main-peer.shoot--x.svc"
    client = ["etcd-main-client", "etcd-main-client.shoot--x", "etcd-main-client.shoot--x.svc",
              "etcd-main-client.shoot--x.svc.cluster.local"]
    assert entries == [
        ("127.0.0.1", ["etcd-main-local"]),
        ("10.1.1.120", [f"etcd-main-0.{peer}", f"etcd-main-0.{peer}.cluster.local"]),
        ("10.1.2.120", [f"etcd-main-1.{peer}", f"etcd-main-1.{peer}.cluster.local"]),
        # the headless peer Service's own name: every member it publishes
        ("10.1.1.120", [n.replace("client", "peer") for n in client]),
        ("10.1.2.120", [n.replace("client", "peer") for n in client]),
        ("10.1.1.120", client),  # the client Service: ready members only
    ]


def test_a_pod_under_a_service_that_does_not_publish_not_ready_ones_has_no_name_until_ready() -> None:
    pods = [_pod("a-0", "10.1.1.5", False, MAIN, "a-0", "a"), _pod("a-1", "10.1.1.6", True, MAIN, "a-1", "a")]
    names = [n for _, ns in druid_pods.hosts_entries(pods[0], pods, [_service("a", MAIN, headless=True)]) for n in ns]
    assert "a-0.a.shoot--x.svc" not in names and "a-1.a.shoot--x.svc" in names


def test_hosts_are_written_in_place_so_that_a_bind_mount_sees_the_change(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    assert sandbox.write_hosts(hosts, [("10.1.1.5", ["a", "b"])])
    inode = hosts.stat().st_ino
    assert not sandbox.write_hosts(hosts, [("10.1.1.5", ["a", "b"])])
    assert sandbox.write_hosts(hosts, [("10.1.1.6", ["a"])])
    assert hosts.stat().st_ino == inode
    assert hosts.read_text().splitlines()[-1] == "10.1.1.6\ta"


@pytest.mark.parametrize("text, expected", [
    ("/a:/var/etcd/data", sandbox.Bind("/a", "/var/etcd/data")),
    ("/a:/var/etcd/config:ro", sandbox.Bind("/a", "/var/etcd/config", True)),
])
def test_binds_parse(text: str, expected: sandbox.Bind) -> None:
    assert sandbox.Bind.parse(text) == expected
    assert sandbox.Bind.parse(expected.arg()) == expected


@pytest.mark.parametrize("text", ["/a", "/a:/b:rw", ":/b", "/a:/b:ro:x"])
def test_a_bad_bind_names_what_is_accepted(text: str) -> None:
    with pytest.raises(sandbox.SandboxError, match="SOURCE:TARGET or SOURCE:TARGET:ro"):
        sandbox.Bind.parse(text)


def test_a_volume_with_items_gets_only_those_keys_at_their_paths(tmp_path: Path) -> None:
    out = druid_pods._write_keys(tmp_path / "v", {"etcd.conf.yaml": b"name: x", "other": b"y"},
                                 [O(key="etcd.conf.yaml", path="etcd.conf.yaml")])
    assert sorted(p.name for p in out.iterdir()) == ["etcd.conf.yaml"]
    with pytest.raises(druid_pods.PodError, match="no key 'missing'"):
        druid_pods._write_keys(tmp_path / "w", {"a": b""}, [O(key="missing", path="m")])


def test_env_from_values_and_the_pods_own_fields_and_nothing_else() -> None:
    pod = O(metadata=O(name="etcd-main-0", namespace=NS))
    container = O(name="backup-restore", env=[
        O(name="POD_NAME", value=None, value_from=O(field_ref=O(field_path="metadata.name"))),
        O(name="POD_NAMESPACE", value=None, value_from=O(field_ref=O(field_path="metadata.namespace"))),
        O(name="STORAGE_CONTAINER", value="bucket", value_from=None)])
    assert druid_pods._env(pod, container) == {"POD_NAME": "etcd-main-0", "POD_NAMESPACE": NS,
                                               "STORAGE_CONTAINER": "bucket"}
    container.env.append(O(name="IP", value=None, value_from=O(field_ref=O(field_path="status.podIP"))))
    with pytest.raises(druid_pods.PodError, match="fieldRef status.podIP"):
        druid_pods._env(pod, container)


def test_etcd_wrapper_takes_druids_arguments_as_druid_writes_them() -> None:
    # etcd-druid v0.36.4's getEtcdContainerCommandArgs for an Etcd with client TLS and backup TLS
    args = etcd_wrapper.parse(["--etcd=/bin/etcd", "start-etcd", "--backup-restore-host-port=etcd-main-local:8080",
                               "--etcd-server-name=etcd-main-local", "--backup-restore-tls-enabled=true",
                               "--backup-restore-ca-cert-bundle-path=/var/etcdbr/ssl/ca/bundle.crt",
                               "--etcd-client-cert-path=/var/etcd/ssl/client/tls.crt",
                               "--etcd-client-key-path=/var/etcd/ssl/client/tls.key", "--etcd-client-port=2379",
                               "--etcd-wrapper-port=9095"])
    assert (args.backup_restore_host_port, args.etcd_server_name, args.etcd_wrapper_port) == \
        ("etcd-main-local:8080", "etcd-main-local", 9095)
    assert etcd_wrapper.Sidecar(etcd_wrapper.parse(["--etcd=/bin/etcd", "start-etcd"])).base == "http://localhost:8080"


def test_a_druid_member_gets_the_address_of_the_reference_member_of_its_etcd_and_ordinal() -> None:
    """Stable across the pod's re-creation (its volume keeps it in its zone), as the harness's view
    of the members assumes; no base for a pod of no etcd the harness knows."""
    druid = {druid_pods.MANAGED_BY[0]: druid_pods.MANAGED_BY[1]}
    assert druid_pods.address_base(_pod("etcd-main-2", None, False, {**MAIN, **druid})) == 100
    assert druid_pods.address_base(_pod("etcd-events-0", None, False, {**MAIN, "role": "events", **druid})) == 110
    assert druid_pods.address_base(_pod("etcd-other-0", None, False, {**MAIN, "role": "other", **druid})) is None
