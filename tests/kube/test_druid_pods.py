"""etcd-druid runs the shoot's etcds on the local seed for real: gardenlet's own component code makes
the Etcd resources, etcd-druid (real) makes their StatefulSets, and the node agents run each pod in
a sandbox of its own with the real etcd-backup-restore, etcd-wrapper's stand-in and the real etcd,
configured as druid generated it. Judged by what druid itself reports, and by the members."""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Iterator

import pytest
from kubernetes import client as k8s

from harness import netns
from harness.errors import WaitTimeout
from harness.kube import backup_restore, cluster, druid, gardenlet
from harness.kube.resource_manager import as_new
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.local.seed.kubernetes import STORAGE_CLASS, control_plane
from harness.reference.render import ReferenceSpec, render
from harness.wait import wait_for
from tests.integration.conftest import config_for, namespaces
from tests.kube.kube_support import processes_mentioning

pytestmark = [pytest.mark.kube, pytest.mark.region]
NS = "shoot--harness--druid-pods"
ETCDS = ("etcd-main", "etcd-events")
# The class gardenlet's Etcd resources name, as gardenlet's seed system component makes it
# (gardener pkg/component/seed/system: gardenletManagedPriorityClasses).
PRIORITY_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "gardener-system-500"}, "value": 999998500,
                  "description": "PriorityClass for Shoot control plane components"}


