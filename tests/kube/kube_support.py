"""Helpers shared by the kube integration tests and benchmarks (real binaries, real API server)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from harness.kube import ControlPlane, ControlPlaneSpec, ensure_binaries, sources_from_env, start_control_plane
from harness.kube.controlplane import HOSTNAME_LABEL, ZONE_LABEL
from harness.wait import wait_for as harness_wait_for

T = TypeVar("T")


def api_client(kubeconfig: Path) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(kubeconfig))


def wait_for(description: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.5) -> T:
    """The harness's wait_for, for a probe whose truthy result is the answer."""
    return harness_wait_for(probe, bool, description, timeout, interval=interval)  # type: ignore[return-value]


def processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line contains text (our components all name the workdir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline[:160]}")
    return found


@contextmanager
def standalone_plane(workdir: Path) -> Iterator[ControlPlane]:
    """A standalone control plane (no region) in `workdir`, stopped after, leaving no process behind."""
    plane = start_control_plane(ControlPlaneSpec(), workdir, ensure_binaries(sources_from_env()))
    try:
        yield plane
    finally:
        plane.stop()
        assert processes_mentioning(str(workdir)) == []


def node_zones(core: k8s.CoreV1Api) -> dict[str, str]:
    return {n.metadata.name: n.metadata.labels[ZONE_LABEL] for n in core.list_node().items}


def pods(core: k8s.CoreV1Api, namespace: str, app: str) -> list[k8s.V1Pod]:
    return core.list_namespaced_pod(namespace, label_selector=f"app={app}").items


def live_running(items: list[k8s.V1Pod]) -> list[k8s.V1Pod]:
    return [p for p in items if p.metadata.deletion_timestamp is None and p.status.phase == "Running"]


def statefulset(name: str, replicas: int) -> k8s.V1StatefulSet:
    labels = {"app": name}
    affinity = k8s.V1Affinity(
        pod_anti_affinity=k8s.V1PodAntiAffinity(
            required_during_scheduling_ignored_during_execution=[
                k8s.V1PodAffinityTerm(label_selector=k8s.V1LabelSelector(match_labels=labels), topology_key=ZONE_LABEL)
            ]
        )
    )
    return k8s.V1StatefulSet(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1StatefulSetSpec(
            replicas=replicas,
            service_name=name,
            pod_management_policy="Parallel",
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(affinity=affinity, containers=[k8s.V1Container(name="app", image="fake-image")]),
            ),
        ),
    )


def spread_deployment(name: str, replicas: int) -> k8s.V1Deployment:
    labels = {"app": name}
    # Honor: nodes tainted unreachable leave the skew calculation, so a dead zone does not
    # block rescheduling into the live ones (with the default Ignore, skew would forbid it).
    constraints = [
        k8s.V1TopologySpreadConstraint(
            max_skew=1,
            topology_key=key,
            when_unsatisfiable="DoNotSchedule",
            label_selector=k8s.V1LabelSelector(match_labels=labels),
            node_taints_policy="Honor",
        )
        for key in (ZONE_LABEL, HOSTNAME_LABEL)
    ]
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name=name, labels=labels),
        spec=k8s.V1DeploymentSpec(
            replicas=replicas,
            selector=k8s.V1LabelSelector(match_labels=labels),
            template=k8s.V1PodTemplateSpec(
                metadata=k8s.V1ObjectMeta(labels=labels),
                spec=k8s.V1PodSpec(
                    topology_spread_constraints=constraints,
                    containers=[k8s.V1Container(name="app", image="fake-image")],
                ),
            ),
        ),
    )
