"""Then-steps: judge what the probes recorded against the thresholds in the feature text."""

from __future__ import annotations

import time

from typing import Any, Callable, TypeVar

from pytest_bdd import parsers, then

from harness import judge
from harness.probes.availability import AvailabilityProbe
from harness.probes.converge import converged_keys, settled_revisions, stores_at
from harness.probes.etcd import election_timeout, keys_per_member
from harness.probes.samples import Sample
from harness.errors import CapabilityMissing, HarnessError, WaitTimeout
from harness.etcd_gateway import EtcdRequestError
from harness.providers.base import Environment, EtcdCluster, MemberProcesses
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.validate import leadership as lead
from harness.validate.history import lost_writes, seqs_from_keys, store_split
from harness.wait import first_within, poll_within
from harness.steps.holders import Loads, Probes

T = TypeVar("T")
# How long after a window's end a member's first status report still counts as its state at the
# end: a change within it is counted against the window (it cannot flatter the verdict).
END_GRACE = 1.0


def _await(figure: Callable[[], T | None], limit: float, what: str) -> T | None:
    """Give a figure until its own limit (plus a little) to appear in the probe history."""
    return first_within(figure, what, limit + 0.5)


def bound(etcd: EtcdCluster, timeline: Timeline, count: str, unit: str, what: str) -> tuple[float, str]:
    """A bound in seconds, or in election timeouts (a property of etcd's configuration, read from
    the members' own command lines): the seconds, and what the verdict is about, saying so."""
    if unit == "s":
        return float(count), what
    timeout = election_timeout(etcd)
    timeline.mark("figure", "election timeout", value=timeout.seconds, unit="s", said=timeout.said)
    return float(count) * timeout.seconds, f"{what} ({count} election timeouts; {timeout.said})"


