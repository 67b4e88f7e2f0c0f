"""The reference HA shoot control plane: what render() writes for each tolerance, form and seed.

Expected values are written out from GEP-20 (seed 000: etcd "Scheduling" case #1 / case #2, "Kube
API Server" and "Gardener Resource Manager" scheduling, "Zone affinity", the etcd peer policy)
and seed 001 (replica tables, spread constraints, node affinity, PodDisruptionBudgets, the
namespace label and annotations); they are not computed by calling the renderer. Also: the
volume pool and the settled() judgement of deploy.py, and the placement probe's pure parts.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
import yaml

from harness.errors import ConfigError
from harness.kube import placement
from harness.kube.placement import PodPlacement
from harness.reference import conventions as conv
from harness.reference.conventions import Deviation
from harness.reference.deploy import POOL_LABEL, _holding, settled, volume_pool
from harness.components import COMPONENTS
from harness.reference.render import ReferenceSpec, render, replicas, to_yaml

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
PREFIX = "high-availability-config.resources.gardener.cloud/"
TYPE = PREFIX + "type"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"

SEED = ("z1", "z2", "z3", "z4", "z5")
FORMS = ("gep20", "conventions")
# (tolerance, seed zones): `zone` needs at least three.
VALID = [(t, n) for t in ("none", "node") for n in (1, 2, 3, 4, 5)] + [("zone", 3), ("zone", 4), ("zone", 5)]
CHOSEN = {
    **{(t, n): ("z1",) for t in ("none", "node") for n in (1, 2, 3, 4, 5)},
    ("zone", 3): ("z1", "z2", "z3"),
    ("zone", 4): ("z1", "z2", "z3"),  # GEP-20: an even number n of zones uses n-1
    ("zone", 5): ("z1", "z2", "z3", "z4", "z5"),
}

# What selects each component's pods (GEP-20's match labels; etcd adds etcd-druid's `instance`).
SELECTORS = {
    "etcd-main": {"app": "etcd-statefulset", "instance": "etcd-main"},
    "etcd-events": {"app": "etcd-statefulset", "instance": "etcd-events"},
    "kube-apiserver": {"app": "kubernetes", "role": "apiserver"},
    "gardener-resource-manager": {"app": "gardener-resource-manager", "gardener.cloud/role": "controlplane"},
}
# Labels the seeds give the pods (a subset of what the pods carry).
POD_LABELS = {
    "etcd-main": {"app": "etcd-statefulset", "instance": "etcd-main", "gardener.cloud/role": "controlplane"},
    "etcd-events": {"app": "etcd-statefulset", "instance": "etcd-events", "gardener.cloud/role": "controlplane"},
    "kube-apiserver": {"app": "kubernetes", "role": "apiserver", "gardener.cloud/role": "controlplane"},
    "gardener-resource-manager": {"app": "gardener-resource-manager", "gardener.cloud/role": "controlplane"},
}
ETCDS = ("etcd-main", "etcd-events")
WORKLOADS = {"etcd-main": "StatefulSet", "etcd-events": "StatefulSet",
             "kube-apiserver": "Deployment", "gardener-resource-manager": "Deployment"}


def spec_of(tolerance: str, n: int, form: str = "gep20", **kw: Any) -> ReferenceSpec:
    return ReferenceSpec(tolerance, SEED[:n], form, **kw)


def objects_by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    out = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    assert len(out) == len(objects), "two objects of the same kind and name"
    return out


def workload(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return objects_by_key(objects)[(WORKLOADS[name], name)]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def selects(match_labels: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


def pinned(zones: tuple[str, ...]) -> dict[str, Any]:
    """seed 001 "Node Affinity", written out."""
    return {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": list(zones)}]}]}}}


def term(name: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": SELECTORS[name]}, "topologyKey": key}


cases = pytest.mark.parametrize(("tolerance", "n"), VALID)
forms = pytest.mark.parametrize("form", FORMS)


# ---------------------------------------------------------------- choosing the zones


@forms
@cases
def test_zones_chosen(tolerance: str, n: int, form: str) -> None:
    assert spec_of(tolerance, n, form).zones == CHOSEN[(tolerance, n)]


@forms
@pytest.mark.parametrize("n", [1, 2])
def test_zone_tolerance_refuses_fewer_than_three_zones_and_says_why(n: int, form: str) -> None:
    with pytest.raises(ConfigError) as e:
        spec_of("zone", n, form)
    message = str(e.value)
    assert "at least 3 zones" in message and f"got {n}" in message
    assert "quorum" in message  # why: etcd on two zones loses quorum with the zone holding two members
    assert "'node'" in message  # and what to use instead


@forms
def test_gep20s_two_zone_cluster_uses_both_zones_only_when_asked(form: str) -> None:
    assert ReferenceSpec("zone", SEED[:2], form, two_zones=True).zones == SEED[:2]
    for tolerance, zones in (("node", SEED[:2]), ("zone", SEED[:3])):
        with pytest.raises(ConfigError, match="two-zone cluster is failure tolerance 'zone' on a seed of exactly two"):
            ReferenceSpec(tolerance, zones, form, two_zones=True)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("rack", SEED[:3]), r"unknown failure tolerance 'rack'; accepted: none, node, zone"),
        (("zone", SEED[:3], "kustomize"), r"unknown form 'kustomize'; accepted: gep20, conventions, gardener"),
        (("node", SEED[:3], "Conventions"), r"unknown form 'Conventions'; accepted: gep20, conventions, gardener"),
    ],
)
def test_unknown_tolerance_or_form_lists_what_is_accepted(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ReferenceSpec(*args)


@pytest.mark.parametrize("tolerance", ["none", "node", "zone"])
@pytest.mark.parametrize("zones", [("z1", "z1"), ("z1", "z2", "z1"), ("z1", "z2", "z3", "z2")])
def test_duplicate_zones_are_errors(tolerance: str, zones: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError, match="more than once"):
        ReferenceSpec(tolerance, zones)


@pytest.mark.parametrize("tolerance", ["none", "node", "zone"])
def test_no_zones_is_an_error(tolerance: str) -> None:
    with pytest.raises(ConfigError, match="no zones"):
        ReferenceSpec(tolerance, ())


# ---------------------------------------------------------------- the namespace


@forms
@cases
def test_namespace_object(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form, namespace="shoot--p--s"))
    ns = objects[0]  # first, so that it exists before what goes into it
    assert (ns["apiVersion"], ns["kind"], ns["metadata"]["name"]) == ("v1", "Namespace", "shoot--p--s")
    assert ns["metadata"]["labels"] == {PREFIX + "consider": "true"}
    assert ns["metadata"]["annotations"] == {
        PREFIX + "zones": ",".join(CHOSEN[(tolerance, n)]),
        PREFIX + "failure-tolerance-type": "" if tolerance == "none" else tolerance,
    }
    assert all(o["metadata"]["namespace"] == "shoot--p--s" for o in objects[1:])


def test_namespace_annotations_spelled_out() -> None:
    ns = render(spec_of("zone", 5))[0]["metadata"]["annotations"]
    assert ns["high-availability-config.resources.gardener.cloud/zones"] == "z1,z2,z3,z4,z5"
    assert ns["high-availability-config.resources.gardener.cloud/failure-tolerance-type"] == "zone"


# ---------------------------------------------------------------- the inventory

INVENTORY = {
    ("Namespace", "shoot--harness--ref"),
    ("StatefulSet", "etcd-main"), ("StatefulSet", "etcd-events"),
    ("Deployment", "kube-apiserver"), ("Deployment", "gardener-resource-manager"),
    ("PodDisruptionBudget", "etcd-main"), ("PodDisruptionBudget", "etcd-events"),
    ("PodDisruptionBudget", "kube-apiserver"), ("PodDisruptionBudget", "gardener-resource-manager"),
    ("Service", "etcd-main-client"), ("Service", "etcd-main-peer"),
    ("Service", "etcd-events-client"), ("Service", "etcd-events-peer"),
    ("Service", "kube-apiserver"), ("Service", "gardener-resource-manager"),
    ("NetworkPolicy", "allow-etcd-peer"),
}
API_VERSIONS = {"Namespace": "v1", "Service": "v1", "StatefulSet": "apps/v1", "Deployment": "apps/v1",
                "PodDisruptionBudget": "policy/v1", "NetworkPolicy": "networking.k8s.io/v1"}


@forms
@cases
def test_inventory(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form))
    assert set(objects_by_key(objects)) == INVENTORY
    assert all(o["apiVersion"] == API_VERSIONS[o["kind"]] for o in objects)


@forms
@cases
def test_etcd_statefulsets(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form, storage_class="fast-zonal"))
    for name in ETCDS:
        sts = workload(objects, name)["spec"]
        assert sts["replicas"] == (1 if tolerance == "none" else 3)
        assert sts["podManagementPolicy"] == "Parallel"
        assert sts["serviceName"] == f"{name}-peer"  # the headless peer Service
        [claim] = sts["volumeClaimTemplates"]
        assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
        assert claim["spec"]["storageClassName"] == "fast-zonal"
        assert claim["spec"]["resources"]["requests"]["storage"]
        mounts = [m["name"] for c in sts["template"]["spec"]["containers"] for m in c.get("volumeMounts", [])]
        assert claim["metadata"]["name"] in mounts


def test_no_storage_class_leaves_the_claims_to_the_default_class() -> None:
    objects = render(spec_of("zone", 3, storage_class=None))
    for name in ETCDS:
        [claim] = workload(objects, name)["spec"]["volumeClaimTemplates"]
        assert "storageClassName" not in claim["spec"]


@forms
@cases
def test_workloads_carry_the_type_label_and_the_seeds_labels(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form))
    for name, kind in WORKLOADS.items():
        obj = workload(objects, name)
        assert obj["kind"] == kind
        assert obj["metadata"]["labels"][TYPE] == "server"
        pod_labels = obj["spec"]["template"]["metadata"]["labels"]
        assert POD_LABELS[name].items() <= pod_labels.items()
        assert obj["spec"]["selector"] == {"matchLabels": SELECTORS[name]}
        assert selects(obj["spec"]["selector"]["matchLabels"], pod_labels)


def test_each_selector_selects_only_its_own_pods() -> None:
    objects = render(spec_of("zone", 3))
    pods = {name: workload(objects, name)["spec"]["template"]["metadata"]["labels"] for name in WORKLOADS}
    for name in WORKLOADS:
        selector = workload(objects, name)["spec"]["selector"]["matchLabels"]
        assert {other for other, labels in pods.items() if selects(selector, labels)} == {name}


@forms
@cases
def test_disruption_budgets(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form))
    budgets = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    assert len(budgets) == 4
    for pdb in budgets:
        name = pdb["metadata"]["name"]
        policy = {} if form == "gep20" and name in ETCDS else {"unhealthyPodEvictionPolicy": "AlwaysAllow"}
        assert pdb["spec"] == {"maxUnavailable": 1, **policy, "selector": {"matchLabels": SELECTORS[name]}}
        pods = {other: workload(objects, other)["spec"]["template"]["metadata"]["labels"] for other in WORKLOADS}
        assert {other for other, labels in pods.items() if selects(SELECTORS[name], labels)} == {name}


def test_services() -> None:
    objects = objects_by_key(render(spec_of("zone", 3)))
    for name in ETCDS:
        client, peer = objects[("Service", f"{name}-client")]["spec"], objects[("Service", f"{name}-peer")]["spec"]
        assert client["selector"] == peer["selector"] == SELECTORS[name]
        assert [p["port"] for p in client["ports"]] == [2379]
        assert client.get("clusterIP") != "None"
        assert [p["port"] for p in peer["ports"]] == [2380]
        assert peer["clusterIP"] == "None"  # headless: one DNS name per member
        assert peer["publishNotReadyAddresses"] is True  # members find each other before they are ready
    for name in ("kube-apiserver", "gardener-resource-manager"):
        svc = objects[("Service", name)]["spec"]
        assert svc["selector"] == SELECTORS[name]
        assert svc["ports"] and svc.get("clusterIP") != "None"
        container_ports = {p["containerPort"] for c in pod_spec(objects[("Deployment", name)])["containers"]
                           for p in c["ports"]}
        assert {p["port"] for p in svc["ports"]} <= container_ports


def test_etcd_peer_network_policy() -> None:
    policy = objects_by_key(render(spec_of("zone", 3)))[("NetworkPolicy", "allow-etcd-peer")]["spec"]
    # GEP-20's "Etcd Peer Network Policy", selectors as written there.
    etcd = {"matchLabels": {"app": "etcd-statefulset", "gardener.cloud/role": "controlplane"}}
    assert policy["podSelector"] == etcd
    assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
    [ingress], [egress] = policy["ingress"], policy["egress"]
    assert ingress["from"] == [{"podSelector": etcd}] and egress["to"] == [{"podSelector": etcd}]
    for rule in (ingress, egress):
        assert sorted((p["protocol"], p["port"]) for p in rule["ports"]) == [("TCP", 2379), ("TCP", 2380), ("TCP", 8080)]


# ---------------------------------------------------------------- the gep20 form


def gep20_expected(name: str, tolerance: str, zones: tuple[str, ...]) -> dict[str, Any]:
    """GEP-20's scheduling of one component, written out (affinity plus nodeSelector)."""
    if name in ETCDS:
        if tolerance == "zone":  # case #2: no more than one member per zone
            affinity: dict[str, Any] = {"podAntiAffinity": {REQUIRED: [term(name, ZONE)]}}
        else:  # case #1: one zone, no more than one member per node
            affinity = {"podAffinity": {REQUIRED: [term(name, ZONE)]},
                        "podAntiAffinity": {REQUIRED: [term(name, HOST)]}}
    elif tolerance == "zone":  # ZoneSpread true
        affinity = {"podAntiAffinity": {REQUIRED: [term(name, HOST)],
                                        PREFERRED: [{"weight": 100, "podAffinityTerm": term(name, ZONE)}]}}
    else:  # ZoneSpread false
        affinity = {"podAntiAffinity": {REQUIRED: [term(name, HOST)]}}
    if len(zones) == 1:  # "Zone affinity": a single zone is pinned with a nodeSelector
        return {"affinity": affinity, "nodeSelector": {ZONE: zones[0]}}
    return {"affinity": affinity | pinned(zones)}


