"""Historical etcd bugs the harness must flag, kept reproducible the way etcd's robustness suite
keeps its own (`make test-robustness-issueNNNNN` there): the harness's own scenario for each bug
(features/bugs.feature, tag @bug_NNNNN), run against etcd built at the version that had the bug,
must fail in the check named after what the bug breaks; the same scenario on a fixed version must
pass (no false alarm).

    python -m harness.bugs [--tries N] [--issue NNNNN ...] [--buggy-only]   # make bugs

Each try is a pytest run of its own (a fresh region, `--etcd-version`); a try counts as caught
when the scenario failed in one of the bug's checks (a Then-step whose failure names it), not in
its setup. Prints, per bug and version: tries, caught (or passed), the check that flagged it and
how long each try took; exits non-zero when a bug was caught in fewer than 9 of 10 tries (the
same share of fewer) or the fixed version failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.config import load_config

FEATURE = Path(__file__).resolve().parents[1] / "features" / "bugs.feature"
CATCH_SHARE = 0.9
TRY_LIMIT_S = 300.0


@dataclass(frozen=True)
class KnownBug:
    issue: int
    title: str
    buggy: str  # an etcd release that has it
    fixed: str  # one that does not
    failpoints: bool  # the scenario needs etcd built with gofail failpoints
    checks: tuple[str, ...]  # what a Then-step's failure says when it flags the bug

    @property
    def marker(self) -> str:
        return f"bug_{self.issue}"


BUGS: dict[int, KnownBug] = {b.issue: b for b in (
    KnownBug(13766, "inconsistent revision and data after a member is killed under high load", "v3.5.2", "v3.5.35",
             False, ("reach one revision", "HashKV differs", "NOT linearizable", "lost write", "watch anomalies")),
    KnownBug(14370, "a write acknowledged before a crash is lost (raftBeforeSave)", "v3.5.4", "v3.5.35",
             True, ("lost write", "NOT linearizable", "missing acknowledged writes")),
    KnownBug(14685, "a member that crashed while defragmenting applies entries twice (defragBeforeCopy)", "v3.5.5",
             "v3.5.35", True, ("reach one revision", "HashKV differs", "watch anomalies", "NOT linearizable", "lost write")),
    KnownBug(15271, "a watch goes back in time after its member was brought back by a snapshot", "v3.5.7",
             "v3.5.35", False, ("watch anomalies", "NOT linearizable")),
)}


@dataclass(frozen=True)
class Try:
    version: str
    outcome: str  # caught | passed | failed-elsewhere | error
    check: str  # the check that flagged it, or why it did not count
    seconds: float


def run_try(bug: KnownBug, version: str, workdir: Path, region: str = "bg") -> Try:
    """One pytest run of the bug's scenario on `version`, in a region of its own."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "cucumber.json"
    config = workdir / "harness.toml"
    config.write_text(f'[paths]\nreports_dir = "{workdir / "reports"}"\n')
    argv = [sys.executable, "-m", "pytest", str(FEATURE.parent / "test_features.py"), "-m", bug.marker,
            "--etcd-version", version, "--region-name", region, "--harness-config", str(config),
            "--cucumberjson", str(report), "-p", "no:cacheprovider", "-q", "--tb=line"]
    began = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=TRY_LIMIT_S + 120,
                              cwd=FEATURE.parents[1], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return Try(version, "error", f"did not finish within {TRY_LIMIT_S + 120:.0f} s", time.monotonic() - began)
    took = time.monotonic() - began
    steps = _steps(report)
    if not steps:
        return Try(version, "error", (done.stdout + done.stderr).strip()[-300:], took)
    failed = next((s for s in steps if s["result"]["status"] == "failed"), None)
    if failed is None:
        return Try(version, "passed", "", took)
    message = failed["result"].get("error_message", "")
    check = next((c for c in bug.checks if c in message), None)
    if failed["keyword"].strip() not in ("Then", "And") or check is None:
        return Try(version, "failed-elsewhere", f"{failed['keyword'].strip()} {failed['name']}: "
                                                  f"{_verdict_line(message)}", took)
    return Try(version, "caught", f"{failed['name']}: {_verdict_line(message)}", took)


def _steps(report: Path) -> list[dict[str, Any]]:
    try:
        features = json.loads(report.read_text())
    except (OSError, ValueError):
        return []
    return [s for f in features for e in f.get("elements", []) for s in e.get("steps", [])]


def _verdict_line(message: str) -> str:
    for line in message.splitlines():
        if "ToleranceViolation: " in line:
            return line.split("ToleranceViolation: ", 1)[1][:200]
    return (message.strip().splitlines() or [""])[-1][:200]


def needed(tries: int) -> int:
    """Tries that must catch the bug: 9 of 10, the same share of other counts."""
    return math.ceil(CATCH_SHARE * tries)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bugs", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tries", type=int, default=10, help="runs per bug and version (default 10)")
    ap.add_argument("--issue", type=int, action="append", choices=sorted(BUGS), help="only these bugs")
    ap.add_argument("--buggy-only", action="store_true", help="skip the runs on the fixed versions")
    args = ap.parse_args(argv)
    if args.tries < 1:
        ap.error("--tries must be at least 1")
    ok = True
    # Every try's output (logs, Porcupine's page, the timeline) stays: a catch's evidence.
    out = load_config().reports_dir / "bugs" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    print(f"[bugs] each try's output goes to {out}", file=sys.stderr, flush=True)
    for issue in args.issue or sorted(BUGS):
        bug = BUGS[issue]
        for version, want in ((bug.buggy, "caught"), *(() if args.buggy_only else ((bug.fixed, "passed"),))):
            tries = []
            for n in range(args.tries):
                t = run_try(bug, version, out / f"{issue}-{version}-{n + 1}")
                tries.append(t)
                print(f"etcd #{issue} on {version}, try {n + 1}/{args.tries}: {t.outcome} in {t.seconds:.0f} s"
                      f"{' - ' + t.check if t.check else ''}", flush=True)
            hits = sum(t.outcome == want for t in tries)
            good = hits >= needed(args.tries) if want == "caught" else hits == args.tries
            ok = ok and good
            print(f"etcd #{issue} ({bug.title}) on {version}: {want} in {hits} of {args.tries} tries, "
                  f"median {sorted(t.seconds for t in tries)[len(tries) // 2]:.0f} s per try"
                  f"{'' if good else '  <- NOT GOOD ENOUGH'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
