"""The chaos job (`make run`): GEP-20's zone outage on the reference running for real, judged and reported."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Iterator

import pytest

from harness import chaos_run
from harness.topology import Seed
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.conftest import config_for, fault_tables

pytestmark = [pytest.mark.kube, pytest.mark.region]


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[LocalEnvironment, Seed]]:
    region = LocalRegion(config_for("cj"))
    region.down()
    env = region.up()
    try:
        yield env, region.seed(env)
    finally:
        region.down()


@pytest.mark.long  # make run is this job; make test runs it end to end in the test below
def test_chaos_job_reports_the_outage_with_gep20_tables(seeded: tuple[LocalEnvironment, Seed], tmp_path: Path) -> None:
    env, seed = seeded
    report = tmp_path / "chaos.json"
    assert chaos_run.run_all(env, seed, report, zones=["zone-b"]) == 0
    (result,) = json.loads(report.read_text())["results"]
    assert result["zone"] == "zone-b" and result["problems"] == []
    assert result["etcd_acked"] > 0 and result["shoot_acked"] > 0 and result["etcd_lost"] == result["shoot_lost"] == 0
    during = result["tables"]["during"]
    pending = [line for line in during.splitlines() if line.startswith("etcd-") and " Pending " in line]
    assert len(pending) == 2, during  # zone-b's etcd-main and etcd-events members, GEP-20's table
    assert "zone-b-1  NotReady" in during and "zone-b-2  NotReady" in during
    assert " Pending " not in result["tables"]["after"].split("\n\n")[0]
    assert fault_tables("cj") == []


def test_chaos_job_fails_when_a_bound_is_missed(seeded: tuple[LocalEnvironment, Seed], tmp_path: Path) -> None:
    env, seed = seeded
    report = tmp_path / "chaos.json"
    strict = replace(chaos_run.Bounds(), not_ready=0.5)  # no node is NotReady that soon
    assert chaos_run.run_all(env, seed, report, zones=["zone-c"], bounds=strict) == 1
    (result,) = json.loads(report.read_text())["results"]
    assert [p for p in result["problems"] if p.startswith("nodes NotReady")], result["problems"]
