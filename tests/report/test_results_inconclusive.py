"""How a run's record names an inconclusive verdict: by the plugin's mark, not by its message; and a
passed scenario has no message to show."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.report.results import RunRecorder


def _call(properties: list[tuple[str, str]], outcome: str = "failed") -> SimpleNamespace:
    return SimpleNamespace(nodeid="f.py::t", when="call", duration=1.0, failed=outcome == "failed",
                           skipped=outcome == "skipped", passed=outcome == "passed", outcome=outcome, user_properties=properties,
                           longreprtext="harness.judge.Inconclusive: write gap: inconclusive, missed by 0.2s",
                           longrepr=None)


def test_an_inconclusive_verdict_is_recorded_as_such_unless_the_run_took_it_for_a_failure(tmp_path: Path) -> None:
    marked = RunRecorder(tmp_path, "r1")
    marked.add_report(_call([("inconclusive", "write gap: inconclusive")]), None)
    assert marked.results["f.py::t"]["result"] == "inconclusive"
    plain = RunRecorder(tmp_path, "r2")  # --inconclusive=fail: the same message, a failure
    plain.add_report(_call([]), None)
    assert plain.results["f.py::t"]["result"] == "failed"


def test_a_passed_scenario_keeps_no_message_even_where_xdist_gave_its_report_one(tmp_path: Path) -> None:
    passed = RunRecorder(tmp_path, "r3")
    report = _call([], "passed")
    report.longreprtext = "[gw0] linux -- Python 3.11.7 /repo/.venv/bin/python"
    passed.add_report(report, None)
    assert passed.results["f.py::t"]["result"] == "passed"
    assert passed.results["f.py::t"]["message"] is None and passed.results["f.py::t"]["crash"] is None
