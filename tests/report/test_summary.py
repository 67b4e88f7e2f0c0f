"""The report layer over recorded timelines: summary, figures, history, trends, the page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.report import figures, find_run, new_run_id, summary, write_report
from harness.report.history import results as history_results
from harness.report.history import connect
from harness.report.page import scenario_html
from tests.report.timelines import outage_timeline, results, shoot_history

ENV = {"provider": "local", "etcd_version": "3.4.23", "kubernetes_version": "v1.36.3", "zones": ["zone-a", "zone-b", "zone-c"]}


def _session(exitstatus: int = 1, interrupted: bool = False, not_run: list[str] | None = None) -> dict:
    return {"started": "2025-01-01T00:00:00+00:00", "finished": "2025-01-01T00:01:00+00:00", "duration_s": 60.0,
            "exitstatus": exitstatus, "interrupted": interrupted, "not_run": not_run or []}


def test_a_scenario_summary_has_its_windows_and_figures() -> None:
    tl = outage_timeline("x::y", gap=(2.0, 3.4))
    s = summary.scenario({"nodeid": "x::y", "result": "passed", "duration": 1.0}, tl)
    assert s["name"] == "y" and s["result"] == "passed"
    assert s["fault_windows"] == [{"fault": "zone-outage", "target": "zone-a", "start": 1.99, "end": 4.05,
                                   "injected_at": 2.0, "effective_at": None, "effect": None,
                                   "healed_at": 4.0}]
    assert list(s["write_unavailability"]) == ["etcd via zone-b"]
    wu = s["write_unavailability"]["etcd via zone-b"]
    assert not wu["open"] and 1.35 <= wu["length_s"] <= 1.5 and 1.9 <= wu["start"] <= 2.0
    assert [f["name"] for f in s["figures"]] == ["time to a new leader", "write-unavailability window"]


def test_writes_that_never_resume_are_said_so() -> None:
    tl = outage_timeline("x::y", gap=(2.0, 99.0))
    wu = summary.scenario({"nodeid": "x::y"}, tl)["write_unavailability"]["etcd via zone-b"]
    # The stretch from the last acknowledged write to the last heal counts, still open then.
    assert wu["open"] is True and wu["end"] == 4.0 and wu["start"] < 2.0 and wu["length_s"] > 2.0


def test_each_write_path_has_its_own_window_so_one_cannot_hide_another(tmp_path: Path) -> None:
    # etcd's writes resume after 1.4 s; the shoot API's never do. Pooled, etcd's acknowledgements
    # would fill the shoot API's outage and the window would read 1.4 s, resumed.
    tl = outage_timeline("x::y", gap=(2.0, 3.4))
    tl["histories"].append(shoot_history(gap=(2.0, 99.0)))
    s = summary.scenario({"nodeid": "x::y", "result": "passed"}, tl)
    per_path = s["write_unavailability"]
    assert sorted(per_path) == ["etcd via zone-b", "shoot-api via zone-b"]
    etcd, shoot = per_path["etcd via zone-b"], per_path["shoot-api via zone-b"]
    assert not etcd["open"] and 1.35 <= etcd["length_s"] <= 1.5
    assert shoot["open"] and shoot["end"] == 4.0 and shoot["start"] < 2.0 and shoot["length_s"] > 2.0
    html = scenario_html(0, s, None, tmp_path)
    assert "etcd via zone-b" in html and "shoot-api via zone-b" in html
    assert html.count("still open at the window") == 1


def test_a_timeline_recorded_before_paths_were_named_still_splits_them() -> None:
    tl = outage_timeline("x::y", gap=(2.0, 3.4))
    tl["histories"].append(shoot_history(gap=(2.0, 99.0)))
    for h in tl["histories"]:
        del h["path"]
    per_path = summary.scenario({"nodeid": "x::y"}, tl)["write_unavailability"]
    assert sorted(per_path) == ["etcd via zone-b", "shoot-api via zone-b"] and per_path["shoot-api via zone-b"]["open"]


def test_figures_become_junit_properties() -> None:
    got = figures.junit_properties(figures.from_events(outage_timeline("x::y")["events"]))
    assert got == [("figure:time to a new leader", "1.2 s"), ("figure:write-unavailability window", "1.4 s")]
    assert figures.junit_properties([{"name": "lost", "value": None, "unit": ""}]) == [("figure:lost", "none")]


def test_a_failed_run_writes_every_file_and_points_latest_at_it(tmp_path: Path) -> None:
    recs = results(tmp_path, scenarios=3)
    run_id = new_run_id()
    index = write_report(tmp_path, tmp_path / run_id, run_id, recs, ENV, _session(), progress=lambda _: None)
    assert index == tmp_path / run_id / "index.html" and (tmp_path / "latest").resolve() == (tmp_path / run_id).resolve()
    built = json.loads((tmp_path / run_id / "summary.json").read_text())
    assert built["ok"] is False and built["counts"] == {"failed": 1, "passed": 2}
    assert built["environment"] == ENV
    failed = built["scenarios"][1]
    assert failed["result"] == "failed" and "ToleranceViolation" in failed["message"]
    assert failed["steps"][1] == {"keyword": "Then", "name": "writes resume within 1 s of the outage", "failed": True,
                                  "duration": 0.1}
    traffic = built["scenarios"][2]
    assert traffic["load"][0]["ops_per_s"] == 99.5 and traffic["traffic"][0]["total_kib_s"]["wire"] == 400.0
    html = index.read_text()
    assert html.count('<section class="scenario') == 3 and html.count('class="timeline-plot"') == 3
    assert "writes resume within 1 s of the outage" in html and "Why it failed" in html
    assert find_run(tmp_path) == (tmp_path / run_id).resolve() and find_run(tmp_path, run_id[:10]) == tmp_path / run_id


def test_an_interrupted_run_is_reported_with_what_did_not_run(tmp_path: Path) -> None:
    recs = results(tmp_path, scenarios=2)
    recs[1]["result"] = "interrupted"  # the plugin's record of a scenario that started and never reported its call
    recs[1].pop("message", None)
    index = write_report(tmp_path, tmp_path / "r1", "r1", recs, ENV,
                         _session(2, True, ["features/test_features.py::test_later"]), progress=lambda _: None)
    built = json.loads((tmp_path / "r1" / "summary.json").read_text())
    assert built["interrupted"] and not built["ok"]
    assert [(n["nodeid"], n["reason"]) for n in built["not_run"]] == [
        ("features/test_features.py::test_later", "never started: the session ended before it")]
    assert built["scenarios"][1]["result"] == "interrupted"
    html = index.read_text()
    assert ": interrupted</h1>" in html and "Not run (1)" in html


def test_a_missing_timeline_still_gives_a_summary(tmp_path: Path) -> None:
    rec = {"nodeid": "a::b", "result": "error", "message": "setup failed", "timeline": str(tmp_path / "gone.json")}
    index = write_report(tmp_path, tmp_path / "r", "r", [rec], {}, _session(), progress=lambda _: None)
    assert 'data-result="error"' in index.read_text() and "<img" not in index.read_text()


def test_history_and_trends_accumulate_over_runs(tmp_path: Path) -> None:
    for n, run in enumerate(["20250101T000000Z-aaaaaa", "20250102T000000Z-bbbbbb"]):
        recs = results(tmp_path, scenarios=3)
        if n == 1:
            recs[1]["result"] = "passed"
        session = _session() | {"started": f"2025-01-0{n + 1}T00:00:00+00:00"}
        write_report(tmp_path, tmp_path / run, run, recs, ENV, session, progress=lambda _: None)
    db = connect(tmp_path / "history.sqlite")
    try:
        rows = history_results(db)
        assert [(r[0][:8], r[3]) for r in rows if r[2] == "scenario 1"] == [("20250101", "failed"), ("20250102", "passed")]
        names = {r[0] for r in db.execute("SELECT DISTINCT name FROM figures")}
        assert {"time to a new leader", "write-unavailability window", "write-unavailability window (etcd via zone-b)",
                "cross-zone zone-a->zone-b"} <= names
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
    finally:
        db.close()
    trends = (tmp_path / "trends.html").read_text()
    assert trends.count('class="trend-plot"') == 3 and "over 2 run(s)" in trends
    assert "<td>scenario 1</td><td>50 %</td>" in trends


def test_find_run_says_what_exists(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no report in"):
        find_run(tmp_path)
    with pytest.raises(ConfigError, match="no run matching 'zz'"):
        find_run(tmp_path, "zz")


def test_run_ids_sort_by_time() -> None:
    from datetime import datetime, timezone

    a = new_run_id(datetime(2025, 1, 1, tzinfo=timezone.utc))
    b = new_run_id(datetime(2025, 1, 2, tzinfo=timezone.utc))
    assert a < b and a.startswith("20250101T000000Z-") and len(a) == len("20250101T000000Z-") + 6


def test_porcupines_visualisation_is_copied_into_the_run_and_linked_from_the_page(tmp_path: Path) -> None:
    recs = results(tmp_path, scenarios=2)
    kept = tmp_path / "runs" / "features_test_features.py__test_scenario_1" / "porcupine.html"
    kept.parent.mkdir(parents=True)
    kept.write_text("<html>porcupine says no</html>")
    recs[1]["porcupine"] = str(kept)
    gone = str(tmp_path / "runs" / "gone" / "porcupine.html")
    recs[0]["porcupine"] = gone  # removed since it was recorded: nothing to copy, the record is kept as it was
    index = write_report(tmp_path, tmp_path / "r", "r", recs, ENV, _session(), progress=lambda _: None)
    copy = tmp_path / "r" / "porcupine" / "features_test_features.py__test_scenario_1.html"
    assert copy.read_text() == "<html>porcupine says no</html>"
    built = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert built["scenarios"][1]["porcupine"] == "porcupine/features_test_features.py__test_scenario_1.html"
    assert built["scenarios"][0]["porcupine"] == gone and sorted(p.name for p in copy.parent.iterdir()) == [copy.name]
    assert recs[1]["porcupine"] == str(kept)  # the caller's records are left as they were
    html = index.read_text()
    assert 'href="porcupine/features_test_features.py__test_scenario_1.html"' in html


def test_porcupine_written_in_the_run_directory_is_linked_where_it_is(tmp_path: Path) -> None:
    recs = results(tmp_path, scenarios=1)
    own = tmp_path / "r" / "runs" / "s0" / "porcupine.html"
    own.parent.mkdir(parents=True)
    own.write_text("<html>this run's</html>")
    recs[0]["porcupine"] = str(own)
    index = write_report(tmp_path, tmp_path / "r", "r", recs, ENV, _session(), progress=lambda _: None)
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["scenarios"][0]["porcupine"] == "runs/s0/porcupine.html"
    assert 'href="runs/s0/porcupine.html"' in index.read_text() and not (tmp_path / "r" / "porcupine").exists()


def test_region_logs_are_copied_into_the_run_so_the_next_region_does_not_replace_them(tmp_path: Path) -> None:
    kept = tmp_path / "logs" / "hh"
    kept.mkdir(parents=True)
    (kept / "etcd-0.log").write_text("first run's etcd")
    recs = results(tmp_path, scenarios=3)
    for r in recs[:2]:
        r["logs"] = [str(kept)]
    recs[2]["logs"] = [str(tmp_path / "logs" / "never-kept")]  # a region this session did not bring down
    index = write_report(tmp_path, tmp_path / "r", "r", recs, ENV, _session(), progress=lambda _: None)
    (kept / "etcd-0.log").write_text("next run's etcd")  # the next session's region goes down
    built = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert [s["logs"] for s in built["scenarios"]] == [["logs/hh"], ["logs/hh"], []]
    assert (tmp_path / "r" / "logs" / "hh" / "etcd-0.log").read_text() == "first run's etcd"
    assert index.read_text().count('href="logs/hh"') == 2
    assert recs[0]["logs"] == [str(kept)]  # the caller's records are left as they were


def test_plain_tests_are_listed_only_when_they_did_not_pass() -> None:
    recs = [{"nodeid": "features/f.py::a", "name": "a", "feature": "outages", "result": "passed"},
            {"nodeid": "tests/unit/t.py::ok", "result": "passed"},
            {"nodeid": "tests/unit/t.py::skip", "result": "skipped"},
            {"nodeid": "tests/unit/t.py::broken", "result": "failed", "message": "boom", "crash": "AssertionError: boom"}]
    built = summary.build("r", recs, ENV, _session(), {})
    assert [s["nodeid"] for s in built["scenarios"]] == ["features/f.py::a", "tests/unit/t.py::broken"]
    assert built["counts"] == {"failed": 1, "passed": 2, "skipped": 1} and built["other_tests_not_listed"] == 2
    assert built["ok"] is False and built["scenarios"][1]["crash"] == "AssertionError: boom"


def test_traffic_that_could_not_be_counted_is_shown_with_the_member_and_why(tmp_path: Path) -> None:
    from tests.report.timelines import traffic_timeline

    tl = traffic_timeline("x::y")
    measure = next(e for e in tl["events"] if e["kind"] == "traffic")
    measure["data"]["gaps"] = [{"source": "metrics", "member": "etcd-0", "zone": "zone-a",
                                "reason": "scrape failed at the first sample: ConnectionRefusedError: refused"}]
    measure["data"]["total_kib_s"]["metrics"] = None
    measure["data"]["pairs"]["zone-a->zone-b"]["metrics_kib_s"] = None
    s = summary.scenario({"nodeid": "x::y", "result": "failed"}, tl)
    assert s["traffic"][0]["gaps"][0]["member"] == "etcd-0" and s["traffic"][0]["resets"] == []
    html = scenario_html(0, s, None, tmp_path)
    assert "traffic not counted" in html and "etcd-0" in html and "scrape failed at the first sample" in html
    from harness.report.plot import timeline_png

    assert timeline_png(tl, "y")  # a pair without a figure gets no bar, and the plot is still drawn


def test_a_wire_column_the_environment_cannot_count_says_so(tmp_path: Path) -> None:
    from tests.report.timelines import traffic_timeline

    tl = traffic_timeline("x::y")
    measure = next(e for e in tl["events"] if e["kind"] == "traffic")
    for v in measure["data"]["pairs"].values():
        v["wire_kib_s"] = None
    measure["data"]["total_kib_s"]["wire"] = None
    measure["data"]["not_available"] = {"wire": "not available on the cluster provider"}
    s = summary.scenario({"nodeid": "x::y", "result": "skipped"}, tl)
    assert s["traffic"][0]["not_available"] == {"wire": "not available on the cluster provider"}
    html = scenario_html(0, s, None, tmp_path)
    assert html.count("not available on the cluster provider") == len(measure["data"]["pairs"])
