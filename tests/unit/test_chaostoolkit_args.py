"""Argument errors of the chaostoolkit activities: clear errors naming what is accepted, nothing applied.

A region's state file is written by hand (no region runs): targets are validated before the
FaultRunner writes its ledger or touches the network.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from harness.chaostoolkit import actions, probes, tolerances
from harness.config import RegionSpec
from harness.errors import ConfigError
from harness.providers.state import read_state, state_path, write_state


@pytest.fixture
def configuration(tmp_path: Path) -> dict[str, str]:
    spec = RegionSpec(name="ut", subnet_prefix="10.97")
    write_state(state_path(tmp_path, "ut"), {"spec": asdict(spec), "etcd": {}, "namespaces": [], "members": {}, "faults": []})
    return {"harness_region": "ut", "harness_state_dir": str(tmp_path)}


def ledger(configuration: dict[str, str]) -> list[object]:
    return (read_state(state_path(Path(configuration["harness_state_dir"]), "ut")) or {})["faults"]


@pytest.mark.parametrize("call, message", [
    (lambda c: actions.zone_outage(zone="zone-x", configuration=c),
     "unknown zone 'zone-x'; this environment has zones: zone-a, zone-b, zone-c"),
    (lambda c: actions.zone_recovery(zone="zone-x", configuration=c), "unknown zone 'zone-x'"),
    (lambda c: actions.aws_zone_outage(zone="nowhere", configuration=c), "unknown zone 'nowhere'"),
    (lambda c: actions.node_failure(node="zone-q-9", configuration=c), "unknown node 'zone-q-9'; nodes: zone-a-1"),
    (lambda c: actions.node_failure(node="zone-a-1", mode="melt", configuration=c),
     "unknown node failure mode 'melt'; accepted: kill, freeze, link-down"),
    (lambda c: actions.aws_zone_outage(zone="zone-a", scope="planet", configuration=c),
     "unknown scope 'planet'; accepted: all, availability-zone"),
    (lambda c: actions.revoke_credentials(method="shred", configuration=c),
     "unknown revocation method 'shred'; accepted: deny-policy, deactivate-keys"),
    (lambda c: actions.zone_outage(zone="zone-a", max_duration=0, configuration=c),
     "max_duration must be greater than 0 and at most 900 seconds, got 0"),
    (lambda c: probes.write_availability(seconds="soon", configuration=c), "seconds must be a number of seconds"),
    (lambda c: probes.write_availability(seconds=3, via_zone="zone-x", configuration=c), "unknown zone 'zone-x'"),
])
def test_argument_errors(configuration: dict[str, str], call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        call(configuration)
    assert ledger(configuration) == []


def test_no_region_named() -> None:
    with pytest.raises(ConfigError, match="no `harness_region`"):
        actions.heal(configuration={})


def test_region_not_up(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="region 'zz' is not up"):
        actions.heal(configuration={"harness_region": "zz", "harness_state_dir": str(tmp_path)})


def test_tolerances_judge_through_harness_judge() -> None:
    held = {"via_zone": "zone-c", "members": 3, "healthy": ["etcd-0", "etcd-1"], "unreachable": {"etcd-2": "timeout"}, "leaders": ["etcd-0"]}
    assert tolerances.quorum(value=held)
    assert not tolerances.quorum(value=held | {"healthy": ["etcd-0"]})
    assert not tolerances.quorum(value=held | {"leaders": []})
    assert not tolerances.quorum()  # no value: out of tolerance, not a crash
    gap = {"resumed": True, "longest_gap_s": 1.6, "acked": 300, "failed": 6}
    assert tolerances.writes_available(2.0, value=gap)
    assert not tolerances.writes_available(1.0, value=gap)
    # A gap still open at the end of the probe's window is judged by its length like any other.
    assert not tolerances.writes_available(5.0, value=gap | {"resumed": False, "longest_gap_s": 6.0})
    assert tolerances.writes_available(5.0, value=gap | {"resumed": False, "longest_gap_s": 0.012})
    assert tolerances.at_most(500, target="total_kib_s", value={"total_kib_s": 294.7})
    assert not tolerances.at_most(20, target="total_kib_s", value={"total_kib_s": 294.7})
    spread = {"component": "etcd-main", "domain": "zone", "per_domain": {"zone-a": 1, "zone-b": 1}, "pending": 1}
    assert tolerances.spread(2, pending=1, value=spread)
    assert not tolerances.spread(3, pending=0, value=spread)