GEP20_SPELLED_OUT = [  # a few cases in full, so gep20_expected itself is checked against the text
    ("etcd-main", "zone", 3, {"affinity": {
        "podAntiAffinity": {REQUIRED: [{"labelSelector": {"matchLabels": {"app": "etcd-statefulset", "instance": "etcd-main"}},
                                        "topologyKey": "topology.kubernetes.io/zone"}]},
        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1", "z2", "z3"]}]}]}}}}),
    ("etcd-events", "node", 3, {
        "nodeSelector": {"topology.kubernetes.io/zone": "z1"},
        "affinity": {
            "podAffinity": {REQUIRED: [{"labelSelector": {"matchLabels": {"app": "etcd-statefulset", "instance": "etcd-events"}},
                                        "topologyKey": "topology.kubernetes.io/zone"}]},
            "podAntiAffinity": {REQUIRED: [{"labelSelector": {"matchLabels": {"app": "etcd-statefulset", "instance": "etcd-events"}},
                                            "topologyKey": "kubernetes.io/hostname"}]}}}),
    ("kube-apiserver", "zone", 5, {"affinity": {
        "podAntiAffinity": {
            REQUIRED: [{"labelSelector": {"matchLabels": {"app": "kubernetes", "role": "apiserver"}},
                        "topologyKey": "kubernetes.io/hostname"}],
            PREFERRED: [{"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": "kubernetes", "role": "apiserver"}},
                "topologyKey": "topology.kubernetes.io/zone"}}]},
        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1", "z2", "z3", "z4", "z5"]}]}]}}}}),
    ("gardener-resource-manager", "none", 2, {
        "nodeSelector": {"topology.kubernetes.io/zone": "z1"},
        "affinity": {"podAntiAffinity": {REQUIRED: [
            {"labelSelector": {"matchLabels": {"app": "gardener-resource-manager", "gardener.cloud/role": "controlplane"}},
             "topologyKey": "kubernetes.io/hostname"}]}}}),
]


@pytest.mark.parametrize(("name", "tolerance", "n", "expected"), GEP20_SPELLED_OUT)
def test_gep20_scheduling_spelled_out(name: str, tolerance: str, n: int, expected: dict[str, Any]) -> None:
    assert gep20_expected(name, tolerance, CHOSEN[(tolerance, n)]) == expected
    pod = pod_spec(workload(render(spec_of(tolerance, n)), name))
    assert {k: pod[k] for k in ("affinity", "nodeSelector") if k in pod} == expected


@cases
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_gep20_scheduling(tolerance: str, n: int, name: str) -> None:
    pod = pod_spec(workload(render(spec_of(tolerance, n)), name))
    assert {k: pod[k] for k in ("affinity", "nodeSelector") if k in pod} == gep20_expected(
        name, tolerance, CHOSEN[(tolerance, n)])
    assert "topologySpreadConstraints" not in pod  # GEP-20 uses affinities, not spread constraints


@cases
def test_gep20_replicas(tolerance: str, n: int) -> None:
    objects = render(spec_of(tolerance, n))
    for name in ETCDS:
        assert workload(objects, name)["spec"]["replicas"] == (1 if tolerance == "none" else 3)
    if tolerance == "zone":  # MinReplicas = len(zones): one kube-apiserver per zone
        assert workload(objects, "kube-apiserver")["spec"]["replicas"] == len(CHOSEN[(tolerance, n)])


@cases
def test_gep20_etcd_main_rules_do_not_select_etcd_events(tolerance: str, n: int) -> None:
    """With `app` alone, etcd-main and etcd-events would repel each other (3 zones for one cluster)."""
    objects = render(spec_of(tolerance, n))
    events_pod = workload(objects, "etcd-events")["spec"]["template"]["metadata"]["labels"]
    main_pod = workload(objects, "etcd-main")["spec"]["template"]["metadata"]["labels"]
    affinity = pod_spec(workload(objects, "etcd-main"))["affinity"]
    terms = [t for kind in ("podAffinity", "podAntiAffinity") for t in affinity.get(kind, {}).get(REQUIRED, [])]
    assert terms
    for t in terms:
        assert not selects(t["labelSelector"]["matchLabels"], events_pod)
        assert selects(t["labelSelector"]["matchLabels"], main_pod)  # the etcd's own members


# ---------------------------------------------------------------- the conventions form


def conventions_replicas(name: str, tolerance: str, zones: tuple[str, ...]) -> int:
    if name in ETCDS:
        return 1 if tolerance == "none" else 3  # seed 001: 3 "even when the failure tolerance is node only"
    if name == "kube-apiserver" and tolerance == "zone":
        return len(zones)  # a minimum of 2; one per zone
    return 2  # servers: 2 w/o HA, w/ node, w/ zone


def test_conventions_replicas_spelled_out() -> None:
    assert conventions_replicas("kube-apiserver", "zone", ("a", "b", "c")) == 3
    assert conventions_replicas("kube-apiserver", "node", ("a",)) == 2
    assert conventions_replicas("gardener-resource-manager", "none", ("a",)) == 2
    assert conventions_replicas("etcd-main", "none", ("a",)) == 1


@cases
def test_conventions_scheduling(tolerance: str, n: int) -> None:
    zones = CHOSEN[(tolerance, n)]
    objects = render(spec_of(tolerance, n, "conventions"))
    for name in WORKLOADS:
        obj = workload(objects, name)
        pod, replicas = pod_spec(obj), obj["spec"]["replicas"]
        assert replicas == conventions_replicas(name, tolerance, zones)
        assert pod["affinity"] == pinned(zones)  # no podAffinity / podAntiAffinity
        assert "nodeSelector" not in pod
        assert pod.get("topologySpreadConstraints", []) == conv.topology_spread_constraints(
            "server", tolerance, len(zones), replicas, SELECTORS[name])


def strict_host(min_domains: int, name: str) -> dict[str, Any]:
    return {"topologyKey": HOST, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": min_domains,
            "labelSelector": {"matchLabels": SELECTORS[name]}}


def zone_spread(min_domains: int, name: str) -> dict[str, Any]:
    return {"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": min_domains,
            "labelSelector": {"matchLabels": SELECTORS[name]}}


def best_effort_host(name: str) -> dict[str, Any]:
    return {"topologyKey": HOST, "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": SELECTORS[name]}}


SPREAD = [  # (tolerance, seed zones, component, constraints): seed 001 and the webhook, written out
    ("zone", 3, "etcd-main", [strict_host(3, "etcd-main"), zone_spread(3, "etcd-main")]),
    ("zone", 3, "etcd-events", [strict_host(3, "etcd-events"), zone_spread(3, "etcd-events")]),
    ("zone", 3, "kube-apiserver", [strict_host(3, "kube-apiserver"), zone_spread(3, "kube-apiserver")]),
    ("zone", 3, "gardener-resource-manager",
     [strict_host(2, "gardener-resource-manager"), zone_spread(2, "gardener-resource-manager")]),
    ("zone", 4, "etcd-main", [strict_host(3, "etcd-main"), zone_spread(3, "etcd-main")]),
    ("zone", 5, "etcd-main", [strict_host(3, "etcd-main"), zone_spread(3, "etcd-main")]),
    ("zone", 5, "kube-apiserver", [strict_host(3, "kube-apiserver"), zone_spread(5, "kube-apiserver")]),
    ("zone", 5, "gardener-resource-manager",
     [strict_host(2, "gardener-resource-manager"), zone_spread(2, "gardener-resource-manager")]),
    ("node", 3, "etcd-main", [strict_host(3, "etcd-main")]),  # pinned to one zone: no zone constraint
    ("node", 3, "kube-apiserver", [strict_host(2, "kube-apiserver")]),
    ("node", 1, "gardener-resource-manager", [strict_host(2, "gardener-resource-manager")]),
    ("none", 3, "etcd-main", []),  # one member: nothing to spread
    ("none", 3, "kube-apiserver", [best_effort_host("kube-apiserver")]),
    ("none", 5, "gardener-resource-manager", [best_effort_host("gardener-resource-manager")]),
]


@pytest.mark.parametrize(("tolerance", "n", "name", "expected"), SPREAD)
def test_conventions_spread_constraints_spelled_out(tolerance: str, n: int, name: str,
                                                    expected: list[dict[str, Any]]) -> None:
    pod = pod_spec(workload(render(spec_of(tolerance, n, "conventions")), name))
    assert pod.get("topologySpreadConstraints", []) == expected


# ---------------------------------------------------------------- the checker on the rendering


@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("tolerance", ["none", "node", "zone"])
def test_conventions_form_passes_the_checker(tolerance: str, n: int) -> None:
    spec = spec_of(tolerance, n, "conventions")
    assert conv.check(render(spec), spec.tolerance, spec.zones) == []


@pytest.mark.parametrize("n", [3, 4, 5])
def test_checker_reports_missing_spread_constraints_of_the_gep20_form(n: int) -> None:
    spec = spec_of("zone", n)
    deviations = conv.check(render(spec), spec.tolerance, spec.zones)
    field = "spec.template.spec.topologySpreadConstraints[topology.kubernetes.io/zone]"
    assert Deviation("StatefulSet", "etcd-main", field,
                     {"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": 3},
                     None) in deviations
    # Every workload misses both of its spread constraints, and nothing else is wrong with them.
    assert Counter(d.name for d in deviations) == {name: 2 for name in WORKLOADS}
    assert all(d.found is None and d.field.startswith("spec.template.spec.topologySpreadConstraints[")
               for d in deviations)


# ---------------------------------------------------------------- YAML


@forms
@cases
def test_yaml_round_trips(tolerance: str, n: int, form: str) -> None:
    objects = render(spec_of(tolerance, n, form))
    before = copy.deepcopy(objects)
    assert list(yaml.safe_load_all(to_yaml(objects))) == objects
    assert objects == before  # dumping leaves the objects alone


def test_yaml_keeps_string_values_strings() -> None:
    loaded = list(yaml.safe_load_all(to_yaml(render(spec_of("none", 1)))))
    ns = loaded[0]["metadata"]
    assert ns["labels"][PREFIX + "consider"] == "true"
    assert ns["annotations"][PREFIX + "failure-tolerance-type"] == ""


# ---------------------------------------------------------------- the volume pool


@forms
@cases
def test_volume_pool(tolerance: str, n: int, form: str) -> None:
    spec = spec_of(tolerance, n, form, namespace="shoot--p--s", storage_class="fast-zonal")
    zones = CHOSEN[(tolerance, n)]
    members = 2 * (1 if tolerance == "none" else 3)  # etcd-main plus etcd-events
    volumes = volume_pool(spec)
    per_zone: Counter[str] = Counter()
    for pv in volumes:
        assert (pv["apiVersion"], pv["kind"]) == ("v1", "PersistentVolume")
        assert "namespace" not in pv["metadata"]  # cluster-scoped
        assert pv["metadata"]["labels"] == {POOL_LABEL: "shoot--p--s"}
        body = pv["spec"]
        assert body["storageClassName"] == "fast-zonal"
        assert body["persistentVolumeReclaimPolicy"] == "Retain"
        assert body["accessModes"] == ["ReadWriteOnce"]
        [term_] = body["nodeAffinity"]["required"]["nodeSelectorTerms"]
        [expression] = term_["matchExpressions"]
        assert expression["key"] == ZONE and expression["operator"] == "In"
        [zone] = expression["values"]
        per_zone[zone] += 1
    assert set(per_zone) == set(zones)  # only in the chosen zones, and in each of them
    assert all(count >= members for count in per_zone.values())  # a zone could get every member
    assert len({pv["metadata"]["name"] for pv in volumes}) == len(volumes)


def test_volume_pool_capacity_fits_the_claims() -> None:
    spec = spec_of("zone", 3)
    claim = workload(render(spec), "etcd-main")["spec"]["volumeClaimTemplates"][0]["spec"]
    for pv in volume_pool(spec):
        assert pv["spec"]["capacity"]["storage"] == claim["resources"]["requests"]["storage"]


# ---------------------------------------------------------------- settled


def pod(name: str, component: str | None, phase: str = "Running", ready: bool = True, node: str | None = "n1",
        zone: str | None = "z1", host: str | None = "h1", reason: str | None = None, deleting: bool = False,
        labels: dict[str, str] | None = None) -> PodPlacement:
    return PodPlacement(name, component, phase, ready, node, zone, host, reason, deleting, labels or {})


UNSCHEDULABLE = "0/6 nodes are available: 3 node(s) had volume node affinity conflict."


def full_set(replicas: dict[str, int]) -> list[PodPlacement]:
    return [pod(f"{name}-{i}", name, node=f"n{i}") for name, count in replicas.items() for i in range(count)]


NODE_CONVENTIONS = {"etcd-main": 3, "etcd-events": 3, "kube-apiserver": 2, "gardener-resource-manager": 2}


def replace(pods: list[PodPlacement], name: str, new: PodPlacement | None) -> list[PodPlacement]:
    return [new if p.name == name else p for p in pods if p.name != name or new is not None]


def test_settled_when_every_replica_runs() -> None:
    assert settled(spec_of("node", 3, "conventions"), full_set(NODE_CONVENTIONS)) is None


def test_settled_when_a_replica_is_held_pending_by_the_scheduler() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "etcd-main-2",
                   pod("etcd-main-2", "etcd-main", "Pending", False, node=None, zone=None, host=None, reason=UNSCHEDULABLE))
    assert settled(spec_of("node", 3, "conventions"), pods) is None


def test_settled_ignores_pods_of_no_component_and_terminating_extras() -> None:
    pods = full_set(NODE_CONVENTIONS) + [
        pod("debug", None, "Pending", False, node="n1"),
        pod("kube-apiserver-old", "kube-apiserver", "Terminating", False, deleting=True),
    ]
    assert settled(spec_of("node", 3, "conventions"), pods) is None


def test_settled_beside_a_failed_pod_its_replacement_took_over_from() -> None:
    pods = full_set(NODE_CONVENTIONS) + [pod("kube-apiserver-old", "kube-apiserver", "Failed", False, node="n1")]
    assert settled(spec_of("node", 3, "conventions"), pods) is None
    pods = replace(pods, "kube-apiserver-1", None)  # not replaced yet: one replica short
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "kube-apiserver: 1 of 2 pods" in message


@pytest.mark.parametrize(("form", "replicas"), [
    ("gep20", {"etcd-main": 3, "etcd-events": 3, "kube-apiserver": 3, "gardener-resource-manager": 3}),
    ("conventions", {"etcd-main": 3, "etcd-events": 3, "kube-apiserver": 3, "gardener-resource-manager": 2}),
])
def test_settled_counts_replicas_of_the_form(form: str, replicas: dict[str, int]) -> None:
    assert settled(spec_of("zone", 3, form), full_set(replicas)) is None


def test_not_settled_with_fewer_pods_than_replicas() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "etcd-events-1", None)
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "etcd-events: 2 of 3 pods" in message
    assert "etcd-main" not in message


