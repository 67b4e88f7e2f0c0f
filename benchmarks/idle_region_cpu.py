"""What an idle local region costs the machine: CPU of each of its processes while nothing happens.

    python benchmarks/idle_region_cpu.py [--seconds N] [--settle N] [--no-seed] [--no-cloud]

Brings up region "ic" with its seed and its local cloud (as a session does once a scenario used
them), waits `--settle` s, then reads every process's CPU time from /proc over `--seconds` s and
prints the region's total and its ten busiest processes, in percent of one core. Every scenario
after the first that started the seed or the cloud runs beside this load.
"""

from __future__ import annotations

import argparse
import os
import time

from harness.config import load_config
from harness.providers.local.region import LocalRegion

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_times() -> dict[int, tuple[int, str]]:
    """pid -> (user + system ticks, command line) of every process now."""
    seen: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # gone meanwhile
        seen[int(entry)] = (int(fields[11]) + int(fields[12]), command)
    return seen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=15.0)
    ap.add_argument("--no-seed", action="store_true")
    ap.add_argument("--no-cloud", action="store_true")
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "ic", "region.subnet_prefix": "10.96"}))
    region.down()
    env = region.up()
    try:
        if not args.no_seed:
            region.seed(env)
        if not args.no_cloud:
            region.cloud(env)
        time.sleep(args.settle)
        me = os.getpid()
        before, t0 = cpu_times(), time.monotonic()
        time.sleep(args.seconds)
        after, took = cpu_times(), time.monotonic() - t0
        rows = sorted(((after[p][0] - before[p][0]) / TICKS / took * 100, after[p][1])
                      for p in after if p in before and p != me)[::-1]
        parts = " + ".join(p for p, off in (("seed", args.no_seed), ("cloud", args.no_cloud)) if not off)
        print(f"idle region ({' + '.join(['etcd', parts]) if parts else 'etcd'}), {args.seconds:.0f} s after "
              f"{args.settle:.0f} s settling: {sum(r[0] for r in rows):.1f}% of one core in all processes")
        for percent, command in rows[:10]:
            print(f"  {percent:5.1f}%  {command[:110]}")
    finally:
        region.down()


if __name__ == "__main__":
    main()
