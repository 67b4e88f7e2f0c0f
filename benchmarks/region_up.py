"""Wall time of `harness up` and `harness down` for the default local region.

    python benchmarks/region_up.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import time

from harness.config import load_config
from harness.providers.local.region import LocalRegion


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bu"}))
    region.down()
    ups, downs = [], []
    for _ in range(args.runs):
        t = time.monotonic()
        region.up()  # returns once every member is healthy with one leader
        ups.append(time.monotonic() - t)
        t = time.monotonic()
        region.down()
        downs.append(time.monotonic() - t)
    print(f"harness up (3 zones, 6 nodes, 3 members, healthy with a leader): median {statistics.median(ups):.3f}s, "
          f"min {min(ups):.3f}s, max {max(ups):.3f}s over {args.runs} runs")
    print(f"harness down: median {statistics.median(downs):.3f}s, max {max(downs):.3f}s")


if __name__ == "__main__":
    main()