def test_not_settled_while_a_replica_is_terminating() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "kube-apiserver-0",
                   pod("kube-apiserver-0", "kube-apiserver", "Terminating", True, deleting=True))
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "kube-apiserver: 1 of 2 pods" in message


def test_not_settled_while_a_bound_pod_is_not_running() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "etcd-main-0",
                   pod("etcd-main-0", "etcd-main", "Pending", False, node="n0"))  # bound: pulling, starting
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "etcd-main-0 Pending" in message


def test_not_settled_while_the_scheduler_has_not_seen_a_members_claim_yet() -> None:
    """Seen in CI: the scheduler looked at etcd-events-0 before its claim reached its cache."""
    pods = replace(full_set(NODE_CONVENTIONS), "etcd-events-0", pod(
        "etcd-events-0", "etcd-events", "Pending", False, node=None, zone=None, host=None,
        reason='0/6 nodes are available: persistentvolumeclaim "etcd-events-etcd-events-0" not found.'))
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "etcd-events-0 Pending" in message


def test_not_settled_before_the_scheduler_has_seen_a_pod() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "gardener-resource-manager-1",
                   pod("gardener-resource-manager-1", "gardener-resource-manager", "Pending", False, node=None))
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "gardener-resource-manager-1" in message


def test_not_settled_while_a_running_pod_is_not_ready() -> None:
    pods = replace(full_set(NODE_CONVENTIONS), "etcd-events-2", pod("etcd-events-2", "etcd-events", "Running", False))
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None and "etcd-events-2" in message


