"""The must-fail suite: real runs about which a Then-step is told something false, and must say so.

Each scenario of tests/must_fail/features ends in one Then-step whose statement did not hold in
the run the steps before it made (writes resuming while two of three zones stay down, the leader
unchanged when its zone went down, every watcher complete when one was stopped, ...). The
scenarios run once, in a pytest of their own on a region of their own (`mf`); then each is held
to three things: every step before the last passed (the run really happened), the last step
failed, and its failure says what its description's "Fails with:" line says. A step that passes
a false statement is a defect; so is a Then-step no must-fail scenario ends with (the coverage
test below), unless it is listed in SHOWN_ELSEWHERE with where its failure is shown instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_bdd.parser import FeatureParser

from harness.processes import run_to_end
from harness.steps.catalogue import FAILS_WITH
from harness.validate.contradictions import check_paths
from tests.unit.test_step_texts import DEFINITIONS

HERE = Path(__file__).resolve().parent
FEATURES = HERE / "features"
ROOT = HERE.parents[1]
REGION = "mf"
MARK = FAILS_WITH

# Then-steps whose failure on a real run is shown somewhere other than this suite, and where.
SHOWN_ELSEWHERE: dict[str, str] = {
    "harness.steps.shoot: (?P<name>etcd-[a-z]+) members end with equal HashKV":
        "the same HashKV check as the region's (harness.steps.checks.equal_hashes) on the shoot's members, shown "
        "failing in etcd_outage.feature with a follower's peer traffic cut",
}


@dataclass(frozen=True)
class Statement:
    feature: str
    name: str
    fails_with: str
    last_step: str  # the Then-step whose statement is false
    steps: int
    markers: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.feature}: {self.name}"


def statements() -> list[Statement]:
    out = []
    for path in sorted(FEATURES.glob("*.feature")):
        feature = FeatureParser(str(FEATURES), path.name).parse()
        for scenario in feature.scenarios.values():
            lines = [line.strip() for line in (scenario.description or "").splitlines()]
            said = next((line[len(MARK):].strip() for line in lines if line.startswith(MARK)), "")
            steps = scenario.steps  # the background's included
            out.append(Statement(path.name, scenario.name, said, steps[-1].name, len(steps),
                                 tuple(sorted(feature.tags | scenario.tags))))
    return out


STATEMENTS = statements()
# The whole suite takes about 20 minutes here: `make must-fail` and `make nightly` run it
# (HARNESS_MUST_FAIL=all); `make test` runs the scenarios tagged @short, at least one per feature file, so
# the suite cannot rot. The coverage test below always holds the whole suite.
EVERY = os.environ.get("HARNESS_MUST_FAIL", "short") == "all"
RUN = STATEMENTS if EVERY else [s for s in STATEMENTS if "short" in s.markers]


def _run_inner(out: Path, every: bool = EVERY) -> str:
    """Its output; a Ctrl-C waits until it has healed and taken its region down."""
    config = out / "harness.toml"
    config.write_text(f'[paths]\nreports_dir = "{out / "reports"}"\n')
    argv = [sys.executable, "-m", "pytest", str(HERE / "false_statements.py"), "--region-name", REGION,
            "--harness-config", str(config), "--cucumberjson", str(out / "cucumber.json"),
            "--junitxml", str(out / "junit.xml"), "-p", "no:cacheprovider", "-q", "-rN", "--tb=line",
            *(() if every else ("-m", "short"))]
    log = out / "pytest.log"
    with log.open("w") as output:
        run_to_end(argv, "the must-fail scenarios", timeout=3600, stdout=output, stderr=subprocess.STDOUT, cwd=ROOT,
                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return log.read_text(errors="replace")


@pytest.fixture(scope="session")
def inner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs every must-fail scenario once; where its reports went (cucumber.json, reports/runs)."""
    out = tmp_path_factory.mktemp("must-fail")
    done = _run_inner(out)
    report = out / "cucumber.json"
    assert report.exists(), f"the must-fail run wrote no report: {done[-6000:]}"
    return out


@pytest.fixture(scope="session")
def inner(inner_run: Path) -> dict[str, list[dict[str, Any]]]:
    """Scenario name -> its steps as pytest-bdd's cucumber JSON has them."""
    scenarios = {}
    for feature in json.loads((inner_run / "cucumber.json").read_text()):
        for element in feature.get("elements", []):
            scenarios[f"{Path(feature['uri']).name}: {element['name']}"] = element["steps"]
    return scenarios


