"""podgc against the embedded control plane: pods evicted from a silenced zone stay
Terminating (no kubelet confirms) until podgc force-deletes them, and not before the period.

Slow: the module starts one control plane (building the binaries first if the cache is empty).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("cryptography")
from kube_support import api_client, standalone_plane, wait_for
from kubernetes import client as k8s

from harness.kube import ControlPlane
from harness.kube.controlplane import ZONE_LABEL

pytestmark = pytest.mark.kube

NS = "default"
DEAD = "zone-a"
AFTER = 5.0
INTERVAL = 0.5
GRACE = 2  # terminationGracePeriodSeconds of the test pods
READY_NODE = "zone-b-fake"  # a Ready node no kwok manages: nothing deletes pods on it


@pytest.fixture(scope="module")
def cp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with standalone_plane(tmp_path_factory.mktemp("kube-podgc")) as plane:
        yield plane


@pytest.fixture(scope="module")
def core(cp: ControlPlane) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api_client(cp.kubeconfig))


@pytest.fixture(scope="module")
def apps(cp: ControlPlane) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(api_client(cp.kubeconfig))


def pod_spec(**kwargs: object) -> k8s.V1PodSpec:
    return k8s.V1PodSpec(termination_grace_period_seconds=GRACE,
                         containers=[k8s.V1Container(name="app", image="fake-image")], **kwargs)


def bare_pod(name: str, node: str) -> k8s.V1Pod:
    return k8s.V1Pod(metadata=k8s.V1ObjectMeta(name=name, labels={"app": "podgc"}), spec=pod_spec(node_name=node))


def zonal_statefulset(name: str, zone: str) -> k8s.V1StatefulSet:
    """One replica that may only run in `zone`, as an etcd member bound to its zonal volume."""
    labels = {"app": name}
    affinity = k8s.V1Affinity(node_affinity=k8s.V1NodeAffinity(
        required_during_scheduling_ignored_during_execution=k8s.V1NodeSelector(node_selector_terms=[
            k8s.V1NodeSelectorTerm(match_expressions=[
                k8s.V1NodeSelectorRequirement(key=ZONE_LABEL, operator="In", values=[zone])])])))
    return k8s.V1StatefulSet(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1StatefulSetSpec(
            replicas=1, service_name=name, selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(metadata=k8s.V1ObjectMeta(labels=labels), spec=pod_spec(affinity=affinity)),
        ),
    )


def _micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextmanager
def kept_ready(api: k8s.ApiClient, name: str) -> Iterator[None]:
    """A Node that stays Ready (its Lease renewed every second, as a kubelet would) but on
    which no kubelet or kwok acts: a pod deleted there stays Terminating with its grace period."""
    core, leases = k8s.CoreV1Api(api), k8s.CoordinationV1Api(api)
    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name=name, labels={ZONE_LABEL: "zone-b"})))
    now = datetime.now(timezone.utc)
    leases.create_namespaced_lease("kube-node-lease", k8s.V1Lease(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1LeaseSpec(holder_identity=name, lease_duration_seconds=8, renew_time=now)))
    core.patch_node_status(name, {"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kept Ready by the test",
        "lastHeartbeatTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "lastTransitionTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }]}})
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(1.0):
            try:
                leases.patch_namespaced_lease(name, "kube-node-lease", {"spec": {"renewTime": _micro(datetime.now(timezone.utc))}})
            except Exception as e:  # keep trying; the test sees the node turn NotReady otherwise
                print(f"renewing {name}'s lease: {e}")

    thread = threading.Thread(target=renew, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
        core.delete_node(name)


def node_ready(core: k8s.CoreV1Api, name: str) -> bool:
    node = core.read_node(name)
    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
    return ready and not node.spec.taints


def by_uid(core: k8s.CoreV1Api) -> dict[str, k8s.V1Pod]:
    return {p.metadata.uid: p for p in core.list_namespaced_pod(NS).items}


def running(pod: k8s.V1Pod) -> bool:
    return pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None


def unschedulable(pod: k8s.V1Pod) -> bool:
    return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
               for c in pod.status.conditions or [])


def test_pods_stuck_on_a_silenced_zone_are_force_deleted_after_the_period(
    cp: ControlPlane, core: k8s.CoreV1Api, apps: k8s.AppsV1Api, tmp_path: Path
) -> None:
    with kept_ready(core.api_client, READY_NODE):
        run_scenario(cp, core, apps, tmp_path)


def run_scenario(cp: ControlPlane, core: k8s.CoreV1Api, apps: k8s.AppsV1Api, tmp_path: Path) -> None:
    dead_nodes = cp.nodes_in(DEAD)
    wait_for("default ServiceAccount", lambda: core.list_namespaced_service_account(NS).items, 60)
    for i, node in enumerate(dead_nodes):
        core.create_namespaced_pod(NS, bare_pod(f"stuck-{i}", node))
    apps.create_namespaced_stateful_set(NS, zonal_statefulset("zonal", DEAD))
    wait_for("test pods Running", lambda: len([p for p in by_uid(core).values() if running(p)]) == len(dead_nodes) + 1, 60)
    sts_uid = core.read_namespaced_pod("zonal-0", NS).metadata.uid
    # Terminating on a Ready node: its kubelet (absent here) is the one to confirm it gone.
    wait_for(f"{READY_NODE} Ready", lambda: node_ready(core, READY_NODE), 30)
    held_uid = core.create_namespaced_pod(NS, bare_pod("held", READY_NODE)).metadata.uid
    core.delete_namespaced_pod("held", NS)

    log = tmp_path / "podgc.log"
    # Running before the zone goes silent: what is judged is when it deletes, not how long a
    # Python process takes to start on a busy machine (a start after the pods were due once
    # made one 8.2 s "late").
    with open(log, "wb") as out:
        podgc = subprocess.Popen(
            [sys.executable, "-m", "harness.kube.podgc", "--kubeconfig", str(cp.kubeconfig),
             "--after", str(AFTER), "--interval", str(INTERVAL)],
            stdout=out, stderr=subprocess.STDOUT, cwd=Path(__file__).parents[2],
        )
    try:
        wait_for("podgc started", lambda: "podgc: started" in log.read_text() or podgc.poll() is not None, 60)
        assert podgc.poll() is None, log.read_text()
        cp.silence_zone(DEAD)
        silenced = time.monotonic()

        def evicted() -> dict[str, k8s.V1Pod] | None:
            pods = {uid: p for uid, p in by_uid(core).items() if p.spec.node_name in dead_nodes}
            ok = len(pods) == len(dead_nodes) + 1 and all(p.metadata.deletion_timestamp for p in pods.values())
            return pods if ok else None

        stuck = wait_for(f"{DEAD}'s pods evicted (Terminating)", evicted, cp.timings.expected_eviction_s() + 60)
        assert sts_uid in stuck
        print(f"\nsilence -> pods Terminating: {time.monotonic() - silenced:.1f}s")
        time.sleep(GRACE + 1)
        # Past their grace period and still there: no kubelet confirms, and podgc waits its period.
        assert set(stuck) <= set(by_uid(core)), "pods went away before they were due"

        due = {uid: p.metadata.deletion_timestamp + timedelta(seconds=AFTER) for uid, p in stuck.items()}
        gone: dict[str, datetime] = {}
        seen_before_due: set[str] = set()
        deadline = time.monotonic() + AFTER + GRACE + 30
        while len(gone) < len(stuck) and time.monotonic() < deadline:
            now = datetime.now(timezone.utc)
            present = by_uid(core)
            for uid in stuck:
                if uid not in present:
                    gone.setdefault(uid, now)
                elif now < due[uid]:
                    seen_before_due.add(uid)
            assert podgc.poll() is None, log.read_text()
            time.sleep(0.2)
        assert set(gone) == set(stuck), f"still there: {set(stuck) - set(gone)}\n{log.read_text()}"
        for uid, at in gone.items():
            name = stuck[uid].metadata.name
            late = (at - due[uid]).total_seconds()
            print(f"{name}: deletionTimestamp {stuck[uid].metadata.deletion_timestamp:%H:%M:%S}, "
                  f"gone {late:+.2f}s after deletionTimestamp + {AFTER:g}s")
            # Observed gone no earlier than due (same clock), and within a pass or two after.
            assert at >= due[uid], f"{name} deleted {-late:.2f}s before its period ended"
            assert late <= 2 * INTERVAL + 2.5, f"{name} deleted only {late:.2f}s after its period ended"
        # Each was watched still there before its time, with podgc running.
        assert seen_before_due == set(stuck), "a pod was never seen Terminating before it was due"

        # GEP-20: the StatefulSet's replacement is created and stays Pending (its zone is gone).
        replacement = wait_for("a new zonal-0", lambda: next(
            (p for p in by_uid(core).values() if p.metadata.name == "zonal-0" and p.metadata.uid != sts_uid), None), 30)
        wait_for("the replacement reported Unschedulable",
                 lambda: unschedulable(core.read_namespaced_pod("zonal-0", NS)), 30)
        assert core.read_namespaced_pod("zonal-0", NS).spec.node_name is None
        assert replacement.metadata.uid != sts_uid

        # The pod Terminating on a Ready node is left alone, long past its own period.
        held = core.read_namespaced_pod("held", NS)
        assert held.metadata.uid == held_uid and held.metadata.deletion_timestamp is not None
        assert held.metadata.deletion_grace_period_seconds == GRACE
        assert node_ready(core, READY_NODE)
        assert datetime.now(timezone.utc) > held.metadata.deletion_timestamp + timedelta(seconds=AFTER + 2)
        time.sleep(2 * INTERVAL)
        lines = [line for line in log.read_text().splitlines() if "force-deleted" in line]
        assert sorted(line.split("force-deleted pod ")[1].split(" ")[0] for line in lines) == sorted(
            f"{NS}/{p.metadata.name}" for p in stuck.values()), lines
        assert not any(held_uid in line for line in lines)

        podgc.send_signal(signal.SIGTERM)
        assert podgc.wait(10) == 0, log.read_text()
        assert "stopped after 3 force deletion(s)" in log.read_text()
        print(log.read_text())
    finally:
        if podgc.poll() is None:
            podgc.kill()
            podgc.wait(5)
        cp.restore_zone(DEAD)
        try:
            core.delete_namespaced_pod("held", NS, grace_period_seconds=0)
        except k8s.ApiException:
            pass
