"""Write gap for a leader-zone and a follower-zone outage on the local region.

    python benchmarks/write_gap.py [--runs N] [--outage SECONDS]

Prints, per run: write gap, time to a new leader, catch-up time after heal.
"""

from __future__ import annotations

import argparse
import statistics

from harness.chaos_run import zone_outage
from harness.config import load_config
from harness.providers.local.region import LocalRegion


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--outage", type=float, default=4.0)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bw"}))
    region.down()
    env = region.up()
    try:
        for which in ("leader", "follower"):
            gaps = []
            for i in range(args.runs):
                leader_zone = env.member(env.leader(env.wait_healthy())).zone
                zone = leader_zone if which == "leader" else next(z for z in env.zones if z != leader_zone)
                r = zone_outage(env, zone, args.outage)
                gaps.append(r.write_gap)
                print(f"{which}-zone outage run {i + 1}: write gap {r.write_gap}s, new leader after "
                      f"{r.new_leader_after if r.new_leader_after is not None else '-'}s, catch-up {r.catch_up}s, lost {r.lost_writes}, HashKV equal {r.hashes_equal}")
            known = [g for g in gaps if g is not None]
            print(f"{which}-zone outage write gap: median {statistics.median(known):.3f}s, max {max(known):.3f}s "
                  f"over {len(known)} runs")
    finally:
        region.down()


if __name__ == "__main__":
    main()
