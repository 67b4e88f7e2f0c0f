"""The embedded control plane with real binaries: placement, spreading and a zone failure.

Slow: the module starts one control plane (building the binaries first if the cache is empty).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("cryptography")
from kube_support import (
    api_client,
    live_running,
    node_zones,
    pods,
    spread_deployment,
    standalone_plane,
    statefulset,
    wait_for,
)
from kubernetes import client as k8s

from harness.kube import ControlPlane, ControlPlaneSpec
from harness.kube.controlplane import ZONE_LABEL

pytestmark = pytest.mark.kube

NS = "default"
STS = "zonal"
DEPLOY = "spread"
DEPLOY_REPLICAS = 6


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with standalone_plane(tmp_path_factory.mktemp("kube")) as plane:
        print(f"kubeconfig: {plane.kubeconfig}")
        yield plane
        plane.stop()  # idempotent: standalone_plane stops it again


@pytest.fixture(scope="module")
def api(cp: ControlPlane) -> k8s.ApiClient:
    return api_client(cp.kubeconfig)


@pytest.fixture(scope="module")
def core(api: k8s.ApiClient) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api)


@pytest.fixture(scope="module")
def apps(api: k8s.ApiClient) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(api)


@pytest.fixture(scope="module")
def zones_of(core: k8s.CoreV1Api) -> dict[str, str]:
    return node_zones(core)


@pytest.fixture(scope="module")
def workloads(cp: ControlPlane, core: k8s.CoreV1Api, apps: k8s.AppsV1Api) -> None:
    # Pods need the namespace's default ServiceAccount, created by the controller manager.
    wait_for("default ServiceAccount", lambda: core.list_namespaced_service_account(NS).items, 60)
    apps.create_namespaced_stateful_set(NS, statefulset(STS, 3))
    apps.create_namespaced_deployment(NS, spread_deployment(DEPLOY, DEPLOY_REPLICAS))
    wait_for("3 StatefulSet pods Running", lambda: len(live_running(pods(core, NS, STS))) == 3, 90)
    wait_for(f"{DEPLOY_REPLICAS} Deployment pods Running", lambda: len(live_running(pods(core, NS, DEPLOY))) == DEPLOY_REPLICAS, 90)


def test_kubeconfig_and_nodes(cp: ControlPlane, core: k8s.CoreV1Api) -> None:
    assert cp.kubeconfig.is_file()
    nodes = core.list_node().items
    assert sorted(n.metadata.name for n in nodes) == [n.name for n in ControlPlaneSpec().nodes]
    for node in nodes:
        assert node.metadata.labels[ZONE_LABEL] == node.metadata.name.rsplit("-", 1)[0]
        assert node.metadata.labels["kubernetes.io/hostname"] == node.metadata.name
        assert not node.spec.taints, "harness nodes must take pods without tolerations"
        ready = {c.type: c.status for c in node.status.conditions}["Ready"]
        assert ready == "True"
    state = cp.to_state()
    assert {p["name"] for p in state["processes"]} >= {"etcd", "kube-apiserver", "kwok-zone-a-1", "kwok-zone-c-2"}
    # Each kwok drops a connection to the API server that stopped answering as a kubelet does, not
    # after client-go's 45 s: read from the running process, whose client reads it at its start.
    kwok = next(p for p in state["processes"] if p["name"] == "kwok-zone-a-1")
    environ = dict(e.split("=", 1) for e in Path(f"/proc/{kwok['pid']}/environ").read_text().split("\0") if "=" in e)
    assert {k: environ.get(k) for k in cp.timings.kwok_env()} == cp.timings.kwok_env() == {
        "HTTP2_READ_IDLE_TIMEOUT_SECONDS": "2", "HTTP2_PING_TIMEOUT_SECONDS": "2"}


def test_statefulset_anti_affinity_one_pod_per_zone(
    workloads: None, core: k8s.CoreV1Api, apps: k8s.AppsV1Api, zones_of: dict[str, str]
) -> None:
    placed = {p.metadata.name: zones_of[p.spec.node_name] for p in live_running(pods(core, NS, STS))}
    assert sorted(placed.values()) == ["zone-a", "zone-b", "zone-c"], placed

    apps.patch_namespaced_stateful_set_scale(STS, NS, {"spec": {"replicas": 4}})
    try:
        def unschedulable() -> str | None:
            try:
                pod = core.read_namespaced_pod(f"{STS}-3", NS)
            except k8s.ApiException:
                return None
            for cond in pod.status.conditions or []:
                if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
                    return cond.message
            return None

        message = wait_for("4th StatefulSet pod reported unschedulable", unschedulable, 60)
        assert "anti-affinity" in message, message
        events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={STS}-3").items
        assert any(e.reason == "FailedScheduling" for e in events), [e.reason for e in events]
        assert core.read_namespaced_pod(f"{STS}-3", NS).spec.node_name is None
    finally:
        apps.patch_namespaced_stateful_set_scale(STS, NS, {"spec": {"replicas": 3}})
        wait_for("4th StatefulSet pod gone", lambda: len(pods(core, NS, STS)) == 3, 60)


def test_deployment_topology_spread(workloads: None, core: k8s.CoreV1Api, zones_of: dict[str, str]) -> None:
    running = live_running(pods(core, NS, DEPLOY))
    per_zone = Counter(zones_of[p.spec.node_name] for p in running)
    per_node = Counter(p.spec.node_name for p in running)
    assert per_zone == {"zone-a": 2, "zone-b": 2, "zone-c": 2}, per_zone
    assert sorted(per_node) == sorted(zones_of) and set(per_node.values()) == {1}, per_node


def test_zone_failure_evicts_deployment_but_not_statefulset(
    cp: ControlPlane, workloads: None, core: k8s.CoreV1Api, zones_of: dict[str, str]
) -> None:
    dead = "zone-a"
    dead_nodes = set(cp.nodes_in(dead))
    sts_pods = pods(core, NS, STS)
    sts_before = {p.metadata.name: p.spec.node_name for p in sts_pods}
    uid_before = {p.metadata.name: p.metadata.uid for p in sts_pods}
    sts_dead = [name for name, node in sts_before.items() if node in dead_nodes]
    assert len(sts_dead) == 1, sts_before

    started = time.monotonic()
    cp.silence_zone(dead)
    try:
        def unreachable() -> bool:
            for node in core.list_node().items:
                if node.metadata.name not in dead_nodes:
                    continue
                ready = {c.type: c.status for c in node.status.conditions}["Ready"]
                taints = {t.key for t in node.spec.taints or []}
                if ready == "True" or "node.kubernetes.io/unreachable" not in taints:
                    return False
            return True

        grace = cp.timings.node_monitor_grace_period_s
        wait_for(f"{dead} nodes NotReady and tainted unreachable", unreachable, grace + 30)

        def moved() -> bool:
            running = live_running(pods(core, NS, DEPLOY))
            return len(running) == DEPLOY_REPLICAS and all(p.spec.node_name not in dead_nodes for p in running)

        wait_for(f"{DEPLOY_REPLICAS} Deployment pods Running outside {dead}", moved, cp.timings.expected_eviction_s() + 60)
        print(f"failover: silence -> Deployment Running elsewhere in {time.monotonic() - started:.1f}s")
        running = live_running(pods(core, NS, DEPLOY))
        per_zone = Counter(zones_of[p.spec.node_name] for p in running)
        assert per_zone == {"zone-b": 3, "zone-c": 3}, per_zone

        # The zone's StatefulSet pod stays bound to its node (at most Terminating there):
        # no kubelet confirmed it gone, so the controller must not start a second copy.
        time.sleep(3)
        after = {p.metadata.name: p for p in pods(core, NS, STS)}
        assert after[sts_dead[0]].spec.node_name == sts_before[sts_dead[0]]
        assert after[sts_dead[0]].metadata.uid == uid_before[sts_dead[0]], "the pod was recreated"
        others = Counter(zones_of[p.spec.node_name] for p in after.values() if p.spec.node_name)
        assert others == {"zone-a": 1, "zone-b": 1, "zone-c": 1}, others
    finally:
        cp.restore_zone(dead)
    cp.wait_nodes_ready(sorted(dead_nodes), timeout=60)
    # With the zone back, its StatefulSet pod is settled there again (one per zone).
    wait_for(
        "StatefulSet back to one Running pod per zone",
        lambda: sorted(zones_of[p.spec.node_name] for p in live_running(pods(core, NS, STS))) == ["zone-a", "zone-b", "zone-c"],
        90,
    )


def test_state_round_trip(cp: ControlPlane) -> None:
    again = ControlPlane.from_state(cp.to_state())
    assert again.to_state() == cp.to_state()
    assert sorted(again.running()) == sorted(cp.running())
    assert Path(again.to_state()["kubeconfig"]) == cp.kubeconfig
