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
