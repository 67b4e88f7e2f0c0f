"""A Service of type LoadBalancer with echo pods behind it (harness.kube.echo), for KEP-3458.

- one echo pod per zone (a zone topology spread constraint on the real scheduler);
- `trafficDistribution: PreferSameZone`: kube-proxy sends what a node receives to the pod of the
  node's own zone, so a connection through a zone's node stays in that zone;
- externalTrafficPolicy Cluster (the default): every node takes traffic, and the cloud controller
  registers every node;
- the ELB's health check tightened by the cloud controller's annotations (TCP on the node port
  every 5 s, 2 failures out, 2 successes in) so that an outage's nodes leave rotation in about
  10 s instead of the default minute.

On a real cluster a stock Python image runs the echo from a ConfigMap; on the local seed the node
agent runs it as a process (AGENT_LABEL "echo").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.kube.controlplane import AGENT_LABEL, ZONE_LABEL

IMAGE = "docker.io/library/python:3.12-alpine"
PORT = 8080
AWS_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-"
HEALTH_CHECK = {"healthcheck-interval": "5", "healthcheck-timeout": "2", "healthcheck-unhealthy-threshold": "2",
                "healthcheck-healthy-threshold": "2"}


def manifests(namespace: str, name: str, zones: int, port: int = 80) -> list[dict[str, Any]]:
    """The echo's ConfigMap, its Deployment (one pod per zone) and the Service."""
    labels = {"app": name}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-echo", "namespace": namespace},
                 "data": {"echo.py": (Path(__file__).parent / "echo.py").read_text()}}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": zones, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": {**labels, AGENT_LABEL: "echo"}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE_LABEL,
                                               "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": labels}}],
                "containers": [{
                    "name": "echo", "image": IMAGE,
                    "command": ["python", "/echo/echo.py", f"--listen=0.0.0.0:{PORT}"],
                    "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    "ports": [{"containerPort": PORT}],
                    "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 2},
                    "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                    "volumeMounts": [{"name": "echo", "mountPath": "/echo"}],
                }],
                "volumes": [{"name": "echo", "configMap": {"name": f"{name}-echo"}}],
            }}}}
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {AWS_ANNOTATION + k: v for k, v in HEALTH_CHECK.items()}},
        "spec": {"type": "LoadBalancer", "selector": labels, "trafficDistribution": "PreferSameZone",
                 "ports": [{"port": port, "targetPort": PORT}]},
    }
    return [configmap, deployment, service]