@then(parsers.re(r"a new leader is elected in a surviving zone within (?P<count>\d+(\.\d+)?) "
                 r"(?P<unit>s|election timeouts)"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: str, unit: str) -> None:
    """The first report after the outage's effect naming a leader other than the one before, in a
    newer term: fails when none came within the bound or it sits in a zone that went down."""
    h = probe.history
    limit, what = bound(etcd, timeline, count, unit, "time to a new leader")
    report = _await(lambda: lead.new_leader(h.samples, outage.start, outage.leader_id_before, outage.term_before),
                    limit, "a new leader")
    found = (report.end - outage.start, h.member_ids.get(report.leader or 0, str(report.leader))) if report else None
    timeline.mark("figure", "time to a new leader", value=found[0] if found else None, unit="s")
    judge.at_most(found[0] if found else None, limit, what, seen=found,
                  harness_stalled=av.stalled(h.samples, outage.start, report.end) if report else 0.0)
    judge.holds(etcd.member(found[1]).zone not in outage.zones, f"new leader {found[1]} is in a surviving zone",
                seen=etcd.member(found[1]).zone)


@then(parsers.re(r"writes resume within (?P<count>\d+(\.\d+)?) (?P<unit>s|election timeouts) of the outage"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: str, unit: str) -> None:
    """The window runs its bound from the outage's effect whatever came back meanwhile (a return
    that did not bring the quorum back leaves the gap open), and on to the return when that was later."""
    h = probe.history
    limit, what = bound(etcd, timeline, count, unit, "write-unavailability window since the outage took effect")
    # The harness's own stalls so far are given back to the window, so an open gap has had its time.
    end = max(outage.healed_at or 0.0,
              outage.window_end(timeline, limit + av.stalled(h.samples, outage.start, timeline.now())))
    gap = av.longest_write_gap(h.samples, outage.start, end)
    timeline.mark("figure", "write-unavailability window", value=gap.length, unit="s", open=gap.open)
    judge.gap_at_most(gap, limit, what, *av.gap_resolution(h.samples, gap))


@then(parsers.parse("the longest write gap during the outage is under {limit:g} s"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """The longest stretch without an acknowledged write from the outage's effect to its end (or now),
    an open one counted to the end; missed by no more than the harness stalled: inconclusive."""
    h = probe.history
    gap = av.longest_write_gap(h.samples, outage.start, outage.healed_at or timeline.now())
    timeline.mark("figure", "longest write gap during the outage", value=gap.length, unit="s", open=gap.open)
    judge.gap_at_most(gap, limit, "longest write gap during the outage", *av.gap_resolution(h.samples, gap))


def write_p99(probe: AvailabilityProbe | Any, outage: Outage, timeline: Timeline, what: str, how: str) -> av.Latency:
    """The p99 write latency of `probe` (an etcd or a shoot API probe) during the outage, on the
    timeline as a figure; judged only once every write begun in the window has ended. `how` the
    bound ("under", "at least") picks the end of the effect's bracket that cannot flatter it
    (validate.availability.write_p99_bounded)."""
    end = outage.healed_at or timeline.now()
    wait = end + probe.timeout + 0.05 - timeline.now()
    if wait > 0:
        time.sleep(wait)
    p99 = av.write_p99_bounded(probe.history.samples, outage.start, outage.effect_seen, end, how)
    timeline.mark("figure", f"{what} p99 during the outage", value=None if p99.value == float("inf") else
                  round(p99.value * 1000, 1), unit="ms", writes=p99.writes, failed=p99.failed,
                  unhindered=None if p99.unhindered == float("inf") else round(p99.unhindered * 1000, 1))
    judge.holds(p99.writes > 0, f"{what}: writes were probed during the outage", seen=p99.writes)
    return p99


def p99_under(p99: av.Latency, limit: float, what: str) -> None:
    """Missed only by what the machine held the slow writes up (the harness's own stalls, the
    members' waits for a CPU): inconclusive."""
    claim = f"{what} p99 during the outage under {limit:g} ms"
    if p99.value >= limit / 1000 and p99.unhindered < limit / 1000:
        raise judge.Inconclusive(f"{claim}: inconclusive, {p99.describe()}, but {p99.unhindered * 1000:.1f} ms less "
                                 "what the machine held each write up: the harness's own stalls (its canary woke "
                                 "late) and the members' waits for a CPU (their cgroup's CPU pressure)")
    seen = p99.describe()
    if p99.unhindered < p99.value:
        seen += f", {p99.unhindered * 1000:.1f} ms less what the machine held each write up"
    judge.holds(p99.value < limit / 1000, claim, seen=seen)


def p99_at_least(p99: av.Latency, limit: float, what: str) -> None:
    """The fault is felt: the slowest writes took at least this, measured. A failed write has no
    latency to show it (it may have failed at once): counted as the fastest here, it cannot pass
    a bound it never measured."""
    judge.holds(p99.low >= limit / 1000, f"{what} p99 during the outage at least {limit:g} ms",
                seen=p99.describe(measured=True))


@then(parsers.parse("the 99th percentile of write latency during the outage is under {limit:g} ms"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """Every write begun during the outage, a failed one as slow as the bound: fails when their 99th
    percentile reaches it, inconclusive when only the machine's hold-ups made it."""
    p99_under(write_p99(probe, outage, timeline, "write latency", "under"), limit, "write latency")


@then(parsers.parse("the 99th percentile of write latency during the outage is at least {limit:g} ms"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """The fault is felt: the measured 99th percentile of the writes during the outage reaches the
    bound (a failed write counts as the fastest)."""
    p99_at_least(write_p99(probe, outage, timeline, "write latency", "at least"), limit, "write latency")


def await_end_reports(probe: AvailabilityProbe, timeline: Timeline, at: float) -> None:
    """Wait until every member has answered a status request begun at or after `at`, from any
    vantage, or until END_GRACE (and a request's timeout) has passed: the reports a verdict about
    the leadership at the window's end reads."""
    h = probe.history
    first_within(lambda: True if not lead.end_view(h.samples, h.members, at, END_GRACE).unseen else None,
                 "every member's status at the window's end", max(0.0, at + END_GRACE + probe.timeout - timeline.now()),
                 interval=0.02)


@then("the etcd leader does not change")
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> None:
    """The leader before led throughout, in the same raft term (a re-election of the same member is
    a change too), judged from every vantage's reports: none may show a change, and the leader
    must be seen still leading in its term, with a majority in it, at the window's end."""
    end = outage.healed_at or timeline.now()
    await_end_reports(probe, timeline, end)
    kept = lead.leader_kept(probe.history.samples, outage.start, end, outage.leader_before, outage.leader_id_before,
                            outage.term_before, probe.history.members, probe.history.member_ids, END_GRACE)
    what = f"the leader before the outage ({outage.leader_before}, term {outage.term_before}) led throughout it"
    judge.none_of([f"{t:.2f} s: {why}" for t, why in kept.contrary], f"{what}: reports of another leadership")
    judge.holds(kept.proven, f"{what}: not shown", seen=kept.why_unproven())


@then(parsers.parse("the leader is deposed within {limit:g} s of the return"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """A member that was cut off comes back with a higher raft term and forces an election (what
    pre-vote exists to prevent): within `limit` s, a report of a leader elected above the term
    before the outage, or of the leader before leading no more. A member alone in a higher term
    is a candidate that may never have won: no proof."""
    judge.holds(outage.healed_at is not None, "the outage ended (a When-step brought it back)", seen=outage.returned)
    assert outage.healed_at is not None
    # A fault held longer than the scenario said is given that much longer: its members' connections
    # backed off longer, and speak again later.
    wait = outage.healed_at + limit + outage.held_over() + 0.5 - timeline.now()
    if wait > 0:
        time.sleep(wait)
    deposed_within(probe.history.samples, probe.history.member_ids, outage, limit)


def deposed_within(samples: list[Sample], member_ids: dict[int, str], outage: Outage, limit: float) -> None:
    """The leader before the outage deposed within `limit` s of its return; deposed later, but no
    later than the fault was held past what the scenario said, is Inconclusive."""
    __tracebackhide__ = True
    assert outage.healed_at is not None
    healed, held_over = outage.healed_at, outage.held_over()
    end = healed + limit + held_over
    gone = lead.deposed(samples, healed, end, outage.leader_before, outage.leader_id_before, outage.term_before)
    what = (f"the leader before the outage ({outage.leader_before}, term {outage.term_before}) deposed within "
            f"{limit:g} s of the return: a leader elected in a raft term above {outage.term_before}, or it leading "
            "no more")
    if gone is not None:
        judge.resolved(gone.end - healed - limit, 0.0, what, f"seen {gone.end - healed:.3f}s after the return",
                       held_over=held_over)
    seen = gone or sorted({(s.term, lead.named(s.leader, member_ids)) for s in lead.reports(samples, healed, end)})
    judge.holds(gone is not None and gone.end <= healed + limit, what, seen=seen)


@then("a leader exists in a surviving zone")
def _(etcd: EtcdCluster, outage: Outage) -> None:
    """Within the time members get to be ready, a quorum of the cluster's members among the
    survivors agree on a leader among them. A quorum, not the survivors alone: a leader cut off
    from its quorum still says it leads, to itself, until its check-quorum steps it down an
    election timeout or two later."""
    survivors = [m.name for m in etcd.members if m.zone not in outage.zones]
    quorum = len(etcd.members) // 2 + 1
    seen: dict[str, object] = {}

    def agreed() -> str | None:
        statuses = etcd.status()
        seen.update({n: statuses[n] if isinstance(statuses[n], str) else f"leader {statuses[n].leader}"
                     for n in survivors})
        answered = {n: s for n in survivors if not isinstance(s := statuses[n], str)}
        leader = etcd.leader(answered)
        if leader is None or etcd.member(leader).zone in outage.zones:
            return None
        agreeing = [n for n, s in answered.items() if s.leader == answered[leader].member_id]
        return leader if len(agreeing) >= quorum else None

    leader = first_within(agreed, "the surviving members to agree on a leader", etcd.config.timeouts.member_ready)
    judge.holds(leader is not None, f"a quorum ({quorum} of {len(etcd.members)}) of the surviving members agree on a "
                                    "leader in a surviving zone", seen=seen)


@then("linearizable writes fail during the outage")
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> None:
    """From the last fault's effect to the return: no write acknowledged, and some attempted."""
    last_cut = max((f.effective_at for f in outage.faults), default=outage.start)
    acked, failed = av.writes_failed_between(probe.history.samples, last_cut, outage.healed_at or timeline.now())
    judge.equal(acked, 0, f"writes acknowledged during the outage ({failed} failed)")
    judge.holds(failed > 0, "writes were attempted during the outage", seen=failed)


@then(parsers.parse('serializable reads from the member in zone "{zone}" are still served'))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, zone: str) -> None:
    """Every serializable read the probe asked of that zone's members during the outage was served."""
    last_cut = max((f.effective_at for f in outage.faults), default=outage.start)
    judge.holds(bool(etcd.members_in(zone)), f"zone {zone} has a member to read from", seen=[m.name for m in etcd.members])
    for m in etcd.members_in(zone):
        served, failed = av.reads_served(probe.history.samples, m.name, last_cut, outage.healed_at or timeline.now())
        judge.holds(served > 0 and failed == 0, f"every serializable read of {m.name} served during the outage",
                    seen={"served": served, "failed": failed})


@then(parsers.parse("writes resume within {limit:g} s of its return"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """The first write acknowledged after the return came within the bound (more when the fault was
    held past what the scenario said); missed by the harness's stalls or its sampling: inconclusive."""
    assert outage.healed_at is not None, "no zone came back in this scenario"
    held_over = outage.held_over()
    after = _await(lambda: av.first_ack_after(probe.history.samples, outage.healed_at), limit + held_over,
                   "an acknowledged write")
    timeline.mark("figure", "time from the return to the first acknowledged write", value=after, unit="s")
    samples = probe.history.samples
    judge.at_most(after, limit, "time from the return to the first acknowledged write",
                  seen=av.requests_since(samples, "write", outage.healed_at),
                  harness_stalled=av.stalled(samples, outage.healed_at, outage.healed_at + (after or 0.0)),
                  sampled=av.write_resumed_unseen(samples, outage.healed_at + after, outage.healed_at) if after else 0.0,
                  held_over=held_over)


def _catch_up(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, names: list[str], limit: float) -> None:
    __tracebackhide__ = True
    assert outage.healed_at is not None, "nothing came back in this scenario"
    h, healed = probe.history, outage.healed_at
    target = av.highest_revision(h.samples, healed)
    asked = [s for s in h.samples if s.kind in ("write", "status") and s.end <= healed]
    judge.holds(target > 0, "a revision answered before the zone returned, for its member to catch up to",
                seen=av.requests_seen(asked))
    # A fault held longer than the scenario said is given that much longer to be caught up after.
    held_over = outage.held_over()
    for name in names:
        took = _await(lambda: av.catch_up_time(h.samples, name, healed, target), limit + held_over,
                      f"{name} to catch up")
        timeline.mark("figure", f"catch-up time of {name}", value=took, unit="s")
        judge.at_most(took, limit, f"catch-up of {name} to revision {target} (the highest seen when it returned)",
                      seen=av.requests_since(h.samples, "status", healed, name),
                      harness_stalled=av.stalled(h.samples, healed, healed + (took or 0.0)),
                      sampled=av.status_seen_late(h.samples, name, healed + took, healed) if took else 0.0,
                      held_over=held_over)


@then(parsers.parse("its member catches up within {limit:g} s"))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """Each member of the zones that returned reports the highest revision answered before the
    return within the bound, from its status requests."""
    names = [m.name for z in outage.returned for m in etcd.members_in(z)]
    judge.holds(bool(names), f"the zones that returned ({', '.join(outage.returned) or 'none'}) have a member",
                seen=[f"{m.name} in {m.zone}" for m in etcd.members])
    _catch_up(probe, outage, timeline, names, limit)


@then(parsers.parse('member "{member}" catches up within {limit:g} s'))
def _(etcd: EtcdCluster, probe: AvailabilityProbe, outage: Outage, timeline: Timeline, member: str,
      limit: float) -> None:
    """As `its member catches up within N s`, for one named member."""
    _catch_up(probe, outage, timeline, [etcd.member(member).name], limit)


def equal_hashes(etcd: EtcdCluster, what: str) -> None:
    """Once writes stopped, the members reach one revision and hold the same keys at it (HashKV,
    or their histories where the gateway has no HashKV). Members that stay apart are compared at
    the highest revision they all hold: one that applied an entry twice or skipped one holds other
    keys there, and that split is the verdict."""
    __tracebackhide__ = True
    revisions, together = settled_revisions(etcd, etcd.config.timeouts.recovery)
    judge.holds(all(isinstance(r, int) for r in revisions.values()),
                f"{what} reach one revision once writes stopped", seen=revisions)
    lowest = min(int(r) for r in revisions.values())
    apart = "" if together else f", the highest they all hold (they never reached one revision: {revisions})"
    try:
        how, split = store_split(stores_at(etcd, lowest))
    except HarnessError as e:  # compacted there, or a member gone meanwhile
        judge.holds(together, f"{what} reach one revision once writes stopped (not compared at revision "
                              f"{lowest}: {e})", seen=revisions)
        raise
    judge.holds(not split, f"{what} whose {how} differs at revision {lowest}{apart}", seen=split)
    judge.holds(together, f"{what} reach one revision once writes stopped (at revision {lowest}, the highest "
                          f"they all hold, their {how} agree)", seen=revisions)


def elections(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> tuple[lead.Elections, float]:
    """Leader elections during the outage, as far as every vantage's reports tell (at least those
    seen won, at most those the majority's terms at the end leave room for), and the outage's
    length in minutes: counted from the earliest the fault may have taken effect, the minutes
    from when it was seen (neither end of the bracket flatters a rate)."""
    end = outage.healed_at or timeline.now()
    await_end_reports(probe, timeline, end)
    found = lead.elections(probe.history.samples, outage.start, end, outage.term_before,
                           probe.history.members, probe.history.member_ids, END_GRACE)
    minutes = max(0.0, end - outage.effect_seen) / 60
    timeline.mark("figure", "leader elections during the outage", value=found.at_least, unit="",
                  at_most=found.at_most, minutes=round(minutes, 3))
    return found, minutes


def at_most_elections(found: lead.Elections, allowed: float, what: str) -> None:
    """Fails on more elections seen than allowed, and on reports that cannot rule more out."""
    __tracebackhide__ = True
    judge.holds(found.at_least <= allowed, what, found.describe())
    judge.holds(found.at_most is not None and found.at_most <= allowed,
                f"{what}: the reports cannot rule out more", found.describe())


@then(parsers.parse("at most {count:d} leader elections happen per minute of the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    """Elections from the probe's reports over the outage, scaled to its length: fails on more, and
    on reports that cannot rule more out."""
    found, minutes = elections(probe, outage, timeline)
    at_most_elections(found, count * minutes, f"at most {count} elections a minute over {minutes * 60:.1f} s")


@then(parsers.parse("at least {count:d} leader elections happen during the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    """At least that many elections seen in the probe's reports over the outage."""
    found, minutes = elections(probe, outage, timeline)
    judge.holds(found.at_least >= count, f"at least {count} elections over {minutes * 60:.1f} s", found.describe())


@then(parsers.parse("the raft term rises at least {count:d} times during the outage"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    """Campaigns, won or not: the highest term any member was in during the outage, less the one
    before (what pre-vote keeps a member that cannot win from doing)."""
    found, minutes = elections(probe, outage, timeline)
    top = found.highest.term if found.highest is not None and found.highest.term is not None else outage.term_before
    timeline.mark("figure", "raft term rises during the outage", value=top - outage.term_before, unit="")
    judge.holds(top - outage.term_before >= count, f"the raft term rose at least {count} times over "
                f"{minutes * 60:.1f} s: from {outage.term_before} to {top}", found.describe())


@then("etcd raises its NOSPACE alarm")
def _(etcd: EtcdCluster, outage: Outage, timeline: Timeline) -> None:
    """etcd's alarm list shows NOSPACE within 5 s."""
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
def _(env: Environment, etcd: EtcdCluster, outage: Outage, timeline: Timeline, member: str, limit: float) -> None:
    """Its process gone, seen every 50 ms from the outage's effect."""
    if not isinstance(env, MemberProcesses):
        raise CapabilityMissing("this environment cannot tell whether a member's process runs")
    name = etcd.member(member).name
    polled = poll_within(lambda: env.member_running(name), lambda running: not running, f"{name} stopped", limit,
                         start=timeline.base + outage.start)
    when = polled.first_held()
    timeline.mark("figure", f"{name} stopped after the outage's effect", value=when[1] if when else None, unit="s")
    judge.within(polled, f"time until {name} stopped", show=lambda running: "it still ran" if running else "stopped")


@then("all members end with equal HashKV")
def _(etcd: EtcdCluster, probes: Probes, loads: Loads, timeline: Timeline) -> None:
    """Once every writer stopped (the probes and every load: a write still going keeps the members
    apart), the members reach one revision and agree on HashKV at it."""
    from harness.steps.load import stop_loads  # a step module of its own, registered after this one

    probes.stop_all()
    stop_loads(loads, timeline)
    equal_hashes(etcd, "members")


@then("no acknowledged write is lost")
def _(etcd: EtcdCluster, probes: Probes, probe: AvailabilityProbe, timeline: Timeline) -> None:
    """Once the probes stopped and the members reached one revision, each member's keys under the
    probe's prefix are read: a write the probe saw acknowledged missing on any member fails, and so
    does a member that does not answer."""
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
