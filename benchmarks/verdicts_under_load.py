"""Timing verdicts on an idle and on a busy machine: false failures and inconclusive verdicts per
scenario, and whether the must-fail suite still fails every false statement under the same load.

    python benchmarks/verdicts_under_load.py [--runs 10] [--hogs 2] [-k NAME ...] [--skip NAME ...]
                                             [--together] [--must-fail] [--list]

The scenarios are those `make test` runs (not @long) with a timing bound in a Then-step ("within
N s", "under N ms", "at least N ms", "at most N s", "N election timeouts"), found in the feature
files. Each runs --runs times alone and --runs times beside --hogs CPU-bound processes (a busy
CI neighbour), with --inconclusive=error so that every inconclusive verdict is counted rather than
rerun. Scenario by scenario (its idle runs, then its loaded ones), so that a run cut short still
gives whole rows: each row is printed as it is done. With --together, each run is one pytest session
over every scenario, as `make test` runs them (one region shared, divergence between scenarios
judged), an idle session then a loaded one per run: a run cut short still gives whole runs. A scenario of `features/` states true things of the system: any failure is a false alarm.
With --must-fail, the short must-fail suite runs first under the same load and must still end
with every false statement failed by a verdict (its own test checks each message).

Prints a table per scenario: idle pass/fail/inconclusive, loaded pass/fail/inconclusive.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUND = re.compile(r"\b(within \d|under \d|at least \d[\d.]* ?ms|at most \d[\d.]* s\b|election timeouts?)")


def _slug(text: str) -> str:
    """As pytest-bdd names a scenario's test, letters and digits only (its leading digits dropped:
    "100 ms ± 20 ms ..." is test_ms__20_ms_...)."""
    return re.sub(r"^[0-9]+", "", re.sub(r"[^a-z0-9]", "", text.lower()))


def timed_scenarios() -> list[str]:
    """Names of the scenarios of features/ that make test runs and that judge a timing bound."""
    found = []
    for path in sorted((ROOT / "features").glob("*.feature")):
        feature_tags: set[str] = set()
        tags: set[str] = set()
        name, timed, seen_feature = None, False, False
        for raw in path.read_text().splitlines() + ["Scenario: <end>"]:
            line = raw.strip()
            if line.startswith("@"):
                tags |= set(line.split())
            elif line.startswith("Feature:"):
                feature_tags, tags, seen_feature = tags, set(), True
            elif line.startswith(("Scenario:", "Scenario Outline:")):
                if name and timed:
                    found.append(name)
                name = None if "@long" in tags | feature_tags else line.split(":", 1)[1].strip()
                tags, timed = set(), False
            elif seen_feature and name and line.startswith(("Then ", "And ", "But ")) and BOUND.search(line):
                timed = True
    return found


def node_ids(names: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "features/test_features.py", "--collect-only", "-q",
                          "-m", "not long", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True).stdout
    wanted = {_slug(n) for n in names}
    ids = [line for line in out.splitlines() if "::" in line]
    return [i for i in ids if _slug(i.split("::", 1)[1].split("[", 1)[0].removeprefix("test_")) in wanted]


def _hog() -> None:
    while True:
        pass


def outcomes_of(case: ET.Element) -> tuple[Counter[str], list[str]]:
    """pass / fail / inconclusive of one JUnit test case, and what it said if it did not pass."""
    props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
    failed = case.find("failure") if case.find("failure") is not None else case.find("error")
    if "inconclusive" in props:
        return Counter({"inconclusive": 1}), [props["inconclusive"][:400]]
    if failed is not None:
        return Counter({"fail": 1}), [(failed.get("message") or "")[:400]]
    return (Counter() if case.find("skipped") is not None else Counter({"pass": 1})), []


def run_once(node: str, region: str) -> tuple[Counter[str], list[str]]:
    got = run_session([node], region)
    return got.get(node.split("::")[-1], (Counter({"fail": 1}), ["no result in the JUnit file"]))


def run_session(nodes: list[str], region: str,
                times: dict[str, float] | None = None) -> dict[str, tuple[Counter[str], list[str]]]:
    """One pytest session over the nodes: each test case's outcome by its name (its seconds into times)."""
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", *nodes, "-m", "", "-q", "-p", "no:cacheprovider",
                               "--inconclusive=error", f"--region-name={region}", f"--junitxml={junit}"],
                              cwd=ROOT, capture_output=True, text=True)
        if not junit.exists():
            return {n.split("::")[-1]: (Counter({"fail": 1}), [proc.stderr[-400:]]) for n in nodes}
        cases = list(ET.parse(junit).getroot().iter("testcase"))
        if times is not None:
            times.update({case.get("name") or "": float(case.get("time") or 0) for case in cases})
        return {case.get("name") or "": outcomes_of(case) for case in cases}


