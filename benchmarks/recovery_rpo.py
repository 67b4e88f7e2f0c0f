"""RPO and RTO of a permanent quorum loss, at several delta snapshot periods.

    python benchmarks/recovery_rpo.py [--deltas 1,5,30] [--runs 3] [--interval 0.01]

Per delta period D and run: a region of its own with a backup sidecar beside each member
([region] backups, delta snapshots every D s); the harness's write probe writes every `interval`
seconds from zone-a; after a random 2D-3D s (so the loss falls anywhere in a delta period) the
volumes of the leader and one follower are lost with their pods (the volume-loss fault's
LocalEnvironment.lose_member_data), and the cluster is restored from its backups at once
(restore_from_backups: the store's chain compacted into one snapshot, every member restored from it).
Printed per run:
  RPO: acknowledged writes lost, and the seconds they span;
  RTO: from the loss to the first write acknowledged again, and the restore's own seconds
  (compaction, restore) within it.
An operator's time to confirm that the loss is permanent is not in it: the restore begins at once.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.probes.availability import AvailabilityProbe  # noqa: E402
from harness.probes.converge import converged_keys  # noqa: E402
from harness.providers.local.region import LocalEnvironment, LocalRegion  # noqa: E402
from harness.timeline import Timeline  # noqa: E402
from harness.validate import availability as av  # noqa: E402


def one_run(env: LocalEnvironment, delta: float, interval: float) -> dict[str, float]:
    timeline = Timeline()
    probe = AvailabilityProbe(env, timeline, "zone-a", interval).start()
    time.sleep(random.uniform(2 * delta, 3 * delta))
    leader = env.leader(env.wait_healthy())
    follower = next(m.name for m in env.members if m.name != leader)
    lost_at = timeline.now()
    env.lose_member_data(str(leader))
    env.lose_member_data(follower)
    gone = timeline.now()  # both pods gone: no write is acknowledged after this until the restore
    done = env.restore_from_backups()
    back = None
    while back is None and timeline.now() - lost_at < 120:
        time.sleep(0.05)
        back = av.first_ack_after(probe.history.samples, gone)
    history = probe.stop()
    keys = next(v for v in converged_keys(env, history.prefix, 30.0).values() if isinstance(v, list))
    rpo = av.writes_lost(history.samples, history.prefix, keys)
    return {"acked": len(history.acked()), "lost": rpo.count, "lost_s": rpo.seconds,
            "rto_s": (gone - lost_at + back) if back is not None else float("nan"), "compaction_s": done["compaction_s"],
            "restore_s": done["restore_s"], "deltas": done["deltas"], "events": done["events"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deltas", default="1,5,30", help="delta snapshot periods, seconds")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--interval", type=float, default=0.01, help="seconds between probe writes")
    args = ap.parse_args()
    for delta in (float(d) for d in args.deltas.split(",")):
        rows = []
        for i in range(args.runs):
            region = LocalRegion(load_config(overrides={"region.name": "brpo", "region.backups": True,
                                                        "region.delta_snapshot_period_s": delta}))
            region.down()
            env = region.up()
            try:
                r = one_run(env, delta, args.interval)
            finally:
                region.down()
            rows.append(r)
            print(f"delta {delta:g} s, run {i + 1}: {r['acked']} writes acknowledged, {r['lost']} lost spanning "
                  f"{r['lost_s']:.2f} s; writes back {r['rto_s']:.2f} s after the loss (compaction "
                  f"{r['compaction_s']:.2f} s of {r['deltas']} deltas / {r['events']} events, restore "
                  f"{r['restore_s']:.2f} s)", flush=True)
        med = {k: statistics.median(r[k] for r in rows) for k in ("lost", "lost_s", "rto_s")}
        print(f"delta {delta:g} s, median of {len(rows)}: RPO {med['lost']:.0f} writes / {med['lost_s']:.2f} s, "
              f"RTO {med['rto_s']:.2f} s", flush=True)


if __name__ == "__main__":
    main()