def test_not_settled_names_everything_missing() -> None:
    pods = [p for p in full_set(NODE_CONVENTIONS) if p.component != "kube-apiserver"]
    pods = replace(pods, "etcd-main-1", pod("etcd-main-1", "etcd-main", "Failed", False))
    message = settled(spec_of("node", 3, "conventions"), pods)
    assert message is not None
    assert "kube-apiserver: 0 of 2 pods" in message and "etcd-main-1 Failed" in message


# ---------------------------------------------------------------- the placement probe

RACK = "example.com/rack"
PODS = [
    pod("a-0", "etcd-main", node="n1", zone="z1", host="h1", labels={f"node:{RACK}": "r1", f"node:{ZONE}": "z1"}),
    pod("a-1", "etcd-main", node="n2", zone="z1", host="h1", labels={f"node:{RACK}": "r2", f"node:{ZONE}": "z1"}),
    pod("a-2", "etcd-main", node="n3", zone="z2", host="h2", labels={f"node:{RACK}": "r2", f"node:{ZONE}": "z2"}),
    pod("a-3", "etcd-main", "Pending", False, node=None, zone=None, host=None, reason=UNSCHEDULABLE),
    pod("a-4", "etcd-main", node="n4", zone="z3", host=None, labels={f"node:{ZONE}": "z3"}),  # no host, no rack
]


