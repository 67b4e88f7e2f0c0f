"""Where `make run`'s minutes go: `harness run` with each line of its output stamped, split into
phases by its own lines (the region and the seed up until the first step, the reference deployed,
each zone from its "goes down" step to its verdict, what lies between the zones' scenarios, the
teardown to the exit), the longest progress waits of each phase named.

    python benchmarks/make_run_phases.py [--runs N] [-- HARNESS-RUN-ARGS...]

Prints figures; asserts nothing. The Go programs must be built (`make kube-binaries`).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEP = re.compile(r"^\[harness run\] (?P<zone>\S+): (?P<step>.+)")
VERDICT = re.compile(r"^  (?P<zone>\S+) -> ")
WAIT = re.compile(r"^\[\w+\] waiting for (?P<what>.+?): (?P<seconds>\d+)s of \d+s")


def stamped(command: list[str]) -> tuple[list[tuple[float, str]], int]:
    started = time.monotonic()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append((time.monotonic() - started, line.rstrip("\n")))
    lines.append((time.monotonic() - started, "<exit>"))
    return lines, p.returncode


def phases(lines: list[tuple[float, str]]) -> list[tuple[str, float, float]]:
    """(phase, start, end) seconds: each phase ends where the next begins."""
    cuts: list[tuple[str, float]] = [("region and seed up", 0.0)]
    deploying = False
    for at, line in lines:
        step, verdict = STEP.match(line), VERDICT.match(line)
        if step and "runs for real" in step["step"] and not deploying:
            cuts.append(("reference deployed", at))
            deploying = True
        elif step and deploying and cuts[-1][0] == "reference deployed":
            cuts.append(("probes start, pods before", at))
        elif step and step["step"].startswith(f'When zone "{step["zone"]}" goes down'):
            cuts.append((f"zone {step['zone']} down and back", at))
        elif verdict:
            cuts.append(("after a zone: next scenario or teardown", at))
    return [(name, start, nxt) for (name, start), (_, nxt) in zip(cuts, cuts[1:] + [("", lines[-1][0])])]


def waits(lines: list[tuple[float, str]], start: float, end: float) -> dict[str, float]:
    """The longest each progress wait of a phase was seen going on (its "Ns of Ms" lines)."""
    seen: dict[str, float] = {}
    for m in (WAIT.match(line) for at, line in lines if start <= at < end):
        if m:
            what = m["what"][:70]
            seen[what] = max(seen.get(what, 0.0), float(m["seconds"]))
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("rest", nargs="*", help="arguments for harness run (after --)")
    args = ap.parse_args()
    for run in range(1, args.runs + 1):
        lines, code = stamped([str(ROOT / ".venv/bin/harness"), "run", *args.rest])
        print(f"run {run}: exit {code} after {lines[-1][0]:.0f} s")
        for name, start, end in phases(lines):
            print(f"  {name:28} {end - start:6.1f} s  (from {start:5.1f} s)")
            for what, seconds in sorted(waits(lines, start, end).items(), key=lambda kv: -kv[1])[:3]:
                print(f"      waited {seconds:3.0f}+ s for {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
