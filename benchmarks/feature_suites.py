"""Wall time of the feature suites: `pytest -k outage` (every outage scenario on the local
region) and `pytest -m placement` (the reference control plane placed by the real scheduler).

    python benchmarks/feature_suites.py [--suite outage|placement|both]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

SUITES = {"outage": ["-k", "outage"], "placement": ["-m", "placement"]}


def run(name: str) -> None:
    root = Path(__file__).parents[1]
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", *SUITES[name], "-q", "features"], cwd=root,
                          capture_output=True, text=True)
    took = time.monotonic() - t
    print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:])
    print(f"pytest {' '.join(SUITES[name])}: {took:.1f}s wall (exit {proc.returncode})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", choices=[*SUITES, "both"], default="both")
    args = parser.parse_args()
    for name in SUITES if args.suite == "both" else [args.suite]:
        run(name)


if __name__ == "__main__":
    main()