@pytest.mark.parametrize(("key", "expected"), [
    ("zone", {"z1": 2, "z2": 1, "z3": 1}),
    ("node", {"n1": 1, "n2": 1, "n3": 1, "n4": 1}),
    ("host", {"h1": 2, "h2": 1}),  # a pod on a node without a host is left out
    (RACK, {"r1": 1, "r2": 2}),  # a node label, recorded on the pod as `node:<label>`
    (ZONE, {"z1": 2, "z2": 1, "z3": 1}),
    ("example.com/missing", {}),
])
def test_per_domain(key: str, expected: dict[str, int]) -> None:
    counts = placement.per_domain(PODS, key)
    assert counts == Counter(expected)  # the Pending pod has no domain


def test_domain() -> None:
    assert PODS[0].domain("zone") == "z1" and PODS[0].domain("node") == "n1" and PODS[0].domain("host") == "h1"
    assert PODS[0].domain(RACK) == "r1"
    assert PODS[3].domain("zone") is None and PODS[4].domain(RACK) is None


@pytest.mark.parametrize(("counts", "domains", "expected"), [
    ({"z1": 2, "z2": 1, "z3": 1}, ["z1", "z2", "z3"], 1),
    ({"z1": 2, "z2": 1}, ["z1", "z2", "z3"], 2),  # an empty eligible domain counts as 0
    ({"z1": 1, "z2": 1, "z9": 5}, ["z1", "z2"], 0),  # domains not eligible do not count
    ({"z1": 3}, ["z1"], 0),
    ({}, ["z1", "z2"], 0),
    ({"z1": 2}, [], 0),
])
def test_max_skew(counts: dict[str, int], domains: list[str], expected: int) -> None:
    assert placement.max_skew(Counter(counts), domains) == expected


