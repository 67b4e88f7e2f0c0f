"""Historical etcd bugs the harness must flag, kept reproducible the way etcd's robustness suite
keeps its own (`make test-robustness-issueNNNNN` there): the harness's own scenario for each bug
(features/bugs.feature, tag @bug_NNNNN), run against etcd built at the version that had the bug,
must fail in the check named after what the bug breaks; the same scenario on a fixed version must
pass (no false alarm).

    python -m harness.bugs [--tries N] [--issue NNNNN ...] [--buggy-only]   # make bugs

Each try is a pytest run of its own (a fresh region, `--etcd-version`); a try counts as caught
only when the scenario failed with the bug's own symptom (the Then-step that checks it, saying
what the bug breaks: a HashKV split, a lost write, an event sent again), not with any other
anomaly or in its setup; it passes only when every step of the scenario ran and passed. The
buggy and the fixed release run the same schedules: try N of both is given the same seed for the
scenario's random schedule (`--schedule-seed`, printed with the try). Prints, per bug and version:
tries, caught (or passed), the symptom that flagged it and how long each try took; exits
non-zero when a bug was caught in fewer than 9 of 10 tries (the same share of fewer) or the fixed
version failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.config import load_config
from harness.processes import run_to_end

FEATURE = Path(__file__).resolve().parents[1] / "features" / "bugs.feature"
CATCH_SHARE = 0.9
TRY_LIMIT_S = 300.0


@dataclass(frozen=True)
class Symptom:
    """What a bug breaks, as the Then-step that checks it says it: the step (a part of its text)
    and a part of its failure's message."""

    name: str
    step: str
    says: str

    def seen_in(self, step: str, message: str) -> bool:
        return self.step in step and self.says in message


HASHKV = "all members end with equal HashKV"
# Members apart: their keys differing at the highest revision they all hold (HashKV, or their own
# histories on a release whose gateway has no HashKV), or one revision never reached (one member
# skipped or repeated entries).
SPLIT = (Symptom("a HashKV split", HASHKV, "whose HashKV differs"),
         Symptom("a history split", HASHKV, "whose history differs"),
         Symptom("members' revisions apart", HASHKV, "reach one revision once writes stopped"))


@dataclass(frozen=True)
class KnownBug:
    issue: int
    title: str
    buggy: str  # an etcd release that has it
    fixed: str  # one that does not
    failpoints: bool  # the scenario needs etcd built with gofail failpoints
    symptoms: tuple[Symptom, ...]  # what the bug breaks; a try is caught by one of these alone

    @property
    def marker(self) -> str:
        return f"bug_{self.issue}"


BUGS: dict[int, KnownBug] = {b.issue: b for b in (
    KnownBug(13766, "inconsistent revision and data after a member is killed under high load", "v3.5.2", "v3.5.35",
             False, SPLIT),
    KnownBug(14370, "a write acknowledged before a crash is lost (raftBeforeSave)", "v3.5.4", "v3.5.35", True,
             (Symptom("a lost write", "no acknowledged write of the load is lost",
                      "members missing acknowledged writes of the load"),)),
    KnownBug(14685, "a member that crashed while defragmenting applies entries twice (defragBeforeCopy)", "v3.5.5",
             "v3.5.35", True, SPLIT),
    KnownBug(15271, "a watch goes back in time after its member was brought back by a snapshot", "v3.5.7",
             "v3.5.35", False,
             (Symptom("an event sent again", "every watcher saw every event in order", "duplicate event"),
              Symptom("an event out of order", "every watcher saw every event in order", "reordered event"))),
)}


@dataclass(frozen=True)
class Try:
    version: str
    outcome: str  # caught | passed | failed-elsewhere | incomplete | error
    check: str  # the symptom that flagged it, or why it did not count
    seconds: float
    seed: int  # the scenario's schedule seed


def scenario_steps(bug: KnownBug) -> int:
    """How many steps the bug's scenario has (its background's included): a try passes only when
    every one of them ran and passed."""
    from pytest_bdd.parser import FeatureParser

    feature = FeatureParser(str(FEATURE.parent), FEATURE.name).parse()
    (scenario,) = [s for s in feature.scenarios.values() if bug.marker in s.tags]
    return len(scenario.steps)


