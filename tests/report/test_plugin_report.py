"""The plugin's side of the report, through pytester: figures as JUnit properties, the run
directory with JUnit, cucumber JSON, summary and page, on failure and on Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

STEPS = """
import time
from pathlib import Path
from pytest_bdd import given, parsers, then, when

@given("nothing")
def _():
    pass

@when(parsers.parse("we wait {seconds:g} s"))
def _(seconds):
    Path("waiting").write_text("yes")
    time.sleep(seconds)

@then(parsers.parse("the gap of {value:g} s is under {limit:g} s"))
def _(timeline, value, limit):
    timeline.mark("figure", "write gap", value=value, unit="s")
    assert value < limit, f"write gap: expected under {limit:g} s, got {value:g} s"
"""

FEATURE = """
Feature: reports
  @outage
  Scenario: a small gap
    Given nothing
    Then the gap of 0.5 s is under 2 s

  @outage
  Scenario: a big gap
    Given nothing
    Then the gap of 3 s is under 2 s
    And the gap of 1 s is under 2 s
"""

LONG = """
Feature: interrupted
  Scenario: first
    Given nothing
    Then the gap of 0.5 s is under 2 s

  Scenario: a long one
    Given nothing
    When we wait 60 s

  Scenario: never reached
    Given nothing
"""


def _project(pytester: pytest.Pytester, feature: str) -> Path:
    pytester.makeconftest(STEPS)
    pytester.makefile(".feature", scenario=feature)
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    pytester.makeini(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider --harness-config {cfg}\n")
    return pytester.path / "reports"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "two xdist workers"])
def test_a_failing_run_writes_its_report(pytester: pytest.Pytester, workers: tuple[str, ...]) -> None:
    """Also from pytest-xdist's workers, whose reports reach the controller that writes the report."""
    reports = _project(pytester, FEATURE)
    result = pytester.runpytest_subprocess("--harness-report", *workers)
    result.assert_outcomes(passed=1, failed=1)
    run = (reports / "latest").resolve()
    result.stdout.fnmatch_lines([f"*report: {run / 'index.html'}*"])
    assert run.parent == reports.resolve() and run.name[:8].isdigit()
    cases = {c.get("name"): c for c in ET.parse(run / "junit.xml").getroot().iter("testcase")}
    props = {n: {p.get("name"): p.get("value") for p in c.iter("property")} for n, c in cases.items()}
    busy = props["test_a_big_gap"].pop("machine_cpu_busy_percent")  # a failure says what the machine had
    assert props["test_a_small_gap"] == {"figure:write gap": "0.5 s"} and props["test_a_big_gap"] == {"figure:write gap": "3 s"}
    assert 0 <= int(busy) <= 100
    cucumber = json.loads((run / "cucumber.json").read_text())
    assert sorted(e["name"] for e in cucumber[0]["elements"]) == ["a big gap", "a small gap"]
    built = json.loads((run / "summary.json").read_text())
    assert built["counts"] == {"failed": 1, "passed": 1} and not built["ok"] and built["exitstatus"] == 1
    assert built["environment"]["provider"] == "local"
    big = next(s for s in built["scenarios"] if s["name"] == "a big gap")
    assert big["name"] == "a big gap" and big["result"] == "failed" and "expected under 2 s, got 3 s" in big["message"]
    assert big["figures"][0]["name"] == "write gap" and big["figures"][0]["value"] == 3
    assert [(s["name"], s["status"]) for s in big["steps"]] == [
        ("nothing", "ok"), ("the gap of 3 s is under 2 s", "failed"), ("the gap of 1 s is under 2 s", "not run")]
    assert big["crash"].startswith("AssertionError: write gap: expected under 2 s, got 3 s")
    assert Path(big["timeline"]).exists()
    html = (run / "index.html").read_text()
    assert html.count('<section class="scenario') == 2 and html.count('class="timeline-plot"') == 2
    assert "<td>not run</td>" in html and "<summary>traceback</summary>" in html
    assert (reports / "trends.html").exists() and (reports / "history.sqlite").exists()


