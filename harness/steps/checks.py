"""Then-steps: judge what the probes recorded against the thresholds in the feature text."""

from __future__ import annotations

import time

from typing import Any, Callable, TypeVar

from pytest_bdd import parsers, then

from harness import judge
from harness.probes.availability import AvailabilityProbe
from harness.probes.converge import converged_keys, settled_hashes
from harness.probes.etcd import keys_per_member
from harness.errors import CapabilityMissing, WaitTimeout
from harness.etcd_gateway import EtcdRequestError
from harness.providers.base import EtcdCluster, MemberProcesses
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.validate.history import diverging_hashes, lost_writes, seqs_from_keys
from harness.wait import first_within

T = TypeVar("T")


def _await(figure: Callable[[], T | None], limit: float, what: str) -> T | None:
    """Give a figure until its own limit (plus a little) to appear in the probe history."""
    return first_within(figure, what, limit + 0.5)


@then(parsers.parse("a new leader is elected in a surviving zone within {limit:g} s"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    h = probe.history
    found = _await(lambda: av.new_leader_after(h.samples, outage.start, outage.leader_id_before, h.member_ids), limit,
                   "a new leader")
    timeline.mark("figure", "time to a new leader", value=found[0] if found else None, unit="s")
    judge.at_most(found[0] if found else None, limit, "time to a new leader", seen=found)
    judge.holds(etcd.member(found[1]).zone not in outage.zones, f"new leader {found[1]} is in a surviving zone",
                seen=etcd.member(found[1]).zone)


@then(parsers.parse("writes resume within {limit:g} s of the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    end = outage.healed_at if outage.healed_at is not None else outage.window_end(timeline, limit)
    gap = av.longest_write_gap(probe.history.samples, outage.start, end)
    timeline.mark("figure", "write-unavailability window", value=gap.length, unit="s", open=gap.open)
    judge.gap_at_most(gap, limit, "write-unavailability window since the outage took effect")


@then(parsers.parse("the longest write gap during the outage is under {limit:g} s"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    gap = av.longest_write_gap(probe.history.samples, outage.start, outage.healed_at or timeline.now())
    timeline.mark("figure", "longest write gap during the outage", value=gap.length, unit="s", open=gap.open)
    judge.gap_at_most(gap, limit, "longest write gap during the outage")


def write_p99(probe: AvailabilityProbe | Any, outage: Outage, timeline: Timeline, what: str) -> av.Latency:
    """The p99 write latency of `probe` (an etcd or a shoot API probe) during the outage, on the
    timeline as a figure; judged only once every write begun in the window has ended."""
    end = outage.healed_at or timeline.now()
    wait = end + probe.timeout + 0.05 - timeline.now()
    if wait > 0:
        time.sleep(wait)
    p99 = av.write_latency(probe.history.samples, outage.start, end, 0.99)
    timeline.mark("figure", f"{what} p99 during the outage", value=None if p99.value == float("inf") else
                  round(p99.value * 1000, 1), unit="ms", writes=p99.writes, failed=p99.failed)
    judge.holds(p99.writes > 0, f"{what}: writes were probed during the outage", seen=p99.writes)
    return p99


def p99_under(p99: av.Latency, limit: float, what: str) -> None:
    judge.holds(p99.value < limit / 1000, f"{what} p99 during the outage under {limit:g} ms", seen=p99.describe())


def p99_at_least(p99: av.Latency, limit: float, what: str) -> None:
    """The fault is felt: the slowest writes (a failed one counts as slower than any) took at least this."""
    judge.holds(p99.value >= limit / 1000, f"{what} p99 during the outage at least {limit:g} ms", seen=p99.describe())


@then(parsers.parse("the 99th percentile of write latency during the outage is under {limit:g} ms"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    p99_under(write_p99(probe, outage, timeline, "write latency"), limit, "write latency")


@then(parsers.parse("the 99th percentile of write latency during the outage is at least {limit:g} ms"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    p99_at_least(write_p99(probe, outage, timeline, "write latency"), limit, "write latency")


@then("the etcd leader does not change")
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> None:
    """Same leader and same raft term: a re-election of the same member is a change too."""
    end = outage.healed_at or timeline.now()
    seen = av.leader_changes(probe.history.samples, outage.start, end)
    terms = av.terms_seen(probe.history.samples, outage.start, end)
    judge.equal(seen, {outage.leader_id_before}, f"leaders reported during the outage (before: {outage.leader_before})")
    judge.equal(terms, {outage.term_before}, f"raft terms reported during the outage (before: {outage.term_before})")


@then(parsers.parse("the leader is deposed within {limit:g} s of the return"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """A member that was cut off comes back with a higher raft term and forces an election (what
    pre-vote exists to prevent): a term above the one before the outage, within `limit` s."""
    judge.holds(outage.healed_at is not None, "the outage ended (a When-step brought it back)", seen=outage.returned)
    assert outage.healed_at is not None
    wait = outage.healed_at + limit + 0.5 - timeline.now()
    if wait > 0:
        time.sleep(wait)
    terms = av.terms_seen(probe.history.samples, outage.healed_at, outage.healed_at + limit)
    judge.holds(max(terms, default=0) > outage.term_before,
                f"a raft term above {outage.term_before} (before the outage) within {limit:g} s of the return",
                seen=sorted(terms))


@then("a leader exists in a surviving zone")
def _(etcd: EtcdCluster, outage: Outage) -> None:
    """Within the time members get to be ready, the surviving members agree on a leader among them."""
    survivors = [m.name for m in etcd.members if m.zone not in outage.zones]
    seen: dict[str, object] = {}

    def agreed() -> str | None:
        statuses = etcd.status()
        seen.update({n: statuses[n] if isinstance(statuses[n], str) else f"leader {statuses[n].leader}"
                     for n in survivors})
        leader = etcd.leader({n: statuses[n] for n in survivors})
        return leader if leader is not None and etcd.member(leader).zone not in outage.zones else None

    leader = first_within(agreed, "the surviving members to agree on a leader", etcd.config.timeouts.member_ready)
    judge.holds(leader is not None, "the surviving members agree on a leader in a surviving zone", seen=seen)


@then("linearizable writes fail during the outage")
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> None:
    last_cut = max((f.effective_at for f in outage.faults), default=outage.start)
    acked, failed = av.writes_failed_between(probe.history.samples, last_cut, outage.healed_at or timeline.now())
    judge.equal(acked, 0, f"writes acknowledged during the outage ({failed} failed)")
    judge.holds(failed > 0, "writes were attempted during the outage", seen=failed)


@then(parsers.parse('serializable reads from the member in zone "{zone}" are still served'))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, zone: str) -> None:
    last_cut = max((f.effective_at for f in outage.faults), default=outage.start)
    for m in etcd.members_in(zone):
        served, failed = av.reads_served(probe.history.samples, m.name, last_cut, outage.healed_at or timeline.now())
        judge.holds(served > 0 and failed == 0, f"every serializable read of {m.name} served during the outage",
                    seen={"served": served, "failed": failed})


@then(parsers.parse("writes resume within {limit:g} s of its return"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    assert outage.healed_at is not None, "no zone came back in this scenario"
    after = _await(lambda: av.first_ack_after(probe.history.samples, outage.healed_at), limit, "an acknowledged write")
    timeline.mark("figure", "time from the return to the first acknowledged write", value=after, unit="s")
    judge.at_most(after, limit, "time from the return to the first acknowledged write")


def _catch_up(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, names: list[str], limit: float) -> None:
    __tracebackhide__ = True
    assert outage.healed_at is not None, "nothing came back in this scenario"
    h, healed = probe.history, outage.healed_at
    target = av.highest_revision(h.samples, healed)
    for name in names:
        took = _await(lambda: av.catch_up_time(h.samples, name, healed, target), limit, f"{name} to catch up")
        timeline.mark("figure", f"catch-up time of {name}", value=took, unit="s")
        judge.at_most(took, limit, f"catch-up of {name} to revision {target} (the highest seen when it returned)")


@then(parsers.parse("its member catches up within {limit:g} s"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    _catch_up(probe, outage, timeline, [m.name for z in outage.returned for m in etcd.members_in(z)], limit)


@then(parsers.parse('member "{member}" catches up within {limit:g} s'))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, member: str,
      limit: float) -> None:
    _catch_up(probe, outage, timeline, [etcd.member(member).name], limit)


def equal_hashes(etcd: EtcdCluster, what: str) -> None:
    """Once writes stopped, the members reach one revision and agree on HashKV at it."""
    __tracebackhide__ = True
    revisions, hashes = settled_hashes(etcd, etcd.config.timeouts.recovery)
    judge.holds(hashes is not None, f"{what} reach one revision once writes stopped", seen=revisions)
    judge.none_of(diverging_hashes(hashes or {}), f"{what} whose HashKV differs")


def _elections(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> tuple[int, float]:
    """Elections during the outage (each raises the raft term at least once: the highest term
    any member reported, less the term before) and the outage's length in minutes."""
    end = outage.healed_at or timeline.now()
    terms = av.terms_seen(probe.history.samples, outage.start, end)
    elections = max(terms, default=outage.term_before) - outage.term_before
    timeline.mark("figure", "leader elections during the outage", value=elections, unit="",
                  minutes=round((end - outage.start) / 60, 3))
    return elections, (end - outage.start) / 60


@then(parsers.parse("at most {count:d} leader elections happen per minute of the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    elections, minutes = _elections(probe, outage, timeline)
    judge.holds(elections <= count * minutes, f"at most {count} elections a minute over {minutes * 60:.1f} s",
                f"{elections} elections (raft term {outage.term_before} -> {outage.term_before + elections})")


@then(parsers.parse("at least {count:d} leader elections happen during the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    elections, minutes = _elections(probe, outage, timeline)
    judge.holds(elections >= count, f"at least {count} elections over {minutes * 60:.1f} s",
                f"{elections} elections (raft term {outage.term_before} -> {outage.term_before + elections})")


@then("etcd raises its NOSPACE alarm")
def _(etcd: EtcdCluster, outage: Outage, timeline: Timeline) -> None:
    def raised() -> list[tuple[int, str]] | None:
        client = etcd.client(etcd.members[0].name, timeout=2.0)
        try:
            return [a for a in client.alarms() if a[1] == "NOSPACE"] or None
        except EtcdRequestError:
            return None
        finally:
            client.close()

    alarms = first_within(raised, "etcd's NOSPACE alarm", 5.0)
    timeline.mark("figure", "members with the NOSPACE alarm", value=len(alarms or []), unit="")
    judge.holds(bool(alarms), "a NOSPACE alarm raised", "none in etcd's alarm list")


@then(parsers.parse('member "{member}" stops within {limit:g} s of the outage'))
def _(env, etcd: EtcdCluster, outage: Outage, timeline: Timeline, member: str, limit: float) -> None:
    """Its process gone, seen every 50 ms from the outage's effect."""
    if not isinstance(env, MemberProcesses):
        raise CapabilityMissing("this environment cannot tell whether a member's process runs")
    name = etcd.member(member).name
    stopped = first_within(lambda: None if env.member_running(name) else timeline.now(), f"{name} stopped",
                           max(0.0, outage.start + limit + 0.5 - timeline.now()))
    after = None if stopped is None else stopped - outage.start
    timeline.mark("figure", f"{name} stopped after the outage's effect", value=after, unit="s")
    judge.at_most(after, limit, f"time until {name} stopped", "it still ran")


@then("all members end with equal HashKV")
def _(etcd: EtcdCluster, probes) -> None:
    probes.stop_all()
    equal_hashes(etcd, "members")


@then("no acknowledged write is lost")
def _(etcd: EtcdCluster, probes, probe: AvailabilityProbe, timeline: Timeline) -> None:
    probes.stop_all()
    h = probe.history
    judge.holds(len(h.acked()) > 0, "the probe had acknowledged writes to check", seen=len(h.acked()))
    try:
        views, apart = converged_keys(etcd, h.prefix, etcd.config.timeouts.recovery), ""
    except WaitTimeout as e:  # judged on what each member holds, saying that they never converged
        views, apart = keys_per_member(etcd, h.prefix), f" (the members never reached one revision: {e})"
    lost = {m: lost_writes(h.acked(), seqs_from_keys(keys, h.prefix)) for m, keys in views.items() if isinstance(keys, list)}
    timeline.mark("figure", "acknowledged probe writes", value=len(h.acked()), unit="writes")
    timeline.mark("figure", "lost writes", value=max((len(v) for v in lost.values()), default=0), unit="writes")
    if any(lost.values()):
        timeline.mark("anomaly", "lost writes", missing={m: v[:20] for m, v in lost.items() if v})
    for member, keys in views.items():
        judge.holds(isinstance(keys, list), f"{member} answered the read-back{apart}", seen=keys)
        judge.none_of(lost[member], f"acknowledged writes missing on {member}{apart}")