def _volumes(zones: tuple[str, ...]) -> list[dict[str, Any]]:
    """Two zonal volumes per zone, as large as gardenlet's claims (etcd-main's 25Gi)."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"{NS}-{zone}-{i}"},
             "spec": {"capacity": {"storage": "25Gi"}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": STORAGE_CLASS, "persistentVolumeReclaimPolicy": "Retain",
                      "hostPath": {"path": f"/var/lib/ha-harness/volumes/{NS}-{zone}-{i}"},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": cluster.ZONE_LABEL, "operator": "In", "values": [zone]}]}]}}}}
            for zone in zones for i in range(2)]


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LocalEnvironment, Any]]:
    backup_restore.binary()  # built once, before the pods ask for it
    region = LocalRegion(config_for("dp"))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        cp = control_plane(env)
        druid.start(cp, cp.workdir / "etcd-druid")
        api = cluster.connect(seed.kube)
        namespace = render(ReferenceSpec("zone", env.zones, "gardener", namespace=NS))[0]
        cluster.apply(api, [namespace, PRIORITY_CLASS, *_volumes(env.zones)])
        # gardenlet's objects, with the etcds' JSON gateway on for the harness's client.
        cluster.apply(api, [as_new(o) for o in druid.with_gateway(gardenlet.etcd_objects(NS, "zone"))])
        yield env, api
    finally:
        workdir = env.config.state_dir / "dp"
        region.down()
        assert processes_mentioning(str(workdir)) == [], "no druid pod's container left"
        assert [p for n in env.nodes for p in netns.pod_pids(env.names.node_ns(n.name))] == [], "no pod sandbox left"
        assert namespaces("dp") == []


def _etcd(api: Any, name: str) -> dict[str, Any]:
    return k8s.CustomObjectsApi(api).get_namespaced_custom_object("druid.gardener.cloud", "v1alpha1", NS, "etcds", name)


def _statuses(api: Any) -> dict[str, Any]:
    return {name: _etcd(api, name).get("status", {}) for name in ETCDS}


def _condition(status: dict[str, Any], kind: str) -> str | None:
    return next((c["status"] for c in status.get("conditions") or [] if c["type"] == kind), None)


def _all_ready(seen: dict[str, Any]) -> bool:
    return all(s.get("ready") and s.get("readyReplicas") == 3 and _condition(s, "AllMembersReady") == "True"
               for s in seen.values())


def _await_all_ready(api: Any, timeout: float) -> dict[str, Any]:
    return wait_for(lambda: _statuses(api), _all_ready,
                    "etcd-druid to report etcd-main and etcd-events ready, every member ready", timeout, interval=2.0)


def test_druid_reports_both_etcds_ready_with_a_member_in_each_zone(running: tuple[LocalEnvironment, Any]) -> None:
    """druid's own status: Ready, 3 ready replicas, every member ready (each member's lease renewed
    by its etcd-backup-restore, which needs its etcd to answer); the pods one per zone."""
    env, api = running
    # A new cluster takes about 2.5 minutes here: each member's etcd-backup-restore first waits out
    # its checks for a running cluster to join (docs/guides/reference.md).
    seen = _await_all_ready(api, 360.0)
    assert _all_ready(seen)
    core = k8s.CoreV1Api(api)
    zones = {n.metadata.name: n.metadata.labels[cluster.ZONE_LABEL] for n in core.list_node().items}
    for name in ETCDS:
        pods = core.list_namespaced_pod(NS, label_selector=f"app.kubernetes.io/part-of={name}").items
        assert sorted(zones[p.spec.node_name] for p in pods) == sorted(env.zones), name
        # The members' leases, renewed by their etcd-backup-restore from what their member says:
        # <member id>:<cluster id>:<role>, one cluster, one leader.
        holders = [k8s.CoordinationV1Api(api).read_namespaced_lease(p.metadata.name, NS).spec.holder_identity
                   for p in pods]
        assert all(h and h.count(":") == 2 for h in holders), holders
        assert len({h.split(":")[1] for h in holders}) == 1, holders
        assert sorted(h.split(":")[2] for h in holders) == ["Leader", "Member", "Member"], holders


def _members_answer(etcd: Any, api: Any, timeout: float) -> None:
    """Every member answers the harness, they agree on a leader and are caught up; else where the
    pods are."""
    try:
        etcd.wait_healthy(timeout)
    except WaitTimeout as e:
        pods = [(p.metadata.name, p.metadata.uid[:8], p.spec.node_name, p.status.pod_ip)
                for p in k8s.CoreV1Api(api).list_namespaced_pod(NS).items]
        raise AssertionError(f"{e}; the pods: {pods}") from None


def test_a_zone_outage_leaves_etcd_main_quorate_and_druid_restarted_meanwhile_changes_nothing(
        running: tuple[LocalEnvironment, Any]) -> None:
    """The region's zone-outage fault, as the features inject it, on druid's pods, in the leader's
    zone: the harness reaches etcd-main's members as any shoot etcd's (ShootEtcd, with the client
    certificate from druid's Secrets); the two members outside the cut zone elect a leader and take
    a write; druid killed and started again meanwhile deletes and recreates nothing and keeps
    reporting the etcd Ready (quorate); after the heal the cut member has caught up and every
    member is ready again."""
    from harness.faults.runner import FaultRunner
    from harness.providers.local.seed.shoot import ShootEtcd
    from harness.timeline import Timeline

    env, api = running
    _await_all_ready(api, 360.0)
    etcd = ShootEtcd(env, LocalRegion(config_for("dp")).seed(env), NS, "etcd-main")
    _members_answer(etcd, api, 60.0)
    leader = etcd.leader()
    assert leader is not None
    etcd.client(leader).put("before-outage", "kept")
    core = k8s.CoreV1Api(api)
    uids = {p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(NS).items}
    cut = etcd.member(leader).zone
    rest = [m.name for m in etcd.members if m.zone != cut]
    runner = FaultRunner(env, Timeline())
    active = runner.inject("zone-outage", cut)
    try:
        new_leader = wait_for(lambda: etcd.leader({n: st for n, st in etcd.status().items() if n in rest}),
                              lambda got: got in rest, f"etcd-main's members outside {cut} agreeing on a leader "
                              "among them", 30.0)
        etcd.client(new_leader).put("during-outage", "written")
        assert etcd.client(rest[0]).get("before-outage") == b"kept"
        cp = control_plane(env)
        os.kill(cp.records[druid.NAME].pid, signal.SIGKILL)
        druid.start(cp, cp.workdir / "etcd-druid")
        for _ in range(10):  # druid reconciles what it finds on start: watch it do so
            status = _etcd(api, "etcd-main").get("status", {})
            assert _condition(status, "Ready") == "True", status.get("conditions")
            time.sleep(1.0)
        assert {p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(NS).items} == uids
    finally:
        runner.heal(active)
    _members_answer(etcd, api, 120.0)
    assert etcd.client(leader).get("during-outage", serializable=True) == b"written"  # the cut member caught up
    _await_all_ready(api, 120.0)
