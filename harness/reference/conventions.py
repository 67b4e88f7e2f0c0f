"""The HA conventions of seed 001 as pure functions, one place for each rule, and a checker.

Where seed 001 is silent, Gardener's high-availability-config webhook decides, read at
gardener/gardener b312835d (2026-08-21): `pkg/resourcemanager/webhook/highavailabilityconfig/
handler.go` and `pkg/utils/kubernetes/highavailability.go` (`GetReplicaCount`,
`GetTopologySpreadConstraints`), and checked case by case against the tables of its
`highavailability_test.go` (tests/unit/test_conventions_gardener.py). Tolerance None: the
namespace has no failure-tolerance annotation (a seed or system component); "none": a shoot
without HA (annotation "").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ConfigError

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
_KEY = "high-availability-config.resources.gardener.cloud/"
ANNOTATION_ZONES = _KEY + "zones"  # on the namespace
ANNOTATION_FAILURE_TOLERANCE_TYPE = _KEY + "failure-tolerance-type"  # on the namespace
ANNOTATION_ZONE_PINNING = _KEY + "zone-pinning"  # on the namespace
ANNOTATION_HOST_SPREAD = _KEY + "host-spread"  # on the workload
ANNOTATION_REPLICAS = _KEY + "replicas"  # on the workload: overrides the conventional count
LABEL_TYPE = _KEY + "type"  # on the workload: server | controller
LABEL_CONSIDER = _KEY + "consider"  # on the namespace: the webhook acts there
LABEL_SKIP = _KEY + "skip"  # on the workload: the webhook leaves it alone

TOLERANCES = ("none", "node", "zone")
TYPES = ("server", "controller")
WORKLOAD_KINDS = ("Deployment", "StatefulSet")
ETCD_LABELS = {"app": "etcd-statefulset"}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
# Fewer zones cannot keep etcd's quorum through a zone outage (GEP-20).
ZONE_TOLERANCE_MIN_ZONES = 3


def _tolerance(tolerance: str | None) -> str | None:
    if tolerance is not None and tolerance not in TOLERANCES:
        raise ConfigError(f"unknown failure tolerance {tolerance!r}; accepted: {', '.join(TOLERANCES)}, "
                          "or none given for a seed or system component")
    return tolerance


def _validate(component_type: str, tolerance: str | None, zone_count: int) -> None:
    if component_type not in TYPES:
        raise ConfigError(f"unknown component type {component_type!r}; accepted: {', '.join(TYPES)}")
    _tolerance(tolerance)
    if zone_count < 1:
        raise ConfigError(f"zone count must be at least 1, got {zone_count}")


def _zones(zones: Sequence[str]) -> tuple[str, ...]:
    names = tuple(zones)
    if not names:
        raise ConfigError("no zones given; at least one zone name is needed")
    if any(not isinstance(z, str) or not z.strip() for z in names):
        raise ConfigError(f"empty zone name in {list(names)}; zone names must be non-empty")
    if len(set(names)) < len(names):
        raise ConfigError(f"a zone is given more than once in {list(names)}; zones must be distinct")
    return names


def choose_zones(tolerance: str | None, seed_zones: Sequence[str]) -> tuple[str, ...]:
    """The zones the control plane is pinned to, deterministically (the gardenlet picks at random).

    `zone`: GEP-20's "General Recommendation": an odd number n of zones is used whole, an even
    n gives n-1 (the first ones), fewer than three is refused. (Gardener's gardenlet has since
    settled on exactly three, seed 001; the two agree up to four zones.) `none`/`node`: the first
    zone only, so no traffic crosses zones. None (seed/system component): all zones, as the
    gardenlet annotates seed namespaces.
    """
    zones, tolerance = _zones(seed_zones), _tolerance(tolerance)
    if tolerance is None:
        return zones
    if tolerance != "zone":
        return zones[:1]
    if len(zones) < ZONE_TOLERANCE_MIN_ZONES:
        raise ConfigError(
            f"failure tolerance 'zone' needs a seed with at least 3 zones, got {len(zones)} ({', '.join(zones)}): "
            "GEP-20 recommends an odd number of zones, min. 3, since etcd on 2 zones loses quorum with the "
            "zone holding 2 members; use tolerance 'node' (or 'none') here")
    return zones if len(zones) % 2 else zones[:-1]


def replica_count(component_type: str, tolerance: str | None, zone_count: int, *, etcd: bool = False) -> int:
    """The conventional replica count (the webhook's `GetReplicaCount`, seed 001's tables).

    Controllers of a shoot without HA run 1, everything else 2, independent of the zone count
    (seed 001's "< 3"/">= 3 zones" columns agree; for None, which seed 001's shoot table does not
    cover, the webhook's 2 for both types is followed). etcd needs a quorum: 3 whenever it is
    highly available (seed 001: "even when the failure tolerance is node only"), 1 without.
    """
    _validate(component_type, tolerance, zone_count)
    if etcd:
        return 1 if tolerance == "none" else 3
    return 1 if tolerance == "none" and component_type == "controller" else 2


def topology_spread_constraints(
    component_type: str,
    tolerance: str | None,
    zone_count: int,
    replicas: int,
    match_labels: Mapping[str, str] | None = None,
    max_replicas: int | None = None,
    host_spread: bool = False,
    *,
    multiple_nodes: bool = True,
) -> list[dict[str, Any]]:
    """The spread constraints for `replicas` pods (the webhook's `GetTopologySpreadConstraints`).

    minDomains follows `max_replicas` (an autoscaler's maximum, as the webhook does) so pods added
    later still spread. `match_labels` None leaves labelSelector out. `multiple_nodes` False: the
    cluster has a single node, where an enforced hostname spread could never place a second pod,
    so the webhook keeps it best effort (ScheduleAnyway, no minDomains) even with a tolerance or
    host-spread (gardener#14595). The type is validated only.
    """
    _validate(component_type, tolerance, zone_count)
    if replicas < 0:
        raise ConfigError(f"replicas must be 0 or more, got {replicas}")
    top = replicas if max_replicas is None else max_replicas
    if top < replicas:
        raise ConfigError(f"max replicas ({top}) must be at least the replicas ({replicas})")
    if replicas <= 1:  # nothing to spread
        return []
    selector = {} if match_labels is None else {"labelSelector": {"matchLabels": dict(match_labels)}}
    host: dict[str, Any] = {"topologyKey": HOSTNAME_LABEL, "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}
    # Best effort only without a tolerance or host-spread, and on a single node whatever is asked.
    if (host_spread or tolerance in ("node", "zone")) and multiple_nodes:
        host |= {"whenUnsatisfiable": "DoNotSchedule", "minDomains": min(3, top)}
    constraints = [host | selector]
    # `none`/`node` shoots are pinned to one zone; seed/system components spread over all of theirs.
    # maxSkew stays 1: the webhook's old maxSkew 2 for maxReplicas >= 2*zones went in 145d6c7a (2024).
    if zone_count > 1 and tolerance in (None, "zone"):
        constraints.append({"topologyKey": ZONE_LABEL, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule",
                            "minDomains": min(zone_count, top), **selector})
    return constraints


def node_affinity(zones: Sequence[str]) -> dict[str, Any] | None:
    """The `affinity` part pinning pods to the zones of the namespace annotation (None: no zones).

    Keeps pods, and so their traffic, inside the chosen zones (seed 001, "Node Affinity").
    """
    if not zones:
        return None
    expression = {"key": ZONE_LABEL, "operator": "In", "values": list(_zones(zones))}
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}}}


def explain(component_type: str, tolerance: str | None, zone_count: int, replicas: int | None = None,
            max_replicas: int | None = None, host_spread: bool = False, *,
            multiple_nodes: bool = True) -> dict[str, Any]:
    """Replicas (given or conventional) and spread constraints; labelSelector is left out.

    Computes for any zone count: refusing `zone` on fewer than three is choose_zones' job.
    """
    count = replica_count(component_type, tolerance, zone_count) if replicas is None else replicas
    return {"replicas": count, "topologySpreadConstraints": topology_spread_constraints(
        component_type, tolerance, zone_count, count, None, max_replicas, host_spread,
        multiple_nodes=multiple_nodes)}


@dataclass(frozen=True)
class Deviation:
    """One way a workload differs from the conventions; `found` None means the field is absent."""

    kind: str
    name: str
    field: str
    expected: object
    found: object

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}: {self.field}: expected {_show(self.expected)}, found {_show(self.found)}"


def _show(value: object) -> str:
    return "nothing" if value is None else value if isinstance(value, str) else json.dumps(value)


def flatten(objects: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Every object, with the items of `List` kinds in their place and empty documents dropped."""
    for obj in objects:
        if obj is None:
            continue
        if not isinstance(obj, dict):
            raise ConfigError(f"a manifest must be a mapping, got {type(obj).__name__}: {obj!r:.60}")
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            yield from flatten(obj["items"])
        else:
            yield obj


def workloads(objects: Iterable[Any]) -> list[dict[str, Any]]:
    """The Deployments and StatefulSets the webhook would act on (not those labelled skip)."""
    return [o for o in flatten(objects) if o.get("kind") in WORKLOAD_KINDS
            and LABEL_SKIP not in ((o.get("metadata") or {}).get("labels") or {})]


def _selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a non-empty label selector selects pods with `labels` (an empty one selects too much)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    tests = {"In": lambda k, v: k in labels and labels[k] in v, "NotIn": lambda k, v: labels.get(k) not in v,
             "Exists": lambda k, v: k in labels, "DoesNotExist": lambda k, v: k not in labels}
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items()) and all(
        e.get("operator") in tests and tests[e["operator"]](e.get("key"), e.get("values") or [])
        for e in selector.get("matchExpressions") or [])


def pinned_zones(term: Mapping[str, Any]) -> list[str] | None:
    return next((sorted(e.get("values") or []) for e in term.get("matchExpressions") or []
                 if e.get("key") == ZONE_LABEL and e.get("operator") == "In"), None)


def check(objects: Iterable[Any], tolerance: str | None, zones: Sequence[str]) -> list[Deviation]:
    """Every deviation of the Deployments and StatefulSets among `objects` from the conventions.

    `zones` are those of the namespace annotation. HorizontalPodAutoscalers among the objects
    make their target's count a minimum and lend their maxReplicas to minDomains, as in the webhook.
    Manifests do not tell the node count: they are judged as for a cluster of more than one node.
    """
    tolerance, zones = _tolerance(tolerance), _zones(zones)
    items = list(flatten(objects))
    hpas: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for o in items:
        if o.get("kind") == "HorizontalPodAutoscaler" and (ref := (o.get("spec") or {}).get("scaleTargetRef")):
            hpas[(_namespace(o), ref.get("kind"), ref.get("name"))] = o["spec"]
    deviations: list[Deviation] = []
    for obj in workloads(items):
        hpa = hpas.get((_namespace(obj), obj["kind"], (obj.get("metadata") or {}).get("name")))
        deviations += _check_workload(obj, tolerance, zones, hpa)
    return deviations


def _namespace(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("namespace")


def _check_workload(obj: dict[str, Any], tolerance: str | None, zones: tuple[str, ...],
                    hpa: Mapping[str, Any] | None) -> list[Deviation]:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    template = spec.get("template") or {}
    pod_labels, pod = (template.get("metadata") or {}).get("labels") or {}, template.get("spec") or {}
    out: list[Deviation] = []

    def deviate(field: str, expected: object, found: object) -> None:
        out.append(Deviation(obj["kind"], meta.get("name", "<unnamed>"), field, expected, found))

    etcd = _selects({"matchLabels": ETCD_LABELS}, labels) or _selects({"matchLabels": ETCD_LABELS}, pod_labels)
    ctype = labels.get(LABEL_TYPE)
    if etcd and ctype not in (None, "server"):  # etcd is a server whether labelled or not
        deviate(f"metadata.labels[{LABEL_TYPE}]", "server", ctype)
    elif not etcd and ctype not in TYPES:
        deviate(f"metadata.labels[{LABEL_TYPE}]", " or ".join(TYPES), ctype)
    ctype = "server" if etcd else ctype if ctype in TYPES else None

    replicas = found = spec.get("replicas", 1)  # the API server defaults a missing count to 1
    if not isinstance(found, int) or isinstance(found, bool):
        raise ConfigError(f"{obj['kind']}/{meta.get('name')}: spec.replicas must be a whole number, got {found!r}")
    if ctype is not None and found != 0:  # 0: hibernated; the webhook leaves it alone
        want = replica_count(ctype, tolerance, len(zones), etcd=etcd)
        if (override := annotations.get(ANNOTATION_REPLICAS)) is not None:
            if str(override).isdigit():
                want = int(override)
            else:
                deviate(f"metadata.annotations[{ANNOTATION_REPLICAS}]", "a whole number", override)
        # The webhook sets the count exactly unless an HPA scales the workload; then it is a
        # minimum. Seed 001 names horizontally scaled servers (kube-apiserver, istio, coredns)
        # whose counts are minimums, and manifests often come without their autoscaler: so a
        # server's count is a minimum too. Controllers (leader-elected) and etcd are exact.
        if hpa is not None or (ctype == "server" and not etcd):
            if found < want:
                deviate("spec.replicas", f"at least {want}", found)
            replicas = max(found, want)
        else:
            if found != want:
                deviate("spec.replicas", want, found)
            replicas = want

    if tolerance is not None:  # the webhook pins whenever the tolerance annotation is present
        required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(REQUIRED) or {}
        field = f"spec.template.spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms"
        for i, term in enumerate(required.get("nodeSelectorTerms") or [{}]):  # ORed: every term must pin
            if (pinned := pinned_zones(term)) != sorted(zones):
                deviate(f"{field}[{i}] {ZONE_LABEL} In", sorted(zones), pinned)

    # The spread rules depend on replicas, not on the type, so they are judged without a type label too.
    top = max(replicas, int(hpa.get("maxReplicas", 0))) if hpa is not None else replicas
    host_spread = str(annotations.get(ANNOTATION_HOST_SPREAD, "")).lower() in ("true", "t", "1")
    want_all = {c["topologyKey"]: c for c in topology_spread_constraints(
        ctype or "server", tolerance, len(zones), replicas, None, top, host_spread)}
    found_all = {c.get("topologyKey"): c for c in pod.get("topologySpreadConstraints") or []}
    for key in (HOSTNAME_LABEL, ZONE_LABEL):
        field = f"spec.template.spec.topologySpreadConstraints[{key}]"
        want, got = want_all.get(key), found_all.get(key)
        if want is None or got is None:
            if (want is None) != (got is None):
                deviate(field, want, got)
            continue
        for name in ("maxSkew", "whenUnsatisfiable", "minDomains"):
            if got.get(name) != want.get(name):
                deviate(f"{field}.{name}", want.get(name), got.get(name))
        if not _selects(got.get("labelSelector"), pod_labels):
            deviate(f"{field}.labelSelector", f"a selector of the pod labels {json.dumps(pod_labels)}",
                    got.get("labelSelector"))
    return out
