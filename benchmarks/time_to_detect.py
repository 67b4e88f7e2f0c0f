"""Time to detect per detector, for a zone outage and a one-way partition of a zone.

    python benchmarks/time_to_detect.py [--runs 3] [-k shoot_control_plane]

Runs the scenarios of features/detect.feature (`-k` narrows them) `--runs` times, each run a
pytest session of its own with a report, and reads each scenario's time-to-detect table from
its summary.json: per detector, the time from the fault's effect to its first "failing" verdict
(median and max over the runs, and in how many runs it never said so), per kind of detector and
zone (the first of them to see it), and the time each write probe first saw a write fail. Scenarios whose steps failed are counted too: the figures are what
the detectors did, not whether the bounds held.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_once(out: Path, select: str) -> list[dict]:
    config = out / "harness.toml"
    config.write_text(f'[paths]\nreports_dir = "{out / "reports"}"\n')
    argv = [sys.executable, "-m", "pytest", "features/test_features.py", "-m", "detect", "-k", select,
            "--region-name", "td", "--harness-config", str(config), "--harness-report", "-p", "no:cacheprovider",
            "-q", "--tb=line"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-400:], flush=True)
    found = sorted((out / "reports").glob("*/summary.json"))
    return json.loads(found[-1].read_text()).get("scenarios", []) if found else []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-k", dest="select", default="detectors_see_it", help="pytest -k over the test names")
    args = ap.parse_args()
    # Per scenario, per kind of detector and zone (pods and member names change from run to run):
    # the first of that zone's detectors of the kind to say "failing", in each run.
    seen: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ttd-") as tmp:
            for s in run_once(Path(tmp), args.select):
                firsts: dict[str, float | None] = {}
                for row in s.get("time_to_detect", []):
                    kind = row["detector"] if row["detector"].startswith("first failed") else row["detector"].split()[0]
                    key, at = f'{kind} ({row["zone"]})', row["detected_after_s"]
                    known = firsts.get(key)
                    firsts[key] = at if known is None else (known if at is None else min(known, at))
                for key, at in firsts.items():
                    seen[s["name"]][key].append(at)
    for scenario, rows in seen.items():
        print(f"\n{scenario}\n{'detector (the first of its kind in the zone)':<58} {'median s':>9} {'max s':>7} "
              f"{'never':>6}")
        for name, values in sorted(rows.items(), key=lambda kv: statistics.median([v for v in kv[1] if v is not None]
                                                                                   or [1e9])):
            got = [v for v in values if v is not None]
            med = f"{statistics.median(got):.2f}" if got else "-"
            top = f"{max(got):.2f}" if got else "-"
            print(f"{name[:58]:<58} {med:>9} {top:>7} {len(values) - len(got):>3}/{len(values)}")


if __name__ == "__main__":
    main()
