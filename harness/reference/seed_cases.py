"""Seed 001's cases as workloads a webhook can decide: a namespace as gardenlet labels and
annotates it, a Deployment or StatefulSet of a component type, unmutated, and an autoscaler
where the case has one. `apply` hands them to a seed's API server, where Gardener's
high-availability-config webhook (harness.kube.resource_manager) mutates them; `deviations`
judges the result with the harness's reading of the conventions (harness.reference.conventions).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.kube.apiclient import ApiClient, ApiError
from harness.reference import conventions as conv

GARDEN_ROLE = "gardener.cloud/role"
APPLY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Case:
    name: str
    sentence: str  # what seed 001 says of it
    component_type: str
    tolerance: str | None  # the namespace's failure-tolerance-type annotation; None: absent (seed)
    zones: tuple[str, ...]  # the namespace's zones annotation
    replicas: int = 1  # as the component's own manifest has it
    kind: str = "Deployment"
    hpa: tuple[int, int] | None = None  # (minReplicas, maxReplicas) of an autoscaler
    annotations: dict[str, str] = field(default_factory=dict)  # on the workload
    labels: dict[str, str] = field(default_factory=dict)  # on the workload and its pods

    @property
    def namespace(self) -> str:
        return f"case-{self.name}"

    @property
    def conventions_tolerance(self) -> str | None:
        """The tolerance as harness.reference.conventions names it: gardenlet writes "" for a shoot without HA."""
        return {"": "none"}.get(self.tolerance, self.tolerance)


A, ABC = ("zone-a",), ("zone-a", "zone-b", "zone-c")
CASES: tuple[Case, ...] = (
    Case("seed-server-1z", "seed components run with 2 replicas, spread over nodes", "server", None, A),
    Case("seed-controller-3z", "seed components run with 2 replicas, spread over nodes and, with >= 2 zones, zones",
         "controller", None, ABC),
    Case("seed-host-spread", "host-spread: the hostname spread is enforced", "server", None, ABC,
         annotations={conv.ANNOTATION_HOST_SPREAD: "true"}),
    Case("shoot-none-server", "w/o HA: a server runs 2 replicas", "server", "", A),
    Case("shoot-none-controller", "w/o HA: a controller runs 1 replica", "controller", "", A, replicas=3),
    Case("shoot-node-server", "HA node: 2 replicas, spread over nodes, pinned to one zone", "server", "node", A),
    Case("shoot-node-controller", "HA node: 2 replicas, spread over nodes, pinned to one zone", "controller", "node", A),
    Case("shoot-zone-server", "HA zone: 2 replicas, spread over nodes and zones, pinned to three", "server", "zone", ABC),
    Case("shoot-zone-controller", "HA zone: 2 replicas, spread over nodes and zones, pinned to three", "controller",
         "zone", ABC),
    Case("shoot-zone-etcd", "etcd: 3 replicas, even when the failure tolerance is node only", "server", "zone", ABC,
         replicas=3, kind="StatefulSet", labels=dict(conv.ETCD_LABELS)),
    Case("shoot-node-etcd", "etcd: 3 replicas, even when the failure tolerance is node only", "server", "node", A,
         replicas=3, kind="StatefulSet", labels=dict(conv.ETCD_LABELS)),
    Case("shoot-zone-apiserver-hpa", "kube-apiserver is scaled horizontally: the counts are minimums; minDomains "
         "is the lower of the maximum replicas and the zones", "server", "zone", ABC, replicas=2, hpa=(2, 6)),
    Case("shoot-zone-replicas-override", "the replicas annotation overrides the conventional count", "server",
         "zone", ABC, annotations={conv.ANNOTATION_REPLICAS: "4"}),
)


def manifests(case: Case) -> list[dict[str, Any]]:
    """The namespace, the autoscaler (first: the webhook looks for it) and the workload, unmutated."""
    ns_annotations = {conv.ANNOTATION_ZONES: ",".join(case.zones)}
    if case.tolerance is not None:
        ns_annotations[conv.ANNOTATION_FAILURE_TOLERANCE_TYPE] = case.tolerance
    role = "shoot" if case.tolerance is not None else "system-component"
    out: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": case.namespace, "labels": {conv.LABEL_CONSIDER: "true", GARDEN_ROLE: role},
        "annotations": ns_annotations}}]
    if case.hpa is not None:
        out.append({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                    "metadata": {"name": "component", "namespace": case.namespace},
                    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": case.kind, "name": "component"},
                             "minReplicas": case.hpa[0], "maxReplicas": case.hpa[1],
                             "metrics": [{"type": "Resource", "resource": {
                                 "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}})
    pod_labels = {"app": "component", **case.labels}
    spec: dict[str, Any] = {
        "replicas": case.replicas, "selector": {"matchLabels": pod_labels},
        "template": {"metadata": {"labels": pod_labels},
                     "spec": {"containers": [{"name": "component", "image": "component"}]}}}
    if case.kind == "StatefulSet":
        spec["serviceName"] = "component"
    out.append({"apiVersion": "apps/v1", "kind": case.kind, "metadata": {
        "name": "component", "namespace": case.namespace,
        "labels": {conv.LABEL_TYPE: case.component_type, **case.labels}, "annotations": dict(case.annotations)},
        "spec": spec})
    return out


_PATHS = {"Namespace": "/api/v1/namespaces", "HorizontalPodAutoscaler": "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
          "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments", "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets"}


def apply(api: ApiClient, case: Case, timeout: float = APPLY_TIMEOUT_S) -> list[dict[str, Any]]:
    """Create the case's objects (a namespace left from an earlier run is replaced) and return
    them as the API server stored them, after its admission webhooks.

    A webhook that reads the namespace from its cache refuses (HTTP 500) until the cache has it;
    the create is retried then, for `timeout` seconds."""
    stored: list[dict[str, Any]] = []
    for obj in manifests(case):
        path = _PATHS[obj["kind"]].format(ns=case.namespace)
        deadline = time.monotonic() + timeout
        while True:
            try:
                stored.append(api.post_json(path, obj))
                break
            except ApiError as exc:
                if exc.status == 409 and obj["kind"] == "Namespace":
                    _delete_namespace(api, case.namespace, deadline)
                elif exc.status != 500 or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    return stored


def _delete_namespace(api: ApiClient, name: str, deadline: float) -> None:
    try:
        api.request("DELETE", f"/api/v1/namespaces/{name}")
    except ApiError as exc:
        if exc.status != 404:
            raise
    while time.monotonic() < deadline:
        try:
            api.get_json(f"/api/v1/namespaces/{name}")
        except ApiError as exc:
            if exc.status == 404:
                return
        time.sleep(0.2)


def deviations(case: Case, objects: list[dict[str, Any]]) -> list[str]:
    """How the workload among `objects` differs from the harness's reading of the conventions:
    what conventions.check finds, and spread constraints' matchLabelKeys, which it does not judge."""
    found = [str(d) for d in conv.check(objects, case.conventions_tolerance, case.zones)]
    workload = next(o for o in objects if o.get("kind") == case.kind)
    want, got = _label_keys(by_the_conventions(case)), _label_keys(workload)
    for key in sorted(want.keys() | got.keys()):
        if want.get(key, []) != got.get(key, []):
            found.append(f"{case.kind}/{workload['metadata']['name']}: spec.template.spec.topologySpreadConstraints"
                         f"[{key}].matchLabelKeys: expected {want.get(key) or 'nothing'}, found {got.get(key) or 'nothing'}")
    return found