def judge_try(bug: KnownBug, steps: list[dict[str, Any]], expected: int) -> tuple[str, str]:
    """(outcome, what it rests on) of a try's steps as pytest-bdd's cucumber report has them."""
    failed = next((s for s in steps if s["result"]["status"] == "failed"), None)
    if failed is None:
        not_passed = [f"{s['name']} ({s['result']['status']})" for s in steps if s["result"]["status"] != "passed"]
        if len(steps) != expected or not_passed:
            return "incomplete", (f"{len(steps)} of {expected} steps ran" +
                                  (f"; not passed: {', '.join(not_passed)}" if not_passed else ""))
        return "passed", ""
    message = failed["result"].get("error_message", "")
    seen = next((sym for sym in bug.symptoms if sym.seen_in(failed["name"], message)), None)
    if seen is None:
        return "failed-elsewhere", f"{failed['keyword'].strip()} {failed['name']}: {_verdict_line(message)}"
    return "caught", f"{seen.name}: {_verdict_line(message)}"


def run_try(bug: KnownBug, version: str, workdir: Path, seed: int, region: str = "bg") -> Try:
    """One pytest run of the bug's scenario on `version`, in a region of its own, its random
    schedule seeded with `seed`."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = workdir / "cucumber.json"
    config = workdir / "harness.toml"
    config.write_text(f'[paths]\nreports_dir = "{workdir / "reports"}"\n')
    argv = [sys.executable, "-m", "pytest", str(FEATURE.parent / "test_features.py"), "-m", bug.marker,
            "--etcd-version", version, "--region-name", region, "--harness-config", str(config),
            "--schedule-seed", str(seed), "--cucumberjson", str(report), "-p", "no:cacheprovider", "-q", "--tb=line"]
    began = time.monotonic()
    output = workdir / "pytest.log"
    try:
        with output.open("w") as out:
            run_to_end(argv, f"the try on etcd {version}", timeout=TRY_LIMIT_S + 120, stdout=out,
                       stderr=subprocess.STDOUT, cwd=FEATURE.parents[1], env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return Try(version, "error", f"did not finish within {TRY_LIMIT_S + 120:.0f} s", time.monotonic() - began,
                   seed)
    took = time.monotonic() - began
    steps = _steps(report)
    if not steps:
        return Try(version, "error", output.read_text(errors="replace").strip()[-300:], took, seed)
    outcome, check = judge_try(bug, steps, scenario_steps(bug))
    return Try(version, outcome, check, took, seed)


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
    ap.add_argument("--seed", type=int, default=None,
                    help="the first try's schedule seed (try N gets seed + N - 1, on both versions; default: new)")
    args = ap.parse_args(argv)
    if args.tries < 1:
        ap.error("--tries must be at least 1")
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    print(f"[bugs] schedule seeds {seed} to {seed + args.tries - 1}; replay with --seed {seed}", file=sys.stderr,
          flush=True)
    ok = True
    # Every try's output (logs, Porcupine's page, the timeline) stays: a catch's evidence.
    out = load_config().reports_dir / "bugs" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    print(f"[bugs] each try's output goes to {out}", file=sys.stderr, flush=True)
    for issue in args.issue or sorted(BUGS):
        bug = BUGS[issue]
        for version, want in ((bug.buggy, "caught"), *(() if args.buggy_only else ((bug.fixed, "passed"),))):
            tries = []
            for n in range(args.tries):
                t = run_try(bug, version, out / f"{issue}-{version}-{n + 1}", seed + n)
                tries.append(t)
                print(f"etcd #{issue} on {version}, try {n + 1}/{args.tries} (seed {t.seed}): {t.outcome} in "
                      f"{t.seconds:.0f} s{' - ' + t.check if t.check else ''}", flush=True)
            hits = sum(t.outcome == want for t in tries)
            good = hits >= needed(args.tries) if want == "caught" else hits == args.tries
            ok = ok and good
            print(f"etcd #{issue} ({bug.title}) on {version}: {want} in {hits} of {args.tries} tries, "
                  f"median {sorted(t.seconds for t in tries)[len(tries) // 2]:.0f} s per try"
                  f"{'' if good else '  <- NOT GOOD ENOUGH'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