def test_a_junitxml_given_by_the_user_is_kept_and_copied(pytester: pytest.Pytester) -> None:
    reports = _project(pytester, FEATURE)
    pytester.runpytest_subprocess("--harness-report", "--junitxml", "mine.xml", "-k", "small")
    assert (pytester.path / "mine.xml").exists()
    assert (reports / "latest" / "junit.xml").read_bytes() == (pytester.path / "mine.xml").read_bytes()


def test_no_report_without_the_option(pytester: pytest.Pytester) -> None:
    reports = _project(pytester, FEATURE)
    pytester.runpytest_subprocess("-k", "small").assert_outcomes(passed=1)
    assert not (reports / "latest").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_session_still_writes_its_report(pytester: pytest.Pytester, sig: signal.Signals) -> None:
    reports = _project(pytester, LONG)
    # SIGINT as a terminal's Ctrl-C delivers it, even when this session was started in the background
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--harness-report", str(pytester.path)], cwd=pytester.path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (pytester.path / "waiting").exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()[0].decode()[-2000:]
        time.sleep(0.05)
    proc.send_signal(sig)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 2, out[-2000:]
    run = (reports / "latest").resolve()
    built = json.loads((run / "summary.json").read_text())
    assert built["interrupted"] and built["exitstatus"] == 2 and not built["ok"], out[-2000:]
    assert [(s["name"], s["result"]) for s in built["scenarios"]] == [("first", "passed"), ("a long one", "interrupted")]
    assert [st["name"] for st in built["scenarios"][1]["steps"]][:2] == ["nothing", "we wait 60 s"]
    assert built["not_run"] == [{"nodeid": "test_features.py::test_never_reached", "name": "test_never_reached",
                                 "reason": "never started: the session ended before it"}]
    assert (run / "junit.xml").exists() and (run / "index.html").exists()
    assert "interrupted</h1>" in (run / "index.html").read_text()


TWICE_STEPS = STEPS + """
import os

@then("the load's history is checked")
def _(loads, timeline):
    gap = float(os.environ["GAP"])
    timeline.mark("figure", "write gap", value=gap, unit="s")
    loads.directory.mkdir(parents=True, exist_ok=True)  # where the linearizability check writes
    (loads.directory / "porcupine.html").write_text(f"<html>history of the run with a {gap:g} s gap</html>")
"""

TWICE = """
Feature: reports
  Scenario: run twice
    Given nothing
    Then the load's history is checked
"""


def test_a_later_run_of_the_same_scenario_leaves_an_earlier_runs_page_as_it_was(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timelines, load histories and Porcupine pages go in the run's own directory, so the first
    run's page, summary and links still show the first run after a second run of the scenario."""
    reports = _project(pytester, TWICE)
    pytester.makeconftest(TWICE_STEPS)
    runs = []
    for gap in ("0.517", "0.733"):  # three decimals: never the session's duration ("0.7 s") on the page
        monkeypatch.setenv("GAP", gap)
        pytester.runpytest_subprocess("--harness-report").assert_outcomes(passed=1)
        runs.append((reports / "latest").resolve())
    first, second = runs
    assert first != second and first.parent == second.parent == reports.resolve()
    assert not (reports / "runs").exists(), "nothing of a reported run is shared between runs"

    (scenario,) = json.loads((first / "summary.json").read_text())["scenarios"]
    assert [f["value"] for f in scenario["figures"]] == [0.517]
    timeline = Path(scenario["timeline"])
    assert timeline.is_relative_to(first), f"{timeline} is not in the first run's directory {first}"
    assert [e["data"]["value"] for e in json.loads(timeline.read_text())["events"] if e["kind"] == "figure"] == [0.517]
    assert scenario["porcupine"] == f"runs/{timeline.stem}/porcupine.html"
    assert (first / scenario["porcupine"]).read_text() == "<html>history of the run with a 0.517 s gap</html>"
    html = (first / "index.html").read_text()
    assert f'href="runs/{timeline.name}"' in html and f'href="{scenario["porcupine"]}"' in html
    assert "0.517 s" in html and "0.733 s" not in html

    (later,) = json.loads((second / "summary.json").read_text())["scenarios"]
    assert Path(later["timeline"]).is_relative_to(second) and [f["value"] for f in later["figures"]] == [0.733]

    from harness.report.runs import find_run

    assert find_run(reports, first.name) == first and find_run(reports) == second
