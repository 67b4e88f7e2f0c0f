"""`harness nightly` end to end through pytester (no region): a run whose every scenario skips
exits non-zero, lists each as not run with its reason, and reads back its own run's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli

ROOT = Path(__file__).resolve().parents[2]

STEPS = """
import pytest
from pytest_bdd import given

@given("an environment with etcd members")
def _():
    pytest.skip("the cluster provider has no etcd members the harness can reach")
"""

FEATURE = """
Feature: skipped everywhere
  Scenario: a zone goes down
    Given an environment with etcd members

  Scenario: a node fails
    Given an environment with etcd members
"""


def test_a_nightly_in_which_every_scenario_skipped_is_not_green(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # nightly's pytest imports this checkout's plugin
    pytester.makeconftest(STEPS)
    pytester.makefile(".feature", scenario=FEATURE)
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    pytester.makeini("[pytest]\naddopts = --strict-markers -p no:cacheprovider\n")
    # An older green run is `latest`: nightly must judge its own run, not that one.
    old = pytester.path / "reports" / "20000101T000000Z-000000"
    old.mkdir(parents=True)
    (old / "summary.json").write_text(json.dumps({"scenarios_ran": 5, "not_run": [], "counts": {"passed": 5}}))
    (pytester.path / "reports" / "latest").symlink_to(old.name)

    code = cli.main(["--config", str(cfg), "nightly", "--", "test_features.py"])

    out, err = capsys.readouterr()
    assert code == 5, out + err
    assert "harness nightly: 0 scenario(s) ran (2 skipped)" in out
    assert ("harness nightly:   test_features.py::test_a_zone_goes_down: "
            "Skipped: the cluster provider has no etcd members the harness can reach") in out
    assert "harness nightly: no scenario ran (2 not run, listed above)" in err
    built = json.loads(((pytester.path / "reports" / "latest").resolve() / "summary.json").read_text())
    assert built["ok"] is False and len(built["not_run"]) == 2


def test_a_nightly_whose_timelines_show_contrary_claims_both_holding_is_not_green(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The scenarios pass, but on a recorded timeline a validator (made wrong here) passes both "the
    leader does not change" and "a new leader is elected": a defect of the harness, reported."""
    from harness.report import runs
    from harness.validate import leadership as lead
    from tests.unit.test_contradictions import IDS, FIELDS, kept_run, seen

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest("from pytest_bdd import given\n\n@given('nothing')\ndef _():\n    pass\n")
    pytester.makefile(".feature", scenario="Feature: f\n  Scenario: s\n    Given nothing\n")
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    pytester.makeini("[pytest]\naddopts = --strict-markers -p no:cacheprovider\n")
    monkeypatch.setattr(runs, "new_run_id", lambda: "20990101T000000Z-abcdef")
    recorded = pytester.path / "reports" / "20990101T000000Z-abcdef" / "runs"
    recorded.mkdir(parents=True)
    (recorded / "outage.json").write_text(json.dumps({"events": [
        {"kind": "health", "name": "before", "start": 0.5, "end": 0.5,
         "data": {"statuses": {m: {"leader": 1, "term": 2} for m in IDS.values()}}},
        {"kind": "fault", "name": "zone-outage", "start": 1.0, "end": 3.0, "data": {"effective_at": 1.0, "healed_at": 3.0}}],
        "histories": [{"prefix": "/p/", "via_zone": "zone-a", "member_ids": {str(k): v for k, v in IDS.items()},
                       "path": "etcd", "members": list(IDS.values()), "fields": FIELDS,
                       "samples": [[getattr(s, f) for f in FIELDS] for s in kept_run()]}]}))
    monkeypatch.setattr(lead, "new_leader", lambda s, after, leader_id, term_before: seen("m1", 1.5, 3, 2))

    code = cli.main(["--config", str(cfg), "nightly", "--", "test_features.py"])

    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "judged on 1 run(s) with a fault window: 2 both held" in out
    assert "harness defect: outage.json: both hold: 'the etcd leader does not change' and 'a new leader is elected'" in err
