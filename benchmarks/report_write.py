"""Time to write a run's report and its size, for a full suite's worth of timelines.

Uses the timelines in the newest reported run's runs/*.json (reports/latest/runs; without a
report, reports/runs), at least --scenarios of them, repeated when fewer; writes into a temporary
reports directory and prints the figures.

    python benchmarks/report_write.py [--scenarios 35] [--runs-dir reports/latest/runs]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.report import write_report  # noqa: E402
from tests.report.timelines import outage_timeline, traffic_timeline, write  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scenarios", type=int, default=35)
    p.add_argument("--runs-dir", type=Path, default=None)
    args = p.parse_args()
    if args.runs_dir is None:
        args.runs_dir = next((d for d in (Path("reports/latest/runs"), Path("reports/runs")) if d.is_dir()),
                             Path("reports/runs"))
    with tempfile.TemporaryDirectory(prefix="rp-bench-") as tmp:
        reports = Path(tmp)
        files = sorted(args.runs_dir.glob("*.json"))
        if not files:  # generated stand-ins when no suite has run here
            files = [write(reports / "gen" / f"{i}.json", (traffic_timeline if i % 4 == 3 else outage_timeline)(f"t::{i}"))
                     for i in range(args.scenarios)]
        chosen = [files[i % len(files)] for i in range(max(args.scenarios, 1))]
        records = []
        for i, f in enumerate(chosen):
            nodeid = json.loads(f.read_text()).get("nodeid", f.stem) + f"[{i}]"
            records.append({"nodeid": nodeid, "result": "failed" if i % 7 == 3 else "passed", "duration": 5.0,
                            "message": "ToleranceViolation: example" if i % 7 == 3 else None, "timeline": str(f),
                            "steps": [{"keyword": "Then", "name": "writes resume within 5 s of the outage",
                                       "failed": i % 7 == 3, "duration": 0.1}]})
        samples = sum(len(h.get("samples", [])) for f in chosen for h in json.loads(f.read_text()).get("histories", []))
        started = time.monotonic()
        index = write_report(reports, reports / "bench", "bench", records, {"provider": "local"},
                             {"started": "-", "exitstatus": 1, "interrupted": False, "not_run": []},
                             progress=lambda m: print(f"  {m}", file=sys.stderr))
        took = time.monotonic() - started
        size = sum(f.stat().st_size for f in index.parent.iterdir())
        print(f"scenarios: {len(records)} ({len(set(chosen))} distinct timelines, {samples} probe samples)")
        print(f"write_report: {took:.2f} s ({took / len(records) * 1000:.0f} ms per scenario)")
        print(f"index.html: {index.stat().st_size / 1024:.0f} KiB; summary.json: "
              f"{(index.parent / 'summary.json').stat().st_size / 1024:.0f} KiB; run directory: {size / 1024:.0f} KiB")
        print(f"trends.html: {(reports / 'trends.html').stat().st_size / 1024:.0f} KiB; "
              f"history.sqlite: {(reports / 'history.sqlite').stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