def test_pending() -> None:
    terminating_unbound = pod("a-5", "etcd-main", "Terminating", False, node=None, deleting=True)
    assert [p.name for p in placement.pending([*PODS, terminating_unbound])] == ["a-3"]
    assert placement.pending([]) == []


def test_of() -> None:
    pods = [*PODS, pod("k-0", "kube-apiserver"), pod("a-9", "etcd-main", deleting=True)]
    assert [p.name for p in placement.of(pods, "etcd-main")] == ["a-0", "a-1", "a-2", "a-3", "a-4"]
    assert [p.name for p in placement.of(pods, "kube-apiserver")] == ["k-0"]


def test_table() -> None:
    pods = [
        pod("kube-apiserver-x", "kube-apiserver", node="n2", zone="z2", host="h2"),
        pod("stray", None, "Pending", False, node=None, zone=None, host=None),
        pod("etcd-main-1", "etcd-main", "Pending", False, node=None, zone=None, host=None, reason=UNSCHEDULABLE),
        pod("etcd-main-0", "etcd-main", node="n1", zone="z1", host="h1"),
    ]
    lines = placement.table(pods).splitlines()
    assert lines[0].split() == ["COMPONENT", "POD", "ZONE", "NODE", "HOST", "PHASE", "READY"]
    assert [line.split() for line in lines[1:5]] == [
        ["etcd-main", "etcd-main-0", "z1", "n1", "h1", "Running", "yes"],
        ["etcd-main", "etcd-main-1", "-", "-", "-", "Pending", "no"],
        ["kube-apiserver", "kube-apiserver-x", "z2", "n2", "h2", "Running", "yes"],
        ["-", "stray", "-", "-", "-", "Pending", "no"],  # pods of no component last
    ]
    assert lines[5:] == ["Pending because:", f"  etcd-main-1: {UNSCHEDULABLE}"]
    # Columns line up: every cell of a column starts where its header does.
    starts = [lines[0].index(h) for h in ("POD", "ZONE", "NODE", "HOST", "PHASE", "READY")]
    assert all(line[s - 2:s] == "  " and line[s] != " " for line in lines[1:5] for s in starts)


