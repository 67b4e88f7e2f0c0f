"""`make run` in each form of the reference, side by side: the harness's reading of GEP-20
(`gep20`), of the HA conventions (`conventions`), and Gardener's own gardener-resource-manager
placing the control plane (`gardener`). Runs `harness run --form F` for each form in turn and
prints, per zone taken down, the figures its steps recorded (from each run's summary.json).

    python benchmarks/forms_side_by_side.py [--forms gep20,conventions,gardener] [--zone ZONE ...]

Prints figures; asserts nothing. The Go programs must be built (`make kube-binaries`).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = re.compile(r"^harness run: report (?P<page>\S+)/index\.html")
ZONE = re.compile(r"\((?P<zone>[\w-]+) down\)$")
# The figures compared, by the start of their name (the zone's name replaced by Z).
ROWS = (
    ("nodes NotReady", "the nodes of Z NotReady"),
    ("kube-apiservers Running outside", "3 kube-apiserver replicas Running outside"),
    ("GEP-20's table reached", "the pods of the shoot control plane as expected"),
    ("shoot API write gap", "shoot API write gap"),
    ("etcd-main longest write gap", "longest write gap during the outage"),
    ("every pod Running after the return", "every pod of the shoot control plane Running"),
    ("lost writes (etcd / shoot API)", "lost writes|lost shoot API writes"),
)


def run_form(form: str, zones: list[str]) -> tuple[dict[str, dict[str, str]], float, int]:
    """{zone: {row: value}}, the run's wall time and its exit status."""
    argv = [sys.executable, "-m", "harness.cli", "--name", "bfs", "run", "--form", form,
            *[a for z in zones for a in ("--zone", z)]]
    began = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    took = time.monotonic() - began
    page = next((m.group("page") for line in done.stdout.splitlines() if (m := REPORT.match(line))), None)
    if page is None:
        print(f"{form}: no report (exit {done.returncode}); its output ends:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return {}, took, done.returncode
    out: dict[str, dict[str, str]] = {}
    for scenario in json.loads((ROOT / page / "summary.json").read_text())["scenarios"]:
        m = ZONE.search(scenario["name"])
        if m is None:
            continue
        zone = m.group("zone")
        figures = {f["name"].replace(zone, "Z"): f for f in scenario["figures"]}
        row = out.setdefault(zone, {"verdict": scenario["result"]})
        for label, starts in ROWS:
            found = [f for name, f in figures.items() if any(name.startswith(s) for s in starts.split("|"))]
            row[label] = " / ".join("never" if f["value"] is None else f"{f['value']:.2f} {f['unit']}"
                                    if isinstance(f["value"], float) else f"{f['value']}" for f in found) or "-"
    return out, took, done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--forms", default="gep20,conventions,gardener")
    ap.add_argument("--zone", action="append", default=[], help="take only this zone down (repeatable)")
    args = ap.parse_args()
    results = {}
    for form in args.forms.split(","):
        print(f"[forms] harness run --form {form} ...", file=sys.stderr, flush=True)
        results[form], took, status = run_form(form, args.zone)
        print(f"[forms] {form}: {took:.0f} s, exit {status}", file=sys.stderr, flush=True)
    columns = [(form, zone) for form, zones in results.items() for zone in sorted(zones)]
    print("| figure | " + " | ".join(f"{form} {zone}" for form, zone in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for label in ("verdict", *(label for label, _ in ROWS)):
        print(f"| {label} | " + " | ".join(results[form][zone].get(label, "-") for form, zone in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
