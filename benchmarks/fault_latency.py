"""Inject-to-effect and heal-to-normal latency of the local region's faults.

    python benchmarks/fault_latency.py [--runs 9] [--kinds zone-outage,zone-link-cut,...]

For each fault, `--runs` times on an idle region of its own: inject-to-effect is from the
runner being asked to inject to the effect being observed (the router's counters showing drops,
the process seen stopped); heal-to-normal from the heal being asked for to every member
healthy, caught up and agreeing on a leader again. Printed per fault: median and max of both.
With member-power-loss among them, every member's data is on powerloss-fs ([region] power_loss_fs);
with backup-store-outage, the region takes backups ([region] backups) into its local cloud.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.providers.local.region import LocalRegion
from harness.timeline import Timeline

FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "zone-outage": ("zone-b", {}),
    "zone-link-cut": ("zone-a>zone-b", {}),
    "zone-link-cut bridge": ("zone-b<>zone-c", {}),
    "zone-link-loss": ("zone-a>*", {"loss_percent": 30}),
    "peer-blackhole": ("etcd-1", {}),
    "node-freeze": ("zone-b-1", {}),
    "member-pause": ("etcd-1", {"seconds": 60}),
    "member-power-loss": ("etcd-1", {}),
    "backup-store-outage": ("all", {}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--kinds", default=",".join(FAULTS))
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    # Members on powerloss-fs only when its fault is measured: every other fault's figures are on plain tmpfs.
    region = LocalRegion(load_config(overrides={"region.name": "bf",
                                                "region.power_loss_fs": "member-power-loss" in kinds,
                                                "region.backups": "backup-store-outage" in kinds}))
    region.down()
    env = region.up()
    try:
        print(f"{'fault':<22} {'inject-to-effect median/max (ms)':>34} {'heal-to-normal median/max (ms)':>32}")
        for name in kinds:
            target, options = FAULTS[name]
            kind = name.split()[0]
            effect, normal = [], []
            for _ in range(args.runs):
                timeline = Timeline()
                runner = FaultRunner(env, timeline)
                active = runner.inject(kind, target, options)
                effect.append((active.effective_at - active.event.start) * 1000)
                began = time.monotonic()
                runner.heal()  # returns once every member is healthy and caught up
                normal.append((time.monotonic() - began) * 1000)
            print(f"{name:<22} {statistics.median(effect):>24.0f} / {max(effect):>7.0f} "
                  f"{statistics.median(normal):>22.0f} / {max(normal):>7.0f}", flush=True)
    finally:
        region.down()


if __name__ == "__main__":
    main()
