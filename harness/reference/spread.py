"""GEP-20's topology spread constraints on a Deployment of its own, for the findings its appendix
gives against them: the zone and hostname constraints (max skew 1, DoNotSchedule), the zone's
skew raised to 2 as Gardener later did for Kubernetes issue 109364, and the constraints scoped to
one revision by `matchLabelKeys: [pod-template-hash]` (Kubernetes 1.27+, the remedy of issue 98215).
kwok runs the pods; the real kube-scheduler places them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from harness.kube import cluster, placement
from harness.kube.controlplane import HOSTNAME_LABEL, ZONE_LABEL
from harness.kube.placement import PodPlacement
from harness.reference.deploy import held_by_scheduler

REVISION_LABEL = "pod-template-hash"  # set by the Deployment controller on each ReplicaSet's pods


@dataclass(frozen=True)
class SpreadSpec:
    name: str
    namespace: str
    replicas: int
    zone_skew: int = 1
    host_skew: int = 1
    per_revision: bool = False  # matchLabelKeys: [pod-template-hash]

    @property
    def selector(self) -> dict[str, str]:
        return {"app": self.name}


def _constraint(spec: SpreadSpec, key: str, skew: int) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": spec.selector},
            **({"matchLabelKeys": [REVISION_LABEL]} if spec.per_revision else {})}


def manifests(spec: SpreadSpec) -> list[dict[str, Any]]:
    """The namespace and the Deployment (the rolling update's defaults: 25 % surge, 25 % unavailable)."""
    pod = {
        "metadata": {"labels": spec.selector},
        "spec": {
            "topologySpreadConstraints": [_constraint(spec, ZONE_LABEL, spec.zone_skew),
                                          _constraint(spec, HOSTNAME_LABEL, spec.host_skew)],
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": spec.namespace}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": spec.name, "namespace": spec.namespace},
         "spec": {"replicas": spec.replicas, "selector": {"matchLabels": spec.selector}, "template": pod}},
    ]


def _every_pod(api: Any, spec: SpreadSpec) -> list[PodPlacement]:
    return [p for p in placement.observe(api, spec.namespace)
            if all(p.labels.get(k) == v for k, v in spec.selector.items())]


def pods(api: Any, spec: SpreadSpec) -> list[PodPlacement]:
    """The Deployment's pods that are not being deleted."""
    return [p for p in _every_pod(api, spec) if not p.deleting]


def unsettled(api: Any, spec: SpreadSpec, replicas: int) -> str | None:
    """None once the Deployment has `replicas` pods, each Running and ready or held Pending by the
    scheduler, and none of an older revision is left (not even terminating); else what is not."""
    every = _every_pod(api, spec)
    if len(every) != replicas:
        return f"{len(every)} pods of {replicas}: {placement.table(every)}"
    if len({p.labels.get(REVISION_LABEL) for p in every}) > 1:
        return "pods of two revisions"
    waiting = [f"{p.name} {p.phase}" for p in every if not (p.phase == "Running" and p.ready) and not held_by_scheduler(p)]
    return "; ".join(waiting) or None


def domains(api: Any) -> dict[str, list[str]]:
    """Every zone and node of the seed: the domains the constraints count (empty ones as 0)."""
    nodes = cluster.node_views(api)
    return {"zone": sorted({n.zone for n in nodes if n.zone}), "node": sorted(n.name for n in nodes)}


def skews(placed: list[PodPlacement], every: dict[str, list[str]]) -> dict[str, int]:
    """The largest difference in pods between two zones, and between two nodes."""
    return {key: placement.max_skew(placement.per_domain(placed, key), every[key]) for key in ("zone", "node")}


def per_zone(placed: list[PodPlacement]) -> Counter[str]:
    return placement.per_domain(placed, "zone")
