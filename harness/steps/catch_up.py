"""Steps for a zone that was away long enough to come back far behind (GEP-20's appendix: the
rejoin after 5.1 GB), and the catch-up it then needs, from the leader's log or from a snapshot."""

from __future__ import annotations

from typing import Any

from pytest_bdd import parsers, then, when

from harness import judge
from harness.errors import ConfigError, HarnessError
from harness.faults.runner import FaultRunner
from harness.probes.catch_up import CatchUp
from harness.validate.catch_up import figures as catch_up_figures
from harness.providers.base import EtcdCluster, zone_pair
from harness.steps.faults import apply_faults, restore_faults
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.wait import wait_for

AWAY_LIMIT_S = 600.0  # how long a zone may stay down waiting for the others to get ahead


def _member_of(etcd: EtcdCluster, zone: str) -> str:
    members = etcd.members_in(zone)
    if len(members) != 1:
        raise ConfigError(f"a catch-up is measured for a zone with one member; {zone} has {len(members)}")
    return members[0].name


def _head(etcd: EtcdCluster, but: str) -> int | None:
    """The highest revision among the members other than `but` that answer."""
    revisions = [s.revision for n, s in etcd.status().items() if n != but and not isinstance(s, str)]
    return max(revisions, default=None)


@when(parsers.parse("the target zone goes down until the others are {ahead:d} revisions ahead"), target_fixture="outage")
def _(env: Any, etcd: EtcdCluster, faults: FaultRunner, target_zone: str, ahead: int) -> Outage:
    """Down for as long as a load takes to write `ahead` revisions past the zone's member; the
    catch-up's measurement begins as it goes, so nothing waits before the return."""
    member = _member_of(etcd, target_zone)
    status = etcd.status()[member]
    if isinstance(status, str):
        raise HarnessError(f"{member} does not answer before its zone goes down: {status}")
    catch_up = CatchUp(env, etcd, member)
    outage = apply_faults(etcd, faults, [("zone-outage", target_zone, {})])
    catch_up.begin(status.revision)
    outage.catch_up = catch_up
    wait_for(lambda: _head(etcd, member), lambda head: head is not None and head >= status.revision + ahead,
             f"the others {ahead} revisions ahead of {member} (at {status.revision})", AWAY_LIMIT_S, interval=0.2)
    return outage


@when("the target zone comes back, its member's catch-up measured", target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, timeline: Timeline, target_zone: str, outage: Outage) -> Outage:
    """Heals the target zone and measures its member's catch-up: the time to the leader's revision,
    the bytes each zone pair carried, the snapshots the leader sent, the leader's CPU (figures of
    the timeline the next steps judge)."""
    catch_up = outage.catch_up
    if catch_up is None:
        raise ConfigError("a catch-up is measured from when its zone went: When the target zone goes down until the "
                          "others are N revisions ahead")
    member = catch_up.member
    with timeline.span("catch-up", member) as event:
        event.data.update(catch_up_figures(catch_up.end(lambda: restore_faults(faults, timeline, outage, [target_zone]),
                                                        etcd.config.timeouts.recovery * 4)))
    figures = event.data
    # Counted at the return, not when the others got far enough ahead: the load writes on meanwhile.
    timeline.mark("figure", f"revisions {member} is behind at its return", value=figures["behind"], unit="revisions",
                  away_s=figures["away_s"])
    timeline.mark("figure", f"catch-up of {member}", value=figures["seconds"], unit="s")
    for pair, mib in figures["mib"].items():
        if mib is not None:
            timeline.mark("figure", f"catch-up {pair}", value=mib, unit="MiB")
    timeline.mark("figure", "snapshots the leader sent it", value=figures["snapshots_sent"], unit="")
    timeline.mark("figure", "MiB the leader counts as sent to it", value=figures["leader_counted_mib"], unit="MiB")
    timeline.mark("figure", "the leader's database", value=figures["leader_db_mib"], unit="MiB")
    timeline.mark("figure", "leader CPU while its member was away", value=figures["leader_cpu_before"], unit="s/s")
    timeline.mark("figure", "leader CPU during the catch-up", value=figures["leader_cpu_during"], unit="s/s")
    return outage


def _catch_up(timeline: Timeline) -> dict[str, Any]:
    spans = timeline.find("catch-up")
    if not spans:
        raise ConfigError("no catch-up was measured in this scenario (When the target zone comes back, its member's "
                          "catch-up measured)")
    return spans[-1].data


@then(parsers.re(r"its member catches up from (?P<source>a snapshot|the log)"))
def _(timeline: Timeline, source: str) -> None:
    """From a snapshot: the leader sent it at least one; from the log: none."""
    figures = _catch_up(timeline)
    sent = figures["snapshots_sent"]
    judge.holds((sent > 0) == (source == "a snapshot"), f"the member caught up from {source}: the leader sent it "
                f"{sent:g} snapshot(s)", seen={k: figures[k] for k in ("snapshots_sent", "seconds", "target_revision")})


@then(parsers.parse("its member catches up within {limit:g} s, sent {mib:g} MiB or more from the leader's zone"))
def _(etcd: EtcdCluster, timeline: Timeline, target_zone: str, limit: float, mib: float) -> None:
    """The catch-up's time, and that it came from the leader: GEP-20's rejoin was the leader's
    egress to the member, the other follower sending it <20 KiB/s."""
    figures = _catch_up(timeline)
    if "wire" in figures["not_available"]:
        raise HarnessError(f"this check judges the bytes on the wire: {figures['not_available']['wire']}")
    pair = zone_pair(etcd.member(figures["leader"]).zone, target_zone)
    sent = figures["mib"].get(pair)
    judge.holds(sent is not None, f"bytes from the leader's zone to {target_zone} counted over the catch-up",
                seen=figures["mib"])
    judge.at_most(figures["seconds"], limit, f"catch-up of {target_zone}'s member")
    judge.holds(sent >= mib, f"{sent:g} MiB from the leader's zone ({pair}) over the catch-up, {mib:g} or more",
                seen=figures["mib"])
