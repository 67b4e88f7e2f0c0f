"""The chaos job (`make run`): `harness run` runs features/gep20.feature's zone outage scenario
for each zone it is given, through pytest with the report on, and prints the GEP-20 tables and the
figures the scenario's steps recorded. Two zones, each from a control plane deployed afresh (the
one before leaves its replicas where the outage moved them: GEP-20's before table no longer holds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import HARNESS, fault_tables, namespaces

pytestmark = [pytest.mark.kube, pytest.mark.region, pytest.mark.own_reference]
ROOT = Path(__file__).resolve().parents[2]


def test_the_chaos_job_runs_the_gep20_scenario_for_each_zone_and_prints_its_tables() -> None:
    proc = subprocess.run([*HARNESS, "--name", "cj", "run", "--zone", "zone-b", "--zone", "zone-c"], capture_output=True,
                          text=True, timeout=900, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    for zone in ("zone-b", "zone-c"):
        assert f"{zone} -> ok" in out, out[-6000:]
        # GEP-20's table: during the outage the zone's etcd-main and etcd-events members Pending,
        # its nodes NotReady; after it, nothing Pending.
        during = out.split(f"--- during the outage of {zone}")[1].split("--- after")[0]
        assert sum(1 for line in during.splitlines() if line.startswith("etcd-") and " Pending " in line) == 2, during
        assert f"{zone}-1  NotReady" in during and f"{zone}-2  NotReady" in during, during
        after = out.split(f"--- after the outage of {zone}")[1].split("\n\n")[0]
        assert " Pending " not in after, after
        figures = out.split(f"  {zone}: ")[1].splitlines()[0]
        assert f"the nodes of {zone} NotReady and tainted unreachable, after the fault took effect: " in figures
        assert "lost writes: 0 writes" in figures and "lost shoot API writes: 0 writes" in figures, figures
    report = out.split("harness run: report ")[1].split()[0]
    assert Path(report).is_file(), report
    assert fault_tables("cj") == [] and namespaces("cj") == []


def test_the_chaos_job_refuses_a_region_that_is_up_and_a_zone_the_feature_lacks() -> None:
    up = subprocess.run([*HARNESS, "--name", "cj2", "up"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    try:
        assert up.returncode == 0, up.stderr
        proc = subprocess.run([*HARNESS, "--name", "cj2", "run"], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode != 0 and "region 'cj2' is up" in proc.stderr, proc.stderr
    finally:
        subprocess.run([*HARNESS, "--name", "cj2", "down"], capture_output=True, timeout=300, cwd=ROOT)
    proc = subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "features" / "test_features.py"), "-p",
                           "harness.chaos_job", "--chaos-zone", "zone-x", "--collect-only", "-q"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode != 0 and "no zone outage scenario of the gep20 form for zone(s) zone-x" in proc.stdout + proc.stderr
    assert "have zone-a, zone-b, zone-c" in proc.stdout + proc.stderr
