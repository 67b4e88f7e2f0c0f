"""A client vantage point in a zone of a seed: a small relay pod pinned to the zone.

A harness outside the seed reaches the pod through a port-forward and asks it (HTTP CONNECT) to
open each connection, so the connection starts in the pod's zone and shares that zone's fate on
the network, as a client standing there would. The relay is harness.kube.egress_proxy: on a real
cluster a stock Python image runs it from a ConfigMap; on the local seed the node agent runs it
as a process (AGENT_LABEL "relay"), like the reference's etcd and kube-apiserver pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.kube import cluster
from harness.kube.controlplane import AGENT_LABEL, ZONE_LABEL
from harness.topology import KubeAccess
from harness.wait import wait_for

RELAY_PORT = 3128
IMAGE = "docker.io/library/python:3.12-alpine"
LABEL = ("ha-harness/vantage", "relay")
CONFIGMAP = "harness-vantage-relay"


def pod_name(zone: str) -> str:
    return f"harness-vantage-{zone}"


def manifests(namespace: str, zone: str) -> list[dict[str, Any]]:
    """The relay's ConfigMap (its source) and its pod, pinned to `zone`."""
    source = (Path(__file__).parent / "egress_proxy.py").read_text()
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIGMAP, "namespace": namespace},
                 "data": {"egress_proxy.py": source}}
    pod = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": pod_name(zone), "namespace": namespace,
                     "labels": {LABEL[0]: LABEL[1], AGENT_LABEL: "relay", ZONE_LABEL: zone}},
        "spec": {
            "nodeSelector": {ZONE_LABEL: zone},
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "relay", "image": IMAGE,
                "command": ["python", "/relay/egress_proxy.py", f"--listen=0.0.0.0:{RELAY_PORT}"],
                "ports": [{"containerPort": RELAY_PORT}],
                "readinessProbe": {"tcpSocket": {"port": RELAY_PORT}, "periodSeconds": 2},
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                "volumeMounts": [{"name": "relay", "mountPath": "/relay"}],
            }],
            "volumes": [{"name": "relay", "configMap": {"name": CONFIGMAP}}],
        },
    }
    return [configmap, pod]


def ensure(access: KubeAccess, namespace: str, zone: str, timeout: float) -> str:
    """The zone's relay pod in `namespace`, created if missing; returns its name once it is ready."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(cluster.connect(access))
    configmap, pod = manifests(namespace, zone)
    with cluster.api_errors(f"creating the vantage point of zone {zone} in {namespace}"):
        for create, body in ((core.create_namespaced_config_map, configmap), (core.create_namespaced_pod, pod)):
            try:
                create(namespace, body)
            except k8s.ApiException as e:
                if e.status != 409:
                    raise

    def state() -> str:
        p = core.read_namespaced_pod(pod_name(zone), namespace)
        ready = any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))
        return "ready" if p.status.phase == "Running" and ready else f"{p.status.phase}, not ready"

    wait_for(state, lambda s: s == "ready", f"the vantage point of zone {zone} ({namespace}/{pod_name(zone)}) ready",
             timeout, interval=0.2)
    return pod_name(zone)
