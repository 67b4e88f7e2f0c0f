"""The chaos job: every zone goes down in turn under probes; figures are judged and reported."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe
from harness.errors import HarnessError
from harness.probes.converge import converged_keys
from harness.probes.etcd import hashkv
from harness.providers.local.region import LocalEnvironment
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.validate.history import diverging_hashes, lost_writes, seqs_from_keys
from harness.wait import first_within

# Defaults of the job; the Gherkin features state their own thresholds in their text.
MAX_WRITE_GAP = 3.0
MAX_CATCH_UP = 10.0


@dataclass
class OutageResult:
    zone: str
    had_leader: bool
    via_zone: str
    write_gap: float | None
    new_leader_after: float | None
    new_leader: str | None
    catch_up: float | None
    lost_writes: int
    hashes_equal: bool
    acked_writes: int

    def problems(self) -> list[str]:
        out = []
        if self.write_gap is None:
            out.append("writes did not resume after the outage")
        elif self.write_gap > MAX_WRITE_GAP:
            out.append(f"write gap {self.write_gap} s > {MAX_WRITE_GAP} s")
        if self.catch_up is None or self.catch_up > MAX_CATCH_UP:
            out.append(f"catch-up {self.catch_up} s > {MAX_CATCH_UP} s")
        if self.lost_writes:
            out.append(f"{self.lost_writes} acknowledged write(s) lost")
        if not self.hashes_equal:
            out.append("members' HashKV differ")
        return out


def zone_outage(env: LocalEnvironment, zone: str, outage: float, settle: float = 1.0) -> OutageResult:
    """Take `zone` down for `outage` seconds under probes from another zone; heal; measure."""
    timeline = Timeline()
    leader = env.leader(env.wait_healthy())
    via = next(z for z in env.zones if z != zone)
    probe = AvailabilityProbe(env, timeline, via).start()
    try:
        time.sleep(settle)
        old_id = next(i for i, n in probe.history.member_ids.items() if n == leader)
        runner = FaultRunner(env, timeline)
        try:
            fault = runner.inject("zone-outage", zone)
            time.sleep(outage)
            t_heal = timeline.now()
            target = av.highest_revision(probe.history.samples, t_heal)
        finally:
            runner.heal()
        # A short outage can end during the election it caused: the gap then outlasts the
        # outage, so keep probing until writes are back (or the bound is clearly missed).
        first_within(lambda: av.first_ack_after(probe.history.samples, t_heal), "writes to resume", MAX_WRITE_GAP + 1)
        time.sleep(settle)
        isolated = env.members_in(zone)

        def slowest() -> float | None:
            times = [av.catch_up_time(probe.history.samples, m.name, t_heal, target) for m in isolated]
            return None if None in times else max(t for t in times if t is not None)

        catch_up = first_within(slowest, f"the members of {zone} to catch up", MAX_CATCH_UP) if isolated else None
    finally:
        history = probe.stop()
    gap = av.longest_write_gap(history.samples, fault.event.start, t_heal)
    new = av.new_leader_after(history.samples, fault.event.start, old_id, history.member_ids)
    lost: set[int] = set()
    for member, keys in converged_keys(env, history.prefix, env.config.timeouts.recovery).items():
        if isinstance(keys, str):
            raise HarnessError(f"could not read back the probe's keys from {member}: {keys}")
        lost |= set(lost_writes(history.acked(), seqs_from_keys(keys, history.prefix)))
    return OutageResult(
        zone=zone,
        had_leader=env.member(leader).zone == zone,
        via_zone=via,
        write_gap=round(gap.length, 3) if gap else None,
        new_leader_after=round(new[0], 3) if new else None,
        new_leader=new[1] if new else None,
        catch_up=round(catch_up, 3) if catch_up is not None else (0.0 if not isolated else None),
        lost_writes=len(lost),
        hashes_equal=not diverging_hashes(hashkv(env)),
        acked_writes=len(history.acked()),
    )


def run_all(env: LocalEnvironment, outage: float, report: Path) -> int:
    results = []
    for zone in env.zones:
        print(f"[harness] zone {zone} down for {outage:.1f}s ...", flush=True)
        r = zone_outage(env, zone, outage)
        results.append(r)
        verdict = "ok" if not r.problems() else "FAIL: " + "; ".join(r.problems())
        leader = f"new leader {r.new_leader} after {r.new_leader_after}s" if r.new_leader else "no leader change"
        print(f"  {'leader' if r.had_leader else 'follower'} zone; write gap {r.write_gap}s; {leader}; catch-up {r.catch_up}s; "
              f"{r.acked_writes} acked, {r.lost_writes} lost; HashKV {'equal' if r.hashes_equal else 'DIFFER'} -> {verdict}")
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"etcd": env.state["etcd"], "outage_s": outage,
                                  "results": [asdict(r) | {"problems": r.problems()} for r in results]}, indent=1))
    print(f"report: {report}")
    return 1 if any(r.problems() for r in results) else 0