@contextmanager
def cpu_hogs(count: int) -> Iterator[None]:
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(count)]
    for h in hogs:
        h.start()
    try:
        yield
    finally:
        for h in hogs:
            h.terminate()


def _row(node: str, row: dict[str, Counter[str]]) -> str:
    cells = ["/".join(str(row[c][k]) for k in ("pass", "fail", "inconclusive")) for c in ("idle", "loaded")]
    return f"{node.split('::')[-1][:70]:70} {cells[0]:>12} {cells[1]:>14}"


Outcome = tuple[str, str, int, Counter[str], list[str], float]


def _one_by_one(nodes: list[str], args: argparse.Namespace) -> Iterator[Outcome]:
    """Each scenario alone in its own pytest, its idle runs then its loaded ones."""
    for node in nodes:
        for condition in ("idle", "loaded"):
            with cpu_hogs(args.hogs if condition == "loaded" else 0):
                for i in range(args.runs):
                    t = time.monotonic()
                    got, said = run_once(node, "vl")
                    yield node, condition, i, got, said, time.monotonic() - t


def _together(nodes: list[str], args: argparse.Namespace) -> Iterator[Outcome]:
    """Every scenario in one pytest session per run and condition, idle then loaded."""
    times: dict[str, float] = {}
    for i in range(args.runs):
        for condition in ("idle", "loaded"):
            with cpu_hogs(args.hogs if condition == "loaded" else 0):
                t = time.monotonic()
                got = run_session(nodes, "vl", times)
                took = time.monotonic() - t
            print(f"session [{condition} {i + 1}/{args.runs}]: {len(nodes)} scenarios in {took:.0f} s", flush=True)
            for node in nodes:
                outcome, said = got.get(node.split("::")[-1], (Counter({"fail": 1}), ["no result in the JUnit file"]))
                yield node, condition, i, outcome, said, times.get(node.split("::")[-1], 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="runs per scenario and condition (default 10)")
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside the loaded runs (default 2)")
    ap.add_argument("-k", dest="match", action="append", default=[],
                    help="only scenarios whose test name contains this (repeatable: any of them)")
    ap.add_argument("--skip", action="append", default=[],
                    help="leave out scenarios whose test name contains this (repeatable)")
    ap.add_argument("--together", action="store_true",
                    help="each run one pytest session over every scenario, as make test runs them")
    ap.add_argument("--must-fail", action="store_true", help="also run the short must-fail suite under the load")
    ap.add_argument("--list", action="store_true", help="print the timed scenarios and exit")
    args = ap.parse_args()
    nodes = [n for n in node_ids(timed_scenarios()) if (not args.match or any(m in n for m in args.match))
             and not any(m in n for m in args.skip)]
    if args.list or not nodes:
        print("\n".join(nodes) or "no timed scenario matches")
        return
    if args.must_fail:
        with cpu_hogs(args.hogs):
            proc = subprocess.run([sys.executable, "-m", "pytest", "tests/must_fail", "-m", "not long", "-q",
                                   "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True)
        tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-300:]
        print(f"must-fail suite beside {args.hogs} CPU hogs: {tail} (exit {proc.returncode})", flush=True)
    table: dict[str, dict[str, Counter[str]]] = {n: {"idle": Counter(), "loaded": Counter()} for n in nodes}
    for node, condition, i, got, said, took in (_together(nodes, args) if args.together else _one_by_one(nodes, args)):
        table[node][condition] += got
        print(f"[{condition} {i + 1}/{args.runs}] {node.split('::')[-1]}: {dict(got)} ({took:.0f} s)", flush=True)
        for line in said:
            print(f"    said: {line}", flush=True)
        if not args.together and condition == "loaded" and i + 1 == args.runs:
            print(f"row: {_row(node, table[node])}", flush=True)
    print(f"\n{'scenario':70} {'idle p/f/i':>12} {'loaded p/f/i':>14}")
    for node, row in table.items():
        print(_row(node, row))
    total = {c: sum((row[c] for row in table.values()), Counter()) for c in ("idle", "loaded")}
    for c in ("idle", "loaded"):
        runs = sum(total[c].values()) or 1
        print(f"{c}: {total[c]['fail']} false failures, {total[c]['inconclusive']} inconclusive "
              f"({100 * total[c]['inconclusive'] / runs:.1f} %) in {runs} runs")


if __name__ == "__main__":
    main()
