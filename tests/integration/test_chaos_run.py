"""The chaos job (`make run`): every zone down in turn, figures judged and written to a report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import chaos_run
from harness.providers.local.region import LocalEnvironment
from tests.integration.conftest import fault_tables


def test_chaos_job_reports_every_zone(region_env: LocalEnvironment, tmp_path: Path) -> None:
    report = tmp_path / "chaos.json"
    # Longer than an election timeout: an outage that ends mid-election (about 1 s) can
    # stretch the write gap past 3 s, which the job rightly reports as a failure.
    assert chaos_run.run_all(region_env, outage=3.0, report=report) == 0
    results = json.loads(report.read_text())["results"]
    assert [r["zone"] for r in results] == ["zone-a", "zone-b", "zone-c"]
    assert sum(r["had_leader"] for r in results) >= 1
    assert all(r["problems"] == [] and r["lost_writes"] == 0 and r["acked_writes"] > 0 for r in results)
    assert fault_tables("it") == []


def test_chaos_job_fails_when_a_bound_is_missed(region_env: LocalEnvironment, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chaos_run, "MAX_WRITE_GAP", 0.0)  # no write gap is that small
    report = tmp_path / "chaos.json"
    assert chaos_run.run_all(region_env, outage=0.5, report=report) == 1
    problems = [p for r in json.loads(report.read_text())["results"] for p in r["problems"]]
    assert problems and all(p.startswith("write gap") for p in problems)
