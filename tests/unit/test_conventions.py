"""The HA conventions module: expected values are written out from seed 001 and the webhook.

Sources of the expected numbers: seed 001's tables (replicas per type and tolerance) and Gardener's
high-availability-config webhook at b312835d (`GetReplicaCount`: controller 1 only for a non-HA
shoot, else 2; `GetTopologySpreadConstraints`: hostname DoNotSchedule + minDomains min(3, max)
with a tolerance or host-spread, zone constraint for zone/None with > 1 zone, minDomains
min(zones, max)). They are not computed by calling the functions under test.
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.reference import conventions as conv
from harness.reference.conventions import Deviation
from harness.reference.conventions_cli import add_parser, run

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TYPE = "high-availability-config.resources.gardener.cloud/type"
NODE_TERMS = "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
TSC = "spec.template.spec.topologySpreadConstraints"


def host(when: str = "ScheduleAnyway", min_domains: int | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"topologyKey": HOST, "maxSkew": 1, "whenUnsatisfiable": when}
    return c if min_domains is None else c | {"minDomains": min_domains}


def zone(min_domains: int) -> dict[str, Any]:
    return {"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": min_domains}


def strict(min_domains: int) -> dict[str, Any]:
    return host("DoNotSchedule", min_domains)


# ---------------------------------------------------------------- the keys


def test_keys_are_gardeners() -> None:
    assert conv.ZONE_LABEL == ZONE and conv.HOSTNAME_LABEL == HOST and conv.LABEL_TYPE == TYPE
    prefix = "high-availability-config.resources.gardener.cloud/"
    assert conv.ANNOTATION_ZONES == prefix + "zones"
    assert conv.ANNOTATION_FAILURE_TOLERANCE_TYPE == prefix + "failure-tolerance-type"
    assert conv.ANNOTATION_HOST_SPREAD == prefix + "host-spread"
    assert conv.ANNOTATION_ZONE_PINNING == prefix + "zone-pinning"
    assert conv.LABEL_CONSIDER == prefix + "consider"
    assert conv.ANNOTATION_REPLICAS == prefix + "replicas"


# ---------------------------------------------------------------- choose_zones

FIVE = ("a", "b", "c", "d", "e")


@pytest.mark.parametrize(
    ("tolerance", "n", "expected"),
    [
        ("none", 1, ("a",)), ("none", 2, ("a",)), ("none", 3, ("a",)), ("none", 4, ("a",)), ("none", 5, ("a",)),
        ("node", 1, ("a",)), ("node", 2, ("a",)), ("node", 3, ("a",)), ("node", 4, ("a",)), ("node", 5, ("a",)),
        # GEP-20: an even number n of zones uses n-1, an odd number all of them.
        ("zone", 3, ("a", "b", "c")), ("zone", 4, ("a", "b", "c")), ("zone", 5, FIVE),
        (None, 1, ("a",)), (None, 2, ("a", "b")), (None, 5, FIVE),
    ],
)
def test_choose_zones(tolerance: str | None, n: int, expected: tuple[str, ...]) -> None:
    assert conv.choose_zones(tolerance, FIVE[:n]) == expected


def test_choose_zones_keeps_the_given_order() -> None:
    assert conv.choose_zones("zone", ["z9", "z1", "z5", "z2"]) == ("z9", "z1", "z5")
    assert conv.choose_zones("node", ["z9", "z1"]) == ("z9",)


@pytest.mark.parametrize("n", [1, 2])
def test_choose_zones_refuses_zone_tolerance_below_three_zones(n: int) -> None:
    with pytest.raises(ConfigError, match=r"at least 3 zones.*GEP-20.*odd number") as e:
        conv.choose_zones("zone", FIVE[:n])
    assert f"got {n}" in str(e.value)


@pytest.mark.parametrize(
    ("tolerance", "zones", "match"),
    [
        ("node", [], "no zones"),
        ("node", ["a", ""], "empty zone name"),
        ("zone", ["a", " ", "c"], "empty zone name"),
        ("zone", ["a", "b", "a"], "more than once"),
        ("rack", ["a"], r"unknown failure tolerance 'rack'; accepted: none, node, zone"),
    ],
)
def test_choose_zones_errors(tolerance: str, zones: list[str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        conv.choose_zones(tolerance, zones)


# ---------------------------------------------------------------- replica_count

REPLICAS = [  # (type, tolerance, expected): seed 001's tables; None follows the webhook (2 for both)
    ("server", "none", 2), ("server", "node", 2), ("server", "zone", 2), ("server", None, 2),
    ("controller", "none", 1), ("controller", "node", 2), ("controller", "zone", 2), ("controller", None, 2),
]


@pytest.mark.parametrize("zone_count", [1, 2, 3, 4, 5])
@pytest.mark.parametrize(("component_type", "tolerance", "expected"), REPLICAS)
def test_replica_count(component_type: str, tolerance: str | None, expected: int, zone_count: int) -> None:
    assert conv.replica_count(component_type, tolerance, zone_count) == expected


@pytest.mark.parametrize(("tolerance", "expected"), [("none", 1), ("node", 3), ("zone", 3), (None, 3)])
def test_etcd_needs_three_when_highly_available(tolerance: str | None, expected: int) -> None:
    assert conv.replica_count("server", tolerance, 3, etcd=True) == expected


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("worker", "node", 3), r"unknown component type 'worker'; accepted: server, controller"),
        (("server", "region", 3), r"unknown failure tolerance 'region'; accepted: none, node, zone"),
        (("server", "node", 0), r"zone count must be at least 1, got 0"),
    ],
)
def test_replica_count_bad_input(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        conv.replica_count(*args)


# ---------------------------------------------------------------- topology_spread_constraints

SPREAD = [  # (type, tolerance, zones, replicas, max replicas, host spread, expected)
    # fewer than two replicas: nothing to spread
    ("server", "zone", 3, 0, None, False, []),
    ("server", "zone", 3, 1, None, False, []),
    ("controller", "none", 1, 1, 4, True, []),
    ("server", None, 5, 1, None, False, []),
    # non-HA shoot: best-effort host spread only, never a zone constraint
    ("server", "none", 1, 2, None, False, [host()]),
    ("server", "none", 3, 2, None, False, [host()]),
    ("controller", "none", 5, 3, None, False, [host()]),
    ("server", "none", 3, 2, None, True, [strict(2)]),
    ("server", "none", 2, 2, 6, True, [strict(3)]),
    # node: hosts enforced, minDomains min(3, max replicas); pinned to one zone, so no zone constraint
    ("server", "node", 1, 2, None, False, [strict(2)]),
    ("controller", "node", 1, 2, None, False, [strict(2)]),
    ("server", "node", 3, 2, None, False, [strict(2)]),
    ("server", "node", 1, 3, None, False, [strict(3)]),
    ("server", "node", 1, 5, None, False, [strict(3)]),
    ("server", "node", 1, 2, 4, False, [strict(3)]),
    ("server", "node", 2, 2, 2, True, [strict(2)]),
    # zone: hosts enforced and zones with minDomains min(zones, max replicas)
    ("server", "zone", 1, 2, None, False, [strict(2)]),  # one zone: no zone domain to spread over
    ("server", "zone", 2, 2, None, False, [strict(2), zone(2)]),
    ("server", "zone", 3, 2, None, False, [strict(2), zone(2)]),
    ("controller", "zone", 3, 2, None, False, [strict(2), zone(2)]),
    ("server", "zone", 3, 3, None, False, [strict(3), zone(3)]),
    ("server", "zone", 3, 4, None, False, [strict(3), zone(3)]),  # not a multiple of zones: maxSkew stays 1
    ("server", "zone", 3, 6, None, False, [strict(3), zone(3)]),  # >= 2*zones: maxSkew 1 since gardener#10608
    ("server", "zone", 4, 2, None, False, [strict(2), zone(2)]),
    ("server", "zone", 5, 3, None, False, [strict(3), zone(3)]),
    ("server", "zone", 5, 4, None, False, [strict(3), zone(4)]),
    ("server", "zone", 5, 2, 4, False, [strict(3), zone(4)]),
    ("server", "zone", 5, 2, 10, False, [strict(3), zone(5)]),
    ("server", "zone", 3, 2, 2, True, [strict(2), zone(2)]),
    # None (seed or system component): hosts best effort unless host-spread, zones when > 1 zone
    ("server", None, 1, 2, None, False, [host()]),
    ("controller", None, 1, 2, None, False, [host()]),
    ("server", None, 2, 2, None, False, [host(), zone(2)]),
    ("controller", None, 3, 2, None, False, [host(), zone(2)]),
    ("server", None, 3, 2, 5, False, [host(), zone(3)]),
    ("server", None, 4, 3, None, False, [host(), zone(3)]),
    ("server", None, 5, 2, 3, False, [host(), zone(3)]),
    ("server", None, 1, 2, None, True, [strict(2)]),
    ("server", None, 3, 2, 8, True, [strict(3), zone(3)]),
    ("controller", None, 2, 4, None, True, [strict(3), zone(2)]),
]


@pytest.mark.parametrize(
    ("component_type", "tolerance", "zones", "replicas", "max_replicas", "host_spread", "expected"), SPREAD
)
def test_topology_spread_constraints(
    component_type: str, tolerance: str | None, zones: int, replicas: int, max_replicas: int | None,
    host_spread: bool, expected: list[dict[str, Any]],
) -> None:
    got = conv.topology_spread_constraints(component_type, tolerance, zones, replicas, None, max_replicas, host_spread)
    assert got == expected


def test_topology_spread_constraints_carry_the_label_selector() -> None:
    labels = {"app": "kubernetes", "role": "apiserver"}
    got = conv.topology_spread_constraints("server", "zone", 3, 3, labels)
    selector = {"labelSelector": {"matchLabels": labels}}
    assert got == [strict(3) | selector, zone(3) | selector]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("server", "zone", 3, -1), r"replicas must be 0 or more, got -1"),
        (("server", "zone", 3, 3, None, 2), r"max replicas \(2\) must be at least the replicas \(3\)"),
        (("server", "zone", 0, 3), r"zone count must be at least 1"),
        (("proxy", "zone", 3, 3), r"unknown component type 'proxy'"),
        (("server", "", 3, 3), r"unknown failure tolerance ''"),
    ],
)
def test_topology_spread_constraints_bad_input(args: tuple[Any, ...], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        conv.topology_spread_constraints(*args)


# ---------------------------------------------------------------- node_affinity and explain


def test_node_affinity_pins_to_the_zones() -> None:
    assert conv.node_affinity(["a", "b", "c"]) == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b", "c"]}]}]
            }
        }
    }
    assert conv.node_affinity([]) is None
    with pytest.raises(ConfigError, match="more than once"):
        conv.node_affinity(["a", "a"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("server", "zone", 3), {"replicas": 2, "topologySpreadConstraints": [strict(2), zone(2)]}),
        (("controller", "none", 1), {"replicas": 1, "topologySpreadConstraints": []}),
        (("controller", None, 2), {"replicas": 2, "topologySpreadConstraints": [host(), zone(2)]}),
        (("server", "zone", 1), {"replicas": 2, "topologySpreadConstraints": [strict(2)]}),  # computes on 1 zone too
        (("server", "zone", 5, 3, 9), {"replicas": 3, "topologySpreadConstraints": [strict(3), zone(5)]}),
        (("server", "none", 1, 4, None, True), {"replicas": 4, "topologySpreadConstraints": [strict(3)]}),
    ],
)
def test_explain(args: tuple[Any, ...], expected: dict[str, Any]) -> None:
    got = conv.explain(*args)
    assert got == expected
    assert json.loads(json.dumps(got)) == expected  # plain JSON, no labelSelector


def test_explain_refuses_a_maximum_below_the_conventional_count() -> None:
    with pytest.raises(ConfigError, match=r"max replicas \(1\) must be at least the replicas \(2\)"):
        conv.explain("server", "node", 1, max_replicas=1)


# ---------------------------------------------------------------- check

ZONES = ("a", "b", "c")
APISERVER_LABELS = {"app": "kubernetes", "role": "apiserver"}
ETCD_LABELS = {"app": "etcd-statefulset", "instance": "etcd-main"}
PINNED = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b", "c"]}]}]}}}


def workload(kind: str, name: str, labels: dict[str, str], replicas: int, min_domains: int,
             component_type: str | None = "server") -> dict[str, Any]:
    """A workload that follows the conventions for tolerance `zone` in zones a, b, c."""
    selector = {"matchLabels": dict(labels)}
    meta_labels = dict(labels) | ({TYPE: component_type} if component_type else {})
    return {
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": "shoot--x", "labels": meta_labels},
        "spec": {
            "replicas": replicas,
            "selector": selector,
            "template": {
                "metadata": {"labels": dict(labels) | {"gardener.cloud/role": "controlplane"}},
                "spec": {
                    "containers": [{"name": name, "image": "x"}],
                    "affinity": copy.deepcopy(PINNED),
                    "topologySpreadConstraints": [
                        strict(min_domains) | {"labelSelector": copy.deepcopy(selector)},
                        zone(min_domains) | {"labelSelector": copy.deepcopy(selector)},
                    ],
                },
            },
        },
    }


def apiserver() -> dict[str, Any]:
    return workload("Deployment", "kube-apiserver", APISERVER_LABELS, 2, 2)


def etcd() -> dict[str, Any]:
    return workload("StatefulSet", "etcd-main", ETCD_LABELS, 3, 3)


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def test_check_passes_conforming_workloads_and_ignores_other_kinds() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-apiserver"}, "spec": {}}
    objects = [apiserver(), etcd(), service, None]
    assert conv.check(objects, "zone", ZONES) == []
    assert [o["metadata"]["name"] for o in conv.workloads(objects)] == ["kube-apiserver", "etcd-main"]


def _missing_zone_constraint(o: dict[str, Any]) -> None:
    del pod_spec(o)["topologySpreadConstraints"][1]


def _schedule_anyway(o: dict[str, Any]) -> None:
    pod_spec(o)["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"


def _zone_min_domains_2(o: dict[str, Any]) -> None:
    pod_spec(o)["topologySpreadConstraints"][1]["minDomains"] = 2


def _no_host_min_domains(o: dict[str, Any]) -> None:
    del pod_spec(o)["topologySpreadConstraints"][0]["minDomains"]


def _etcd_two_replicas(o: dict[str, Any]) -> None:
    o["spec"]["replicas"] = 2
    for c in pod_spec(o)["topologySpreadConstraints"]:
        c["minDomains"] = 2


def _no_affinity(o: dict[str, Any]) -> None:
    del pod_spec(o)["affinity"]


def _pinned_to_two(o: dict[str, Any]) -> None:
    pod_spec(o)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] = ["a", "b"]


def _foreign_selector(o: dict[str, Any]) -> None:
    pod_spec(o)["topologySpreadConstraints"][1]["labelSelector"] = {"matchLabels": {"app": "other"}}


def _no_selector(o: dict[str, Any]) -> None:
    del pod_spec(o)["topologySpreadConstraints"][0]["labelSelector"]


def _no_type(o: dict[str, Any]) -> None:
    del o["metadata"]["labels"][TYPE]


def _controller_with_three(o: dict[str, Any]) -> None:
    o["metadata"]["labels"][TYPE] = "controller"
    o["spec"]["replicas"] = 3
    for c in pod_spec(o)["topologySpreadConstraints"]:
        c["minDomains"] = 3


WRONG = [  # (which workload, how it is broken, the deviations expected)
    (apiserver, _missing_zone_constraint,
     [Deviation("Deployment", "kube-apiserver", f"{TSC}[{ZONE}]", zone(2), None)]),
    (etcd, _schedule_anyway,
     [Deviation("StatefulSet", "etcd-main", f"{TSC}[{HOST}].whenUnsatisfiable", "DoNotSchedule", "ScheduleAnyway")]),
    (etcd, _zone_min_domains_2,
     [Deviation("StatefulSet", "etcd-main", f"{TSC}[{ZONE}].minDomains", 3, 2)]),
    (apiserver, _no_host_min_domains,
     [Deviation("Deployment", "kube-apiserver", f"{TSC}[{HOST}].minDomains", 2, None)]),
    (etcd, _etcd_two_replicas,  # the spread follows the expected 3, so minDomains 2 is wrong as well
     [Deviation("StatefulSet", "etcd-main", "spec.replicas", 3, 2),
      Deviation("StatefulSet", "etcd-main", f"{TSC}[{HOST}].minDomains", 3, 2),
      Deviation("StatefulSet", "etcd-main", f"{TSC}[{ZONE}].minDomains", 3, 2)]),
    (apiserver, _no_affinity,
     [Deviation("Deployment", "kube-apiserver", f"{NODE_TERMS}[0] {ZONE} In", ["a", "b", "c"], None)]),
    (etcd, _pinned_to_two,
     [Deviation("StatefulSet", "etcd-main", f"{NODE_TERMS}[0] {ZONE} In", ["a", "b", "c"], ["a", "b"])]),
    (apiserver, _foreign_selector,
     [Deviation("Deployment", "kube-apiserver", f"{TSC}[{ZONE}].labelSelector",
                'a selector of the pod labels {"app": "kubernetes", "role": "apiserver", '
                '"gardener.cloud/role": "controlplane"}', {"matchLabels": {"app": "other"}})]),
    (etcd, _no_selector,
     [Deviation("StatefulSet", "etcd-main", f"{TSC}[{HOST}].labelSelector",
                'a selector of the pod labels {"app": "etcd-statefulset", "instance": "etcd-main", '
                '"gardener.cloud/role": "controlplane"}', None)]),
    (apiserver, _no_type,
     [Deviation("Deployment", "kube-apiserver", f"metadata.labels[{TYPE}]", "server or controller", None)]),
    (apiserver, _controller_with_three,  # controllers are exact: the webhook would set 2
     [Deviation("Deployment", "kube-apiserver", "spec.replicas", 2, 3),
      Deviation("Deployment", "kube-apiserver", f"{TSC}[{HOST}].minDomains", 2, 3),
      Deviation("Deployment", "kube-apiserver", f"{TSC}[{ZONE}].minDomains", 2, 3)]),
]


@pytest.mark.parametrize(("make", "breaks", "expected"), WRONG, ids=[w[1].__name__.strip("_") for w in WRONG])
def test_check_catches(make: Any, breaks: Any, expected: list[Deviation]) -> None:
    obj = make()
    breaks(obj)
    assert conv.check([obj], "zone", ZONES) == expected


def test_check_too_few_replicas_of_a_server() -> None:
    obj = apiserver()
    obj["spec"]["replicas"] = 1
    del pod_spec(obj)["topologySpreadConstraints"]  # with one replica nothing was spread
    assert conv.check([obj], "zone", ZONES) == [
        Deviation("Deployment", "kube-apiserver", "spec.replicas", "at least 2", 1),
        Deviation("Deployment", "kube-apiserver", f"{TSC}[{HOST}]", strict(2), None),
        Deviation("Deployment", "kube-apiserver", f"{TSC}[{ZONE}]", zone(2), None),
    ]
    assert str(conv.check([obj], "zone", ZONES)[0]) == (
        "Deployment/kube-apiserver: spec.replicas: expected at least 2, found 1")


def test_check_a_server_may_run_more_replicas() -> None:
    obj = apiserver()  # seed 001: kube-apiserver scales horizontally, 2 is a minimum
    obj["spec"]["replicas"] = 3
    for c in pod_spec(obj)["topologySpreadConstraints"]:
        c["minDomains"] = 3
    assert conv.check([obj], "zone", ZONES) == []


def test_check_an_hpa_lends_its_maximum_to_min_domains() -> None:
    obj = apiserver()
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "kube-apiserver", "namespace": "shoot--x"},
           "spec": {"minReplicas": 2, "maxReplicas": 6,
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "kube-apiserver"}}}
    assert conv.check([obj, hpa], "zone", ZONES) == [
        Deviation("Deployment", "kube-apiserver", f"{TSC}[{HOST}].minDomains", 3, 2),
        Deviation("Deployment", "kube-apiserver", f"{TSC}[{ZONE}].minDomains", 3, 2),
    ]


def test_check_node_tolerance_rejects_a_zone_constraint() -> None:
    obj = etcd()  # node: one zone, hosts enforced, no zone constraint
    pod_spec(obj)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = ["b"]
    assert conv.check([obj], "node", ["b"]) == [
        Deviation("StatefulSet", "etcd-main", f"{TSC}[{ZONE}]", None,
                  zone(3) | {"labelSelector": {"matchLabels": ETCD_LABELS}}),
    ]


def test_check_lists_skip_label_and_hibernation() -> None:
    skipped = apiserver()
    skipped["metadata"]["labels"][conv.LABEL_SKIP] = "true"
    skipped["spec"]["replicas"] = 7
    hibernated = etcd()
    hibernated["spec"]["replicas"] = 0
    del pod_spec(hibernated)["topologySpreadConstraints"]
    objects = [{"apiVersion": "v1", "kind": "List", "items": [skipped, hibernated]}]
    assert conv.check(objects, "zone", ZONES) == []
    assert [o["metadata"]["name"] for o in conv.workloads(objects)] == ["etcd-main"]


def test_check_seed_component_without_tolerance_needs_no_affinity() -> None:
    obj = apiserver()
    del pod_spec(obj)["affinity"]
    pod_spec(obj)["topologySpreadConstraints"][0] = host() | {"labelSelector": {"matchLabels": APISERVER_LABELS}}
    assert conv.check([obj], None, ZONES) == []


@pytest.mark.parametrize(
    ("objects", "tolerance", "zones", "match"),
    [
        ([], "regional", ZONES, "unknown failure tolerance 'regional'"),
        ([], "zone", [], "no zones"),
        (["text"], "zone", ZONES, "a manifest must be a mapping"),
    ],
)
def test_check_bad_input(objects: list[Any], tolerance: str, zones: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        conv.check(objects, tolerance, zones)


# ---------------------------------------------------------------- CLI


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness")
    add_parser(p.add_subparsers(dest="command", required=True))
    return p


def test_cli_explain_json(parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    args = parser.parse_args(["conventions", "explain", "--type", "server", "--tolerance", "zone", "--zones", "3",
                              "--max-replicas", "4", "--json"])
    assert run(args) == 0
    assert json.loads(capsys.readouterr().out) == {"replicas": 2, "topologySpreadConstraints": [strict(3), zone(3)]}


def test_cli_explain_without_tolerance_is_a_seed_component(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parser.parse_args(["conventions", "explain", "--type", "controller", "--zones", "2", "--json"])
    assert run(args) == 0
    assert json.loads(capsys.readouterr().out) == {"replicas": 2, "topologySpreadConstraints": [host(), zone(2)]}


def test_cli_explain_readable(parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]) -> None:
    args = parser.parse_args(["conventions", "explain", "--type", "server", "--tolerance", "node", "--zones", "1",
                              "--replicas", "3", "--host-spread"])
    assert run(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [
        "replicas: 3", f"- {HOST}: maxSkew 1, whenUnsatisfiable DoNotSchedule, minDomains 3"]


def test_cli_explain_bad_type(parser: argparse.ArgumentParser) -> None:
    with pytest.raises(ConfigError, match="unknown component type 'daemon'; accepted: server, controller"):
        run(parser.parse_args(["conventions", "explain", "--type", "daemon", "--zones", "3"]))


def _write(tmp_path: Any, name: str, objects: list[dict[str, Any]]) -> str:
    import yaml

    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects))
    return str(path)


def test_cli_check_clean(parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    first = _write(tmp_path, "a.yaml", [apiserver(), {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}])
    second = _write(tmp_path, "b.yaml", [{"apiVersion": "v1", "kind": "List", "items": [etcd()]}])
    assert run(parser.parse_args(["conventions", "check", first, second, "--tolerance", "zone", "--zones", "a,b,c"])) == 0
    assert capsys.readouterr().out == "checked 2 workload(s) against tolerance zone in zones a,b,c: 0 deviation(s)\n"


def test_cli_check_deviations(parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    broken = etcd()
    _schedule_anyway(broken)
    path = _write(tmp_path, "a.yaml", [apiserver(), broken])
    assert run(parser.parse_args(["conventions", "check", path, "--tolerance", "zone", "--zones", "a,b,c"])) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"StatefulSet/etcd-main: {TSC}[{HOST}].whenUnsatisfiable: expected DoNotSchedule, found ScheduleAnyway",
        "checked 2 workload(s) against tolerance zone in zones a,b,c: 1 deviation(s)",
    ]


@pytest.mark.parametrize(
    ("content", "argv_tail", "match"),
    [
        (None, ["--tolerance", "zone", "--zones", "a,b,c"], "cannot read"),
        ("a: [b\n", ["--tolerance", "zone", "--zones", "a,b,c"], "is not valid YAML"),
        ("kind: Service\n", ["--tolerance", "regional", "--zones", "a,b,c"], "unknown failure tolerance 'regional'"),
        ("kind: Service\n", ["--tolerance", "zone", "--zones", "a,,c"], "empty zone name"),
    ],
)
def test_cli_check_bad_input(parser: argparse.ArgumentParser, tmp_path: Any, content: str | None,
                             argv_tail: list[str], match: str) -> None:
    path = tmp_path / "m.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=match):
        run(parser.parse_args(["conventions", "check", str(path), *argv_tail]))


@pytest.mark.parametrize(
    ("selector", "ok"),
    [
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["kubernetes", "x"]}]}, True),
        ({"matchLabels": {"role": "apiserver"}, "matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
        ({"matchExpressions": [{"key": "canary", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["kubernetes"]}]}, False),
        ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False),
        ({}, False),  # an empty selector counts every pod of the namespace, not this workload's
    ],
)
def test_check_judges_selector_expressions(selector: dict[str, Any], ok: bool) -> None:
    obj = apiserver()
    pod_spec(obj)["topologySpreadConstraints"][1]["labelSelector"] = selector
    found = conv.check([obj], "zone", ZONES)
    assert found == ([] if ok else [Deviation(
        "Deployment", "kube-apiserver", f"{TSC}[{ZONE}].labelSelector",
        'a selector of the pod labels {"app": "kubernetes", "role": "apiserver", "gardener.cloud/role": "controlplane"}',
        selector)])
