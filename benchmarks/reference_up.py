"""Time to a placed reference control plane on the local seed, from nothing.

    python benchmarks/reference_up.py [--runs N] [--tolerance zone] [--form gep20]

Per run: `harness up --kubernetes` (region, seed, 6 kwok nodes Ready), then `harness deploy`
(reference applied, every pod Running or Pending for the scheduler), then `harness down`.
Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = [sys.executable, "-m", "harness.cli", "--name", "bref"]


def timed(*args: str, env: dict[str, str]) -> float:
    started = time.monotonic()
    proc = subprocess.run([*HARNESS, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"harness {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tolerance", default="zone")
    parser.add_argument("--form", default="gep20")
    args = parser.parse_args()
    # The seed's context goes into a throwaway kubeconfig, not the user's; removed however the runs end.
    with tempfile.TemporaryDirectory(prefix="bref-") as tmp:
        return runs(args, dict(os.environ, KUBECONFIG=str(Path(tmp) / "config")))


def runs(args: argparse.Namespace, env: dict[str, str]) -> int:
    timed("down", env=env)
    totals = []
    for i in range(args.runs):
        up = timed("up", "--kubernetes", env=env)
        deploy = timed("deploy", "--tolerance", args.tolerance, "--form", args.form, env=env)
        down = timed("down", env=env)
        totals.append(up + deploy)
        print(f"run {i + 1}: up --kubernetes {up:.1f}s + deploy ({args.tolerance}, {args.form}) {deploy:.1f}s "
              f"= {up + deploy:.1f}s to a placed reference control plane; down {down:.1f}s")
    print(f"median {statistics.median(totals):.1f}s, min {min(totals):.1f}s, max {max(totals):.1f}s over {len(totals)} run(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
