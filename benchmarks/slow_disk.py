"""Write latency when one member's disk is slow: on the leader, on a follower.

    python benchmarks/slow_disk.py [--runs N] [--delays 0,50,100] [--seconds S]

A region of 3 members built with etcd's gofail failpoints comes up once (backend committed every
100 ms, as features/disk.feature runs it). Each run makes every save of one member's write-ahead
log wait the given milliseconds (the `raftBeforeSave` failpoint, as `When every save of member
"etcd-0"'s log waits 100 ms`) for --seconds under write probes every 10 ms from the leader's
zone, and prints the probe writes' p50 / p99 / max latency (a failed write counted as slower than
any: harness.validate.availability.write_latency), the failed writes and the leader changes.
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.validate import availability as av


def one_run(env: LocalEnvironment, slow: str, delay_ms: int, seconds: float) -> dict[str, float]:
    statuses = env.wait_healthy()
    leader = env.member(env.leader(statuses))  # type: ignore[arg-type]
    member = leader if slow == "leader" else next(m for m in env.members if m.name != leader.name)
    timeline = Timeline()
    probe = AvailabilityProbe(env, timeline, leader.zone, interval=0.01).start()
    runner = FaultRunner(env, timeline)
    try:
        time.sleep(1.0)
        start = timeline.now()
        if delay_ms:
            start = runner.inject("member-failpoint", member.name,
                                  {"name": "raftBeforeSave", "action": f"sleep({delay_ms})"}).effective_at
        time.sleep(seconds)
        end = timeline.now()
    finally:
        runner.heal(wait=False)
    time.sleep(probe.timeout + 0.05)
    history = probe.stop()
    env.wait_healthy(env.config.timeouts.recovery)
    figures = {q: av.write_latency(history.samples, start, end, q) for q in (0.5, 0.99, 1.0)}
    leaders = av.leader_changes(history.samples, start, end)
    return {"p50_ms": figures[0.5].value * 1000, "p99_ms": figures[0.99].value * 1000,
            "max_ms": figures[1.0].value * 1000, "writes": figures[0.99].writes, "failed": figures[0.99].failed,
            "leaders": len(leaders)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--delays", default="0,50,100")
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bsd", "etcd.failpoints": True,
                                                "etcd.backend_batch_interval_ms": 100}))
    region.down()
    env = region.up()
    try:
        for delay in (int(d) for d in args.delays.split(",")):
            for slow in ("leader", "follower"):
                rows = []
                for i in range(args.runs):
                    r = one_run(env, slow, delay, args.seconds)
                    rows.append(r)
                    print(f"{slow} saves +{delay} ms, run {i + 1}: p50 {r['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} ms, "
                          f"max {r['max_ms']:.1f} ms over {r['writes']} writes ({r['failed']} failed), "
                          f"{r['leaders']} leader(s)", flush=True)
                print(f"{slow} saves +{delay} ms: median p99 {statistics.median(r['p99_ms'] for r in rows):.1f} ms, "
                      f"median p50 {statistics.median(r['p50_ms'] for r in rows):.1f} ms over {len(rows)} runs",
                      flush=True)
    finally:
        region.down()


if __name__ == "__main__":
    main()
