"""`harness nightly` is not green when nothing ran: skipped tests are listed as not run with
their skip reason, in the summary, on the page and in nightly's output, and a run in which no
scenario ran (all skipped, or none collected) exits non-zero saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.report import page, summary
from harness.report.nightly import NOTHING_RAN, verdict

SESSION = {"started": "2025-01-01T00:00:00+00:00", "finished": "2025-01-01T00:01:00+00:00", "duration_s": 60.0,
           "exitstatus": 0, "interrupted": False, "not_run": []}
NO_MEMBERS = "Skipped: the cluster provider has no etcd members the harness can reach"


def scenario(i: int, result: str, message: str | None = None) -> dict[str, Any]:
    """A record as the plugin keeps it (a skip in a Given-step still has its Gherkin scenario)."""
    return {"nodeid": f"features/test_features.py::test_scenario_{i}", "name": f"scenario {i}", "feature": "outages",
            "tags": ["outage"], "result": result, "duration": 0.1, "steps": [], "message": message}


def build(results: list[dict[str, Any]], **session: Any) -> dict[str, Any]:
    return summary.build("r1", results, {"provider": "cluster"}, SESSION | session, timelines={})


def test_every_scenario_skipped_is_no_green_run() -> None:
    built = build([scenario(0, "skipped", NO_MEMBERS), scenario(1, "skipped", NO_MEMBERS),
                   # a skip in a fixture's setup: no Gherkin record, still not run
                   {"nodeid": "features/test_features.py::test_scenario_2", "result": "skipped", "duration": 0.0,
                    "steps": [], "message": "Skipped: a fresh region of its own needs the local provider, not cluster"}])
    assert built["ok"] is False and built["scenarios_ran"] == 0
    assert [(n["name"], n["reason"]) for n in built["not_run"]] == [
        ("scenario 0", NO_MEMBERS), ("scenario 1", NO_MEMBERS),
        ("test_scenario_2", "Skipped: a fresh region of its own needs the local provider, not cluster")]
    got = verdict(built, pytest_status=0)  # pytest itself exits 0 when every test skipped
    assert got.status == NOTHING_RAN
    assert got.problem == "no scenario ran (3 not run, listed above); a nightly that tested nothing is not green"
    assert got.lines[0] == "0 scenario(s) ran (3 skipped)"
    assert f"  features/test_features.py::test_scenario_0: {NO_MEMBERS}" in got.lines


def test_none_collected_says_so_with_pytests_status() -> None:
    got = verdict(build([], exitstatus=5), pytest_status=5)
    assert (got.status, got.lines) == (5, ["0 scenario(s) ran (no tests collected)"])
    assert got.problem is not None and "none collected" in got.problem


def test_passing_unit_tests_are_no_scenario_run() -> None:
    built = build([{"nodeid": "tests/unit/test_x.py::test_x", "result": "passed", "duration": 0.1},
                   scenario(0, "skipped", NO_MEMBERS)])
    assert built["ok"] is True and built["scenarios_ran"] == 0  # as a pytest run it passed
    assert verdict(built, 0).status == NOTHING_RAN  # as a nightly it tested nothing


def test_a_run_with_scenarios_keeps_pytests_status_and_lists_the_skipped() -> None:
    built = build([scenario(0, "passed"), scenario(1, "skipped", NO_MEMBERS)])
    got = verdict(built, 0)
    assert (got.status, got.problem, built["ok"], built["scenarios_ran"]) == (0, None, True, 1)
    assert got.lines == ["1 scenario(s) ran (1 passed, 1 skipped)", "not run (1):",
                         f"  features/test_features.py::test_scenario_1: {NO_MEMBERS}"]
    assert verdict(build([scenario(0, "failed")], exitstatus=1), 1).status == 1


def test_the_page_says_nothing_ran_and_why(tmp_path: Path) -> None:
    built = build([scenario(0, "skipped", NO_MEMBERS)])
    html = page.render(built, tmp_path, lambda i, s: None)
    assert ": nothing ran</h1>" in html
    assert f"<li>features/test_features.py::test_scenario_0: {NO_MEMBERS}</li>" in html