def _label_keys(workload: dict[str, Any]) -> dict[str, list[str]]:
    pod = ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}
    return {c["topologyKey"]: list(c.get("matchLabelKeys") or []) for c in pod.get("topologySpreadConstraints") or []}


def placement(workload: dict[str, Any]) -> str:
    """A workload's replicas, spread constraints and zone pinning in one line, for tables."""
    spec = workload.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    parts = [f"replicas {spec.get('replicas', 1)}"]
    for c in pod.get("topologySpreadConstraints") or []:
        key = {conv.HOSTNAME_LABEL: "host", conv.ZONE_LABEL: "zone"}.get(c.get("topologyKey"), c.get("topologyKey"))
        extra = "".join(f" {k} {','.join(c[k])}" for k in ("matchLabelKeys",) if c.get(k))
        parts.append(f"{key} skew {c.get('maxSkew')} {c.get('whenUnsatisfiable')}"
                     + (f" min {c['minDomains']}" if "minDomains" in c else "") + extra)
    required = (((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(conv.REQUIRED) or {})
    pinned = [z for term in required.get("nodeSelectorTerms") or [] for z in conv.pinned_zones(term) or []]
    if pinned:
        parts.append(f"pinned {','.join(pinned)}")
    return "; ".join(parts)


def by_the_conventions(case: Case) -> dict[str, Any]:
    """The case's workload as the harness's reading of the conventions places it."""
    tolerance = case.conventions_tolerance
    etcd = conv.ETCD_LABELS.items() <= case.labels.items()
    replicas = conv.replica_count(case.component_type, tolerance, len(case.zones), etcd=etcd)
    if conv.ANNOTATION_REPLICAS in case.annotations:
        replicas = int(case.annotations[conv.ANNOTATION_REPLICAS])
    if case.hpa is not None:
        replicas = max(replicas, case.replicas, case.hpa[0])
    top = max(replicas, case.hpa[1]) if case.hpa else replicas
    pod: dict[str, Any] = {"topologySpreadConstraints": conv.topology_spread_constraints(
        case.component_type, tolerance, len(case.zones), replicas, None, top,
        case.annotations.get(conv.ANNOTATION_HOST_SPREAD) == "true")}
    if tolerance is not None:
        pod["affinity"] = conv.node_affinity(case.zones)
    return {"spec": {"replicas": replicas, "template": {"spec": pod}}}
