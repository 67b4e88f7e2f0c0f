"""Which etcd members a kube-apiserver is started with: every member of the StatefulSet, as
etcd's client Service would reach them, never only the few scheduled first (an apiserver keeps
its list for life). Against a fake API: this is about the agent's reading of it."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from harness.kube import etcd_tls
from harness.kube.agent import IP_BASE_ANNOTATION, ZONE_LABEL, Agent, NotYet

SUBNETS = {"zone-a": "10.1.1", "zone-b": "10.1.2", "zone-c": "10.1.3"}


def _pod(name: str, node: str | None, unschedulable: bool = False) -> Any:
    conditions = [NS(type="PodScheduled", status="False", reason="Unschedulable")] if unschedulable else []
    return NS(metadata=NS(name=name), spec=NS(node_name=node), status=NS(conditions=conditions))


def _pv(zone: str) -> Any:
    expression = NS(key=ZONE_LABEL, operator="In", values=[zone])
    return NS(spec=NS(node_affinity=NS(required=NS(node_selector_terms=[NS(match_expressions=[expression])]))))


class FakeCore:
    def __init__(self, pods: dict[str, Any], claims: dict[str, str], volumes: dict[str, Any]) -> None:
        self.pods, self.claims, self.volumes = pods, claims, volumes

    def read_namespaced_pod(self, name: str, namespace: str, **_: Any) -> Any:
        if name not in self.pods:
            raise ApiException(status=404)
        return self.pods[name]

    def read_node(self, name: str, **_: Any) -> Any:
        return NS(metadata=NS(labels={ZONE_LABEL: "zone-" + name.split("-")[1]}))

    def list_namespaced_persistent_volume_claim(self, namespace: str, **_: Any) -> Any:
        return NS(items=[NS(metadata=NS(name=c), spec=NS(volume_name=v)) for c, v in self.claims.items()])

    def read_persistent_volume(self, name: str, **_: Any) -> Any:
        return self.volumes[name]

    def read_namespace(self, name: str, **_: Any) -> Any:
        return NS(metadata=NS(annotations={"high-availability-config.resources.gardener.cloud/zones": "zone-a,zone-b,zone-c"}))


class FakeApps:
    def __init__(self, volumes: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> None:
        self.volumes = [NS(name=v, secret=NS(secret_name=s)) for v, s in (volumes or {}).items()]
        self.labels = labels

    def read_namespaced_stateful_set(self, name: str, namespace: str, **_: Any) -> Any:
        if name != "etcd-main":
            raise ApiException(status=404)
        # etcd-druid's carries its labels and no address annotation; the renderer's the annotation
        meta = NS(labels=self.labels, annotations=None) if self.labels else NS(labels={}, annotations={IP_BASE_ANNOTATION: "100"})
        return NS(spec=NS(replicas=3, service_name="etcd-main-peer", template=NS(metadata=meta, spec=NS(volumes=self.volumes))))


def _agent(core: FakeCore, apps: FakeApps | None = None) -> Agent:
    agent = Agent.__new__(Agent)
    agent.core, agent.apps, agent.subnets = core, apps or FakeApps(), SUBNETS
    return agent


def test_every_member_is_named_once_all_are_scheduled() -> None:
    core = FakeCore({f"etcd-main-{k}": _pod(f"etcd-main-{k}", f"zone-{z}-1") for k, z in enumerate("abc")}, {}, {})
    assert _agent(core)._client_urls("ns", "etcd-main") == [
        "http://10.1.1.100:2379", "http://10.1.2.101:2379", "http://10.1.3.102:2379"]
    assert _agent(core)._client_urls("ns", "etcd-events") == []  # no such StatefulSet: no override


def test_members_that_mount_serving_certificates_are_dialled_over_tls() -> None:
    core = FakeCore({f"etcd-main-{k}": _pod(f"etcd-main-{k}", f"zone-{z}-1") for k, z in enumerate("abc")}, {}, {})
    assert _agent(core, FakeApps(etcd_tls.MEMBER_VOLUMES))._client_urls("ns", "etcd-main") == [
        "https://10.1.1.100:2379", "https://10.1.2.101:2379", "https://10.1.3.102:2379"]


def test_an_apiserver_waits_for_members_not_scheduled_yet() -> None:
    core = FakeCore({"etcd-main-0": _pod("etcd-main-0", "zone-a-1"), "etcd-main-1": _pod("etcd-main-1", None),
                     "etcd-main-2": _pod("etcd-main-2", None)}, {}, {})
    with pytest.raises(NotYet, match="etcd-main-1 is not scheduled yet"):
        _agent(core)._client_urls("ns", "etcd-main")


def test_a_member_without_a_node_is_found_by_its_volume_zone() -> None:
    # Zone-a is out: its member was force-deleted and waits Pending for its zonal volume.
    pods = {"etcd-main-0": _pod("etcd-main-0", None), "etcd-main-1": _pod("etcd-main-1", "zone-b-2"),
            "etcd-main-2": _pod("etcd-main-2", "zone-c-1")}
    core = FakeCore(pods, {"main-etcd-etcd-main-0": "pv-a"}, {"pv-a": _pv("zone-a")})
    assert _agent(core)._client_urls("ns", "etcd-main")[0] == "http://10.1.1.100:2379"


def test_a_member_the_scheduler_gave_up_on_does_not_hold_the_apiservers_back() -> None:
    pods = {"etcd-main-0": _pod("etcd-main-0", "zone-a-1"), "etcd-main-1": _pod("etcd-main-1", "zone-b-1"),
            "etcd-main-2": _pod("etcd-main-2", None, unschedulable=True)}
    assert _agent(FakeCore(pods, {}, {}))._client_urls("ns", "etcd-main") == [
        "http://10.1.1.100:2379", "http://10.1.2.101:2379"]


def test_druids_members_are_dialled_by_the_names_their_serving_certificates_hold() -> None:
    """gardenlet's serving certificates name the peer Service's pods (`*.etcd-main-peer.<ns>.svc`),
    no address: the apiserver dials each member by that name, at its fixed address."""
    druid = {"app": "etcd-statefulset", "role": "main", "app.kubernetes.io/managed-by": "etcd-druid"}
    mounts = {"etcd-ca": "ca-etcd-bundle", "etcd-server-tls": "etcd-server-main", "etcd-client-tls": "etcd-client"}
    core = FakeCore({f"etcd-main-{k}": _pod(f"etcd-main-{k}", f"zone-{z}-1") for k, z in enumerate("abc")}, {}, {})
    members = _agent(core, FakeApps(mounts, druid))._client_members("ns", "etcd-main")
    assert [(m.url, m.address) for m in members] == [
        ("https://etcd-main-0.etcd-main-peer.ns.svc:2379", "10.1.1.100"),
        ("https://etcd-main-1.etcd-main-peer.ns.svc:2379", "10.1.2.101"),
        ("https://etcd-main-2.etcd-main-peer.ns.svc:2379", "10.1.3.102")]
    assert [m.name for m in members] == [m.url[len("https://"):-len(":2379")] for m in members]
