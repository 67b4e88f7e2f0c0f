"""etcd-druid runs the shoot's etcds on the local seed for real: gardenlet's own component code makes
the Etcd resources, etcd-druid (real) makes their StatefulSets, and the node agents run each pod in
a sandbox of its own with the real etcd-backup-restore, etcd-wrapper's stand-in and the real etcd,
configured as druid generated it. Judged by what druid itself reports, and by the members."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from kubernetes import client as k8s

from harness import netns
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
        cluster.apply(api, [as_new(o) for o in gardenlet.etcd_objects(NS, "zone")])
        yield env, api
    finally:
        workdir = env.config.state_dir / "dp"
        region.down()
        assert processes_mentioning(str(workdir)) == [], "no druid pod's container left"
        assert [p for n in env.nodes for p in netns.pod_pids(env.names.node_ns(n.name))] == [], "no pod sandbox left"
        assert namespaces("dp") == []


def _etcd(api: Any, name: str) -> dict[str, Any]:
    return k8s.CustomObjectsApi(api).get_namespaced_custom_object("druid.gardener.cloud", "v1alpha1", NS, "etcds", name)


def test_druid_reports_both_etcds_ready_with_a_member_in_each_zone(running: tuple[LocalEnvironment, Any]) -> None:
    """druid's own status: Ready, 3 ready replicas, every member ready (each member's lease renewed
    by its etcd-backup-restore, which needs its etcd to answer); the pods one per zone."""
    env, api = running

    def statuses() -> dict[str, Any]:
        return {name: _etcd(api, name).get("status", {}) for name in ETCDS}

    def all_ready(seen: dict[str, Any]) -> bool:
        return all(s.get("ready") and s.get("readyReplicas") == 3 and any(
            c["type"] == "AllMembersReady" and c["status"] == "True" for c in s.get("conditions") or [])
            for s in seen.values())

    # A new cluster takes about 2.5 minutes here: each member's etcd-backup-restore first waits out
    # its checks for a running cluster to join (docs/guides/reference.md).
    seen = wait_for(statuses, all_ready, "etcd-druid to report etcd-main and etcd-events ready, every member ready",
                    360.0, interval=2.0)
    assert all_ready(seen)
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