@pytest.mark.region
@pytest.mark.parametrize("statement", RUN, ids=[s.id for s in RUN])
def test_a_false_statement_fails_and_says_why(inner: dict[str, list[dict[str, Any]]], statement: Statement) -> None:
    steps = inner.get(statement.id)
    assert steps is not None, f"{statement.id} did not run; ran: {sorted(inner)}"
    assert len(steps) == statement.steps, f"not every step ran: {[s['name'] for s in steps]}"
    *before, last = steps
    failed_before = [(s["name"], s["result"].get("error_message", "")[-600:]) for s in before
                     if s["result"]["status"] != "passed"]
    assert not failed_before, f"the run itself did not happen as written: {failed_before}"
    assert last["name"] == statement.last_step
    assert last["result"]["status"] == "failed", f"PASSED a false statement: {statement.last_step!r}"
    message = last["result"].get("error_message", "")
    assert "ToleranceViolation" in message, f"failed, but not as a verdict: {message[-1500:]}"
    assert statement.fails_with in message, f"failed, but not saying {statement.fails_with!r}: {message[-1500:]}"


@pytest.mark.region
def test_no_contrary_claims_both_hold_on_any_must_fail_run(inner_run: Path) -> None:
    """The leader kept and a new leader elected, no election and one at least, ...: judged on each
    run's timeline, both holding would be a defect of a validator, whatever the scenario states."""
    judged, contrary = check_paths(sorted((inner_run / "reports" / "runs").glob("*.json")))
    assert judged > 0, "no must-fail run had a fault window to judge"
    assert not contrary, "\n".join(contrary)


def test_every_scenario_says_how_it_must_fail() -> None:
    missing = [s.id for s in STATEMENTS if not s.fails_with]
    assert not missing, f"scenarios without a '{MARK}' line: {missing}"


def test_each_feature_has_a_short_scenario() -> None:
    """What `make test` runs of the suite: one scenario of each feature file at least."""
    without = sorted({s.feature for s in STATEMENTS} - {s.feature for s in STATEMENTS if "short" in s.markers})
    assert not without, f"feature files with no @short must-fail scenario: {without}"


# A named group of plain alternatives in a step's pattern: each is a claim of its own
# ("(?P<how>under|at least)"), shown failing on its own.
BRANCH = re.compile(r"\(\?P<(?P<group>\w+)>(?P<alternatives>[^()\\\[\]{}*+?.|]+(?:\|[^()\\\[\]{}*+?.|]+)+)\)")


def branches(label: str, parser: object) -> set[str]:
    """The claims a Then-step definition makes: itself, or one per alternative of each named group
    of plain alternatives in its pattern ("label [how=under]")."""
    pattern = getattr(getattr(parser, "regex", None), "pattern", "")
    found = {f"{label} [{m['group']}={alternative}]" for m in BRANCH.finditer(pattern)
             for alternative in m["alternatives"].split("|")}
    return found or {label}


def branch_taken(label: str, parser: Any, text: str) -> set[str]:
    """Which of the definition's claims `text` makes."""
    mine = branches(label, parser)
    if mine == {label}:
        return mine
    said = parser.parse_arguments(text) or {}
    return {b for b in mine if any(b == f"{label} [{group}={value}]" for group, value in said.items())}


def covered() -> tuple[set[str], set[str]]:
    """(every claim of every Then-step definition shipped, those a must-fail scenario ends with)."""
    thens = {b for kind, parser, label in DEFINITIONS if kind == "then" for b in branches(label, parser)}
    ends = {b for s in STATEMENTS for kind, parser, label in DEFINITIONS
            if kind == "then" and parser.is_matching(s.last_step)  # type: ignore[attr-defined]
            for b in branch_taken(label, parser, s.last_step)}
    return thens, ends


def test_every_then_step_is_shown_failing() -> None:
    """Each claim, not each definition: "p99 under N ms" failing shows nothing of "p99 at least N ms"."""
    thens, ends = covered()
    unknown = set(SHOWN_ELSEWHERE) - thens
    assert not unknown, f"SHOWN_ELSEWHERE names steps that do not exist: {unknown}"
    missing = sorted(thens - ends - set(SHOWN_ELSEWHERE))
    assert not missing, f"{len(missing)} of {len(thens)} Then-step claims no must-fail scenario ends with: {missing}"


def test_each_branch_of_a_step_is_a_claim_of_its_own() -> None:
    from pytest_bdd import parsers

    step = parsers.re(r"the task (?:is|ends) (?P<expected>completed|rejected) within (?P<limit>[\d.]+) s")
    assert branches("t", step) == {"t [expected=completed]", "t [expected=rejected]"}
    assert branch_taken("t", step, "the task is rejected within 3 s") == {"t [expected=rejected]"}
    assert branches("p", parsers.parse("the leader is deposed within {limit:g} s")) == {"p"}
