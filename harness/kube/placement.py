"""Where the scheduler put the pods of a namespace: per pod its node, zone, host and phase, or
why it is Pending; PodDisruptionBudget status. Observations only; judging is elsewhere."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from harness.kube import cluster
from harness.components import component_of

# What a pod-table cell says (GEP-20's tables, `the pods of the shoot control plane are`): RUNNING
# is phase Running, the pod Ready and its node Ready, i.e. serving; a Running pod short of that is
# RUNNING_NOT_READY. Other phases as Kubernetes names them.
RUNNING = "Running"
RUNNING_NOT_READY = "Running, not ready"
STATES = (RUNNING, RUNNING_NOT_READY, "Pending", "Terminating", "Failed", "Succeeded", "Unknown")


@dataclass(frozen=True)
class PodPlacement:
    name: str
    component: str | None
    phase: str  # Running, Pending, ... as `kubectl get pods` would say it
    ready: bool
    node: str | None
    zone: str | None
    host: str | None
    reason: str | None  # the scheduler's message while unschedulable
    deleting: bool
    labels: dict[str, str]
    ip: str | None = None
    node_ready: bool | None = None  # its node's Ready condition; None without a node (or node unknown)

    @property
    def serving(self) -> bool:
        """Running and Ready on a Ready node. A pod's Ready=True on a NotReady node is the last word
        of a kubelet that stopped reporting (the node controller has not marked it False yet)."""
        return self.phase == "Running" and self.ready and self.node_ready is not False

    @property
    def state(self) -> str:
        """The pod as a table cell says it (see RUNNING)."""
        if self.phase != "Running":
            return self.phase
        return RUNNING if self.serving else RUNNING_NOT_READY

    def domain(self, key: str) -> str | None:
        """The pod's topology domain: "zone", "node", "host", or any node label of its node."""
        return {"zone": self.zone, "node": self.node, "host": self.host}.get(key, self.labels.get(f"node:{key}"))


def observe(api: Any, namespace: str) -> list[PodPlacement]:
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    with cluster.api_errors(f"listing pods in {namespace}"):
        pods = core.list_namespaced_pod(namespace).items
        node_items = core.list_node().items
    nodes = {n.metadata.name: n.metadata.labels or {} for n in node_items}
    nodes_ready = {n.metadata.name: any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions if n.status else None) or [])
                   for n in node_items}
    out = []
    for p in sorted(pods, key=lambda p: p.metadata.name):
        node = p.spec.node_name
        node_labels = nodes.get(node or "", {})
        scheduled = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
        reason = scheduled.message if scheduled is not None and scheduled.status == "False" else None
        ready = any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        labels = dict(p.metadata.labels or {}) | {f"node:{k}": v for k, v in node_labels.items()}
        out.append(PodPlacement(
            name=p.metadata.name,
            component=component_of(p.metadata.labels or {}),
            phase="Terminating" if p.metadata.deletion_timestamp else (p.status.phase or "Unknown"),
            ready=ready,
            node=node,
            zone=node_labels.get(cluster.ZONE_LABEL),
            host=node_labels.get(cluster.HOST_LABEL),
            reason=reason,
            deleting=p.metadata.deletion_timestamp is not None,
            labels=labels,
            ip=p.status.pod_ip,
            node_ready=nodes_ready.get(node) if node else None,
        ))
    return out


def of(pods: Iterable[PodPlacement], component: str) -> list[PodPlacement]:
    return [p for p in pods if p.component == component and not p.deleting]


def per_domain(pods: Iterable[PodPlacement], key: str) -> Counter[str]:
    """Placed pods per topology domain (zone, node, host or a node label)."""
    return Counter(d for p in pods if p.node and (d := p.domain(key)) is not None)


def max_skew(counts: Counter[str], domains: Iterable[str]) -> int:
    """The largest difference in pods between two eligible domains (empty domains count as 0)."""
    values = [counts.get(d, 0) for d in domains]
    return max(values) - min(values) if values else 0


def pending(pods: Iterable[PodPlacement]) -> list[PodPlacement]:
    return [p for p in pods if p.node is None and not p.deleting]


def disruption_budgets(api: Any, namespace: str) -> dict[str, dict[str, int]]:
    """Per PodDisruptionBudget: current and desired healthy pods, and disruptions allowed now."""
    from kubernetes import client as k8s

    with cluster.api_errors(f"listing PodDisruptionBudgets in {namespace}"):
        items = k8s.PolicyV1Api(api).list_namespaced_pod_disruption_budget(namespace).items
    return {
        b.metadata.name: {
            "current_healthy": b.status.current_healthy or 0,
            "desired_healthy": b.status.desired_healthy or 0,
            "disruptions_allowed": b.status.disruptions_allowed or 0,
            "expected_pods": b.status.expected_pods or 0,
        }
        for b in items
        if b.status is not None
    }


def _ready(p: PodPlacement) -> str:
    if p.ready and p.node_ready is False:
        return "no (node NotReady)"  # Ready=True is stale: its kubelet stopped reporting
    return "yes" if p.ready else "no"


def nodes_table(views: Iterable[cluster.NodeView]) -> str:
    """`kubectl get nodes` with zones, as GEP-20's appendix shows them."""
    rows = [("NAME", "STATUS", "ZONE")]
    for v in sorted(views, key=lambda v: (v.zone or "", v.name)):
        rows.append((v.name, "Ready" if v.ready else "NotReady", v.zone or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def records(pods: Iterable[PodPlacement]) -> list[dict[str, Any]]:
    """The pods as a timeline's "placement" events keep them (the report's placement table)."""
    return [{"pod": p.name, "component": p.component, "zone": p.zone, "node": p.node, "phase": p.phase} for p in pods]


def table(pods: Iterable[PodPlacement]) -> str:
    """Pods by component, zone, node and phase, as a person reads `kubectl get pods -o wide`."""
    pods = list(pods)
    rows = [("COMPONENT", "POD", "ZONE", "NODE", "HOST", "PHASE", "READY")]
    for p in sorted(pods, key=lambda p: (p.component or "~", p.name)):
        rows.append((p.component or "-", p.name, p.zone or "-", p.node or "-", p.host or "-", p.phase, _ready(p)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    reasons = [f"  {p.name}: {p.reason}" for p in pods if p.reason]
    return "\n".join(lines + (["Pending because:", *reasons] if reasons else []))
