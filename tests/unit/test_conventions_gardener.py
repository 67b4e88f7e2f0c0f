"""The conventions against the cases of Gardener's own tests, one row per case.

Each row names the case it is taken from by its description string and carries the values
that case asserts, written out by hand (not computed by the code under test). Sources, in
gardener/gardener:

- GET_REPLICAS / GET_TSC: `pkg/utils/kubernetes/highavailability_test.go`, the tables
  "#GetReplicaCount" and "#GetTopologySpreadConstraints", at 13cc58ba (2024-11, the version
  whose docs seed 001 reproduces: HVPAs still named) and at b312835d (2026-08), which adds the
  one-node case ("only 1 node", gardener#14595) and otherwise asserts the same values.
- WEBHOOK: `test/integration/resourcemanager/highavailabilityconfig/highavailabilityconfig_test.go`
  at 13cc58ba, "topology spread constraints" of the webhook with an HPA or HVPA as autoscaler.

Gardener's failure tolerance is a pointer: nil is our None (no annotation: a seed or system
component), "" is our "none" (a shoot without HA). Its tests also use "foo", a non-empty value
other than "zone": the webhook treats any such value as it treats "node", so those rows use "node".
Every row is checked both through `topology_spread_constraints` and `harness conventions explain --json`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from harness.reference import conventions as conv
from harness.reference.conventions_cli import add_parser, run

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def host(min_domains: int | None = None) -> dict[str, Any]:
    """Hostname spread: best effort without minDomains, enforced (DoNotSchedule) with it."""
    if min_domains is None:
        return {"topologyKey": HOST, "maxSkew": 1, "whenUnsatisfiable": "ScheduleAnyway"}
    return {"topologyKey": HOST, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": min_domains}


def zone(min_domains: int) -> dict[str, Any]:
    return {"topologyKey": ZONE, "maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule", "minDomains": min_domains}


# (Gardener's description, type, tolerance, replicas asserted)
GET_REPLICAS = [
    ("component type 'server', failure-tolerance-type nil", "server", None, 2),
    ("component type 'server', failure-tolerance-type empty", "server", "none", 2),
    ("component type 'server', failure-tolerance-type non-empty", "server", "node", 2),  # "foo"
    ("component type 'controller', failure-tolerance-type nil", "controller", None, 2),
    ("component type 'controller', failure-tolerance-type empty", "controller", "none", 1),
    ("component type 'controller', failure-tolerance-type non-empty", "controller", "node", 2),  # "foo"
]


@pytest.mark.parametrize(("case", "component_type", "tolerance", "expected"), GET_REPLICAS,
                         ids=[r[0] for r in GET_REPLICAS])
def test_replicas_as_gardener_tests_them(case: str, component_type: str, tolerance: str | None,
                                         expected: int) -> None:
    for zone_count in (1, 2, 3):  # Gardener's count does not depend on the zones
        assert conv.replica_count(component_type, tolerance, zone_count) == expected, case


# (Gardener's description, tolerance, replicas, autoscaler max, zones, more than one node, host-spread, expected)
GET_TSC = [
    ("less than 2 replicas", None, 1, 1, 1, True, False, []),
    ("1 zone, failure-tolerance-type nil", None, 2, 2, 1, True, False, [host()]),
    ("1 zone, failure-tolerance-type nil, but host spread enforced", None, 2, 2, 1, True, True, [host(2)]),
    ("1 zone, failure-tolerance-type empty", "none", 2, 2, 1, True, False, [host()]),
    ("1 zone, failure-tolerance-type non-empty", "node", 2, 2, 1, True, False, [host(2)]),  # "foo"
    ("1 zones, failure-tolerance-type 'node'", "node", 3, 4, 1, True, False, [host(3)]),
    ("1 zone, failure-tolerance-type 'node', only 1 node", "node", 3, 4, 1, False, False, [host()]),  # b312835d
    ("2 zones, maxReplicas less twice the number of zones", None, 2, 2, 2, True, False, [host(), zone(2)]),
    ("2 zones, failure-tolerance-type nil", None, 2, 2, 2, True, False, [host(), zone(2)]),
    ("2 zones, failure-tolerance-type nil, but host spread enforced", None, 2, 2, 2, True, True, [host(2), zone(2)]),
    ("2 zones, failure-tolerance-type empty", "none", 2, 2, 2, True, False, [host()]),
    ("2 zones, failure-tolerance-type non-empty", "node", 2, 2, 2, True, False, [host(2)]),  # "foo"
    ("2 zones, failure-tolerance-type 'zone'", "zone", 2, 2, 2, True, False, [host(2), zone(2)]),
    ("2 zones, maxReplicas at least twice the number of zones, failure-tolerance-type 'zone'",
     "zone", 2, 4, 2, True, False, [host(3), zone(2)]),
    ("2 zones, maxReplicas at least twice the number of zones", None, 2, 4, 2, True, False, [host(), zone(2)]),
    ("2 zones, maxReplicas at least twice the number of zones, and host spread enforced",
     None, 2, 4, 2, True, True, [host(3), zone(2)]),
    ("3 zones, maxReplicas less than zones", None, 2, 2, 3, True, False, [host(), zone(2)]),
    ("3 zones, maxReplicas less than zones, but host spread enforced", None, 2, 2, 3, True, True, [host(2), zone(2)]),
]

# The webhook in a namespace with zones a, b, c and no failure tolerance, the workload at 2 replicas
# and an autoscaler whose maximum is twice the zones (6): minDomains of the zones is min(3, 6).
WEBHOOK = [
    ("when max replicas are at least twice the number of zones, scaled w/ HPA", None, 2, 6, 3, True, False,
     [host(), zone(3)]),
    ("when max replicas are at least twice the number of zones, scaled w/ HVPA", None, 2, 6, 3, True, False,
     [host(), zone(3)]),
    ("when failure-tolerance-type is empty, when there are less than 2 zones", None, 2, 2, 1, True, False, [host()]),
    ("when failure-tolerance-type is empty, when there are at least 2 zones", None, 2, 2, 3, True, False,
     [host(), zone(2)]),
    ("when failure-tolerance-type is non-empty, when there are less than 2 zones", "node", 2, 2, 1, True, False,
     [host(2)]),  # "foo"
    ("when failure-tolerance-type is non-empty, when there are at least 2 zones", "node", 2, 2, 3, True, False,
     [host(2)]),  # "foo"
]

ROWS = GET_TSC + WEBHOOK


@pytest.mark.parametrize(("case", "tolerance", "replicas", "max_replicas", "zones", "multiple_nodes", "host_spread",
                          "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_spread_as_gardener_tests_it(case: str, tolerance: str | None, replicas: int, max_replicas: int, zones: int,
                                     multiple_nodes: bool, host_spread: bool, expected: list[dict[str, Any]]) -> None:
    got = conv.topology_spread_constraints("server", tolerance, zones, replicas, None, max_replicas, host_spread,
                                           multiple_nodes=multiple_nodes)
    assert got == expected, case


@pytest.mark.parametrize(("case", "tolerance", "replicas", "max_replicas", "zones", "multiple_nodes", "host_spread",
                          "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_explain_shows_what_gardener_tests(case: str, tolerance: str | None, replicas: int, max_replicas: int,
                                           zones: int, multiple_nodes: bool, host_spread: bool,
                                           expected: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["conventions", "explain", "--type", "server", "--zones", str(zones), "--replicas", str(replicas),
            "--max-replicas", str(max_replicas), "--json"]
    argv += ["--tolerance", tolerance] if tolerance else []
    argv += [] if multiple_nodes else ["--one-node"]
    argv += ["--host-spread"] if host_spread else []
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    assert run(parser.parse_args(argv)) == 0
    assert json.loads(capsys.readouterr().out) == {"replicas": replicas, "topologySpreadConstraints": expected}, case


def test_explain_help_names_where_the_rules_come_from(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["conventions", "explain", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for source in ("seed 001", "highavailability.go", "handler.go", "highavailability_test.go",
                   "test_conventions_gardener.py"):
        assert source in text
