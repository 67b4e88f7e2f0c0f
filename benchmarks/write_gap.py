"""Measure the write gap for a leader-zone and a follower-zone outage on the local region.

    python benchmarks/write_gap.py [--runs N]

Prints, per run: outage kind, write gap, time to a new leader, catch-up time after heal.
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe
from harness.probes.etcd import hashkv
from harness.providers.local.region import LocalRegion
from harness.timeline import Timeline
from harness.validate import availability as av


def one_run(env, which: str) -> dict[str, float | None]:
    timeline = Timeline()
    leader = env.leader(env.wait_healthy())
    leader_zone = env.member(leader).zone
    zones = [z for z in env.zones if z != leader_zone]
    target = leader_zone if which == "leader" else zones[0]
    via = zones[-1]
    probe = AvailabilityProbe(env, timeline, via).start()
    time.sleep(1.0)
    runner = FaultRunner(env, timeline)
    old_id = next(i for i, n in probe.history.member_ids.items() if n == leader)
    fault = runner.inject("zone-outage", target)
    t_fault = fault.event.start
    time.sleep(4.0)
    t_heal = timeline.now()
    target_rev = av.highest_revision(probe.history.samples, t_heal)
    runner.heal(fault)
    time.sleep(3.0)
    history = probe.stop()
    gap = av.longest_write_gap(history.samples, t_fault, t_heal)
    new = av.new_leader_after(history.samples, t_fault, old_id, history.member_ids)
    isolated = env.members_in(target)[0].name
    return {
        "gap": gap.length if gap else None,
        "new_leader": new[0] if new else None,
        "catch_up": av.catch_up_time(history.samples, isolated, t_heal, target_rev),
        "hash_equal": float(len(set(hashkv(env).values())) == 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bw"}))
    region.down()
    env = region.up()
    try:
        for which in ("leader", "follower"):
            rows = [one_run(env, which) for _ in range(args.runs)]
            for i, r in enumerate(rows):
                print(f"{which}-zone outage run {i + 1}: " + ", ".join(f"{k}={v if v is None else round(v, 3)}" for k, v in r.items()))
            gaps = [r["gap"] for r in rows if r["gap"] is not None]
            if gaps:
                print(f"{which}-zone outage write gap: median {statistics.median(gaps):.3f}s, max {max(gaps):.3f}s over {len(gaps)} runs")
    finally:
        region.down()


if __name__ == "__main__":
    main()
