"""Wall time of `pytest -k outage` (every outage scenario on the local region).

    python benchmarks/outage_suite.py
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    root = Path(__file__).parents[1]
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-k", "outage", "-q", "features"], cwd=root,
                          capture_output=True, text=True)
    took = time.monotonic() - t
    print(proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:])
    print(f"pytest -k outage: {took:.1f}s wall (exit {proc.returncode})")


if __name__ == "__main__":
    main()