def test_table_without_reasons_has_no_pending_section() -> None:
    text = placement.table([pod("etcd-main-0", "etcd-main")])
    assert "Pending because" not in text and len(text.splitlines()) == 2


def test_table_of_a_generator_keeps_the_reasons() -> None:
    pods = [pod("etcd-main-1", "etcd-main", "Pending", False, node=None, reason=UNSCHEDULABLE)]
    assert placement.table(p for p in pods) == placement.table(pods)


def test_a_backed_up_etcd_main_gets_etcd_druids_backup_restore_container_and_secret() -> None:
    spec = ReferenceSpec("zone", ("a", "b", "c"), namespace="shoot--x", real=True, delta_snapshot_period_s=1,
                         full_snapshot_period_s=60)
    pods = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in render(spec) if o["kind"] == "StatefulSet"}
    backup = pods["etcd-main"]["containers"][1]
    assert backup["name"] == "backup-restore" and backup["ports"] == [{"containerPort": 8080}]
    assert backup["args"] == ["--store-prefix=shoot--x/etcd-main", "--full-period=60", "--delta-period=1"]
    assert {m["name"] for m in backup["volumeMounts"]} == {"client-url-ca-etcd", "client-url-etcd-client-tls",
                                                          "etcd-backup"}
    assert {"name": "etcd-backup", "secret": {"secretName": "etcd-backup"}} in pods["etcd-main"]["volumes"]
    assert len(pods["etcd-events"]["containers"]) == 1  # etcd-events keeps no backups, as in Gardener
    unbacked = ReferenceSpec("zone", ("a", "b", "c"), real=True)
    assert all(len(o["spec"]["template"]["spec"]["containers"]) == 1 for o in render(unbacked) if o["kind"] == "StatefulSet")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"delta_snapshot_period_s": 1}, "running for real"),
    ({"real": True, "delta_snapshot_period_s": 0}, "above 0 s and at most the full snapshot period"),
    ({"real": True, "delta_snapshot_period_s": 120, "full_snapshot_period_s": 60}, r"at most the full snapshot period \(60 s\)"),
])
def test_backup_periods_that_cannot_work_are_refused(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ReferenceSpec("zone", ("a", "b", "c"), **kwargs)


@pytest.mark.parametrize("members,unavailable", [(3, 1), (5, 2), (7, 3)])
def test_an_etcds_budget_lets_as_many_go_as_it_tolerates(members: int, unavailable: int) -> None:
    zones = tuple(f"z{i}" for i in range(members))
    objects = render(ReferenceSpec("zone", zones, "gep20", etcd_members=members))
    budgets = {o["metadata"]["name"]: o["spec"]["maxUnavailable"] for o in objects if o["kind"] == "PodDisruptionBudget"}
    sets = {o["metadata"]["name"]: o["spec"]["replicas"] for o in objects if o["kind"] == "StatefulSet"}
    assert sets == {"etcd-main": members, "etcd-events": members}
    assert budgets == {"etcd-main": unavailable, "etcd-events": unavailable, "kube-apiserver": 1,
                       "gardener-resource-manager": 1}


@pytest.mark.parametrize("tolerance,members", [("zone", 4), ("zone", 1), ("none", 3), ("node", 9)])
def test_an_etcd_member_count_without_a_quorum_or_against_the_tolerance_is_refused(tolerance: str, members: int) -> None:
    with pytest.raises(ConfigError, match=f"got {members} with failure tolerance '{tolerance}'"):
        ReferenceSpec(tolerance, ("a", "b", "c"), "gep20", etcd_members=members)


# ---------------------------------------------------------------- the gardener form


@pytest.mark.parametrize(("tolerance", "n"), [("zone", 3), ("node", 3), ("none", 1)])
def test_the_gardener_form_hands_the_workloads_over_without_scheduling_for_gardeners_webhook(
        tolerance: str, n: int) -> None:
    """As Gardener's components create them: the webhook (gardener-resource-manager) writes the
    replicas, the zone pinning and the spread constraints on the seed."""
    objects = render(spec_of(tolerance, n, "gardener"))
    for name in WORKLOADS:
        pod = pod_spec(workload(objects, name))
        assert "affinity" not in pod and "topologySpreadConstraints" not in pod and "nodeSelector" not in pod, name
    for name in ETCDS:  # etcd-druid's StatefulSets: the Etcd resource's members, and no type
        assert workload(objects, name)["spec"]["replicas"] == (1 if tolerance == "none" else 3)
        assert TYPE not in workload(objects, name)["metadata"]["labels"]
    assert workload(objects, "gardener-resource-manager")["spec"]["replicas"] == 1
    assert workload(objects, "gardener-resource-manager")["metadata"]["labels"][TYPE] == "server"
    api = workload(objects, "kube-apiserver")  # gardenlet's: 3 to 6 with high availability, else 2 to 6
    least = 2 if tolerance == "none" else 3
    assert api["spec"]["replicas"] == least and api["metadata"]["labels"][TYPE] == "server"
    assert api["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "100%", "maxUnavailable": 0}
    hpa = objects_by_key(objects)[("HorizontalPodAutoscaler", "kube-apiserver")]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "kube-apiserver"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (least, 6)
    kinds = [o["kind"] for o in objects]
    assert kinds.index("HorizontalPodAutoscaler") < kinds.index("Deployment")  # the webhook looks for it
    ns = objects[0]
    assert ns["metadata"]["labels"] == {PREFIX + "consider": "true", "gardener.cloud/role": "shoot"}
    assert ns["metadata"]["annotations"][PREFIX + "zones"] == ",".join(CHOSEN[(tolerance, n)])


def test_the_gardener_form_expects_the_conventions_forms_counts() -> None:
    """deploy.settled() waits for what the webhook is to decide: the conventions form's counts."""
    for tolerance, n in (("zone", 3), ("node", 3)):
        ours = render(spec_of(tolerance, n, "conventions"))
        for name, c in COMPONENTS.items():
            assert replicas(spec_of(tolerance, n, "gardener"), c) == workload(ours, name)["spec"]["replicas"], name


def test_etcd_pods_are_known_by_the_renderers_labels_and_by_those_gardenlet_gives_druid() -> None:
    """gardenlet's Etcd resources label their pods `app` and `role` without `instance`; etcd-druid
    adds its own. Both kinds of pod belong to the same component, and no other pod does."""
    from harness.components import component_of

    druid = {"app": "etcd-statefulset", "role": "events", "gardener.cloud/role": "controlplane",
             "app.kubernetes.io/managed-by": "etcd-druid", "app.kubernetes.io/part-of": "etcd-events"}
    assert component_of(druid) == "etcd-events"
    assert component_of({**druid, "role": "main"}) == "etcd-main"
    assert component_of({"app": "etcd-statefulset", "instance": "etcd-main", "role": "main"}) == "etcd-main"
    assert component_of({"app": "etcd-statefulset", "role": "main"}) is None  # neither the renderer's nor druid's


# ---------------------------------------------------------------- etcd-druid runs the etcds


def test_etcd_druid_runs_the_etcds_of_the_gardener_form_running_for_real_only() -> None:
    for form, real in (("gep20", True), ("conventions", True), ("gardener", False)):
        with pytest.raises(ConfigError, match="etcd-druid runs the etcds of the gardener form running for real"):
            ReferenceSpec("zone", SEED[:3], form, real=real, druid=True)
    with pytest.raises(ConfigError, match="member count and backups are not the harness's"):
        ReferenceSpec("zone", SEED[:3], "gardener", real=True, druid=True, etcd_members=5)


def test_with_etcd_druid_no_etcd_object_is_rendered_and_kube_apiserver_mounts_gardenlets_secrets() -> None:
    spec = ReferenceSpec("zone", SEED[:3], "gardener", real=True, druid=True)
    with pytest.raises(ConfigError, match="their Secrets' names are needed"):
        render(spec)
    objects = render(spec, {"etcd-ca": "ca-etcd-bundle", "etcd-client-tls": "etcd-client"})
    names = [(o["kind"], o["metadata"]["name"]) for o in objects]
    assert not [n for n in names if n[1].startswith("etcd-")], names  # no StatefulSet, Service or budget of etcd
    apiserver = workload(objects, "kube-apiserver")["spec"]["template"]["spec"]
    assert apiserver["volumes"] == [{"name": "etcd-ca", "secret": {"secretName": "ca-etcd-bundle"}},
                                    {"name": "etcd-client-tls", "secret": {"secretName": "etcd-client"}}]


def test_the_volume_pool_takes_the_size_of_druids_claims() -> None:
    spec = ReferenceSpec("zone", SEED[:3], "gardener", real=True, druid=True)
    assert {pv["spec"]["capacity"]["storage"] for pv in volume_pool(spec, "25Gi")} == {"25Gi"}


def test_a_namespace_left_terminating_says_what_holds_it() -> None:
    """undeploy's wait names what the namespace controller reports keeping a namespace (a finalizer
    nobody removes), not only that it is still there."""
    from kubernetes.client import V1Namespace, V1NamespaceCondition, V1NamespaceStatus

    held = V1Namespace(status=V1NamespaceStatus(conditions=[
        V1NamespaceCondition(type="NamespaceDeletionDiscoveryFailure", status="False", message="All resources discovered"),
        V1NamespaceCondition(type="NamespaceFinalizersRemaining", status="True",
                             message="Some content in the namespace has finalizers remaining: "
                                     "druid.gardener.cloud/etcd-druid in 2 resource instances")]))
    assert _holding(held) == (" (Some content in the namespace has finalizers remaining: "
                              "druid.gardener.cloud/etcd-druid in 2 resource instances)")
    assert _holding(V1Namespace(status=V1NamespaceStatus(phase="Terminating"))) == ""
