"""The chaostoolkit experiments, run with the stock `chaos run` against a region of this module's own.

Each run's journal is judged: completed, the hypothesis met before and after, the rollbacks ran,
and nothing is left applied (ledger empty, no fault tables at the router). One experiment beyond
the zone tolerance (two zones down) must deviate: the hypothesis catches what it looks for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import judge
from harness.config import load_config
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.conftest import fault_tables

NAME, PREFIX = "ct", "10.97"  # a region and subnets of this module's own
ROOT = Path(__file__).parents[2]
CHAOS = Path(sys.executable).with_name("chaos")


@pytest.fixture(scope="module")
def region() -> Iterator[LocalEnvironment]:
    provider = LocalRegion(load_config(overrides={"region.name": NAME, "region.subnet_prefix": PREFIX}))
    provider.down()
    env = provider.up()
    try:
        provider.cloud(env)  # the local cloud the AWS experiment acts on
        yield env
    finally:
        provider.down()


def chaos_run(experiment: Path, workdir: Path, timeout: float = 120) -> dict[str, Any]:
    """`chaos run` as a user would type it; journal, log and settings stay in `workdir`."""
    journal = workdir / f"{experiment.stem}.journal.json"
    proc = subprocess.run(
        [str(CHAOS), "--log-file", str(workdir / f"{experiment.stem}.log"), "--settings", str(workdir / "settings.yaml"),
         "run", "--journal-path", str(journal), str(experiment)],
        cwd=workdir, capture_output=True, text=True, timeout=timeout, env={**os.environ, "HARNESS_REGION": NAME})
    assert journal.exists(), f"chaos run wrote no journal ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(journal.read_text()) | {"exit": proc.returncode, "stderr": proc.stderr}


def outputs(journal: dict[str, Any]) -> dict[str, Any]:
    return {r["activity"]["name"]: r.get("output") for r in journal["run"]}


def assert_nothing_applied(env: LocalEnvironment) -> None:
    judge.none_of(env.refresh().get("faults", []), "faults left in the ledger")
    judge.none_of(fault_tables(NAME), "fault tables left at the router")


def assert_held(journal: dict[str, Any]) -> None:
    failed = [(r["activity"]["name"], r.get("exception")) for r in journal["run"] if r["status"] != "succeeded"]
    judge.none_of(failed, "activities that did not succeed")
    judge.equal(journal["status"], "completed", f"journal status (stderr: {journal['stderr'][-1500:]})")
    judge.equal(journal["deviated"], False, "deviated")
    judge.equal(journal["steady_states"]["before"]["steady_state_met"], True, "hypothesis met before")
    judge.equal(journal["steady_states"]["after"]["steady_state_met"], True, "hypothesis met after")
    rollbacks = [(r["activity"]["name"], r["status"]) for r in journal["rollbacks"]]
    judge.holds(rollbacks and all(s == "succeeded" for _, s in rollbacks), "every rollback ran and succeeded", seen=rollbacks)
    judge.equal(journal["exit"], 0, "chaos run's exit status")


# zone-outage runs in make test; the other experiments in make nightly.
@pytest.mark.parametrize("name", ["zone-outage", *(pytest.param(n, marks=pytest.mark.long)
                                                   for n in ("node-failure", "aws-zone-outage", "load-during-outage"))])
def test_experiment_holds_and_heals(region: LocalEnvironment, tmp_path: Path, name: str) -> None:
    journal = chaos_run(ROOT / "chaos" / f"{name}.json", tmp_path)
    assert_held(journal)
    out = outputs(journal)
    gap = out["write-gap-across-the-fault"]
    # The fault really bit (writes failed over, a leader election) and writes resumed within GEP-20's bound.
    judge.holds(gap["resumed"], "writes resumed across the fault", seen=gap)
    judge.at_most(gap["longest_gap_s"], 5.0, "longest write gap across the fault", seen=gap)
    if name == "load-during-outage":
        traffic = out["cross-zone-kib-per-s-during-the-outage"]
        judge.holds(traffic["total_kib_s"] > 50, "the load crossed zones during the outage", seen=traffic)
        judge.holds(out["stop-the-load"][0]["requests"] > 100, "locust ran the load", seen=out["stop-the-load"])
    assert_nothing_applied(region)
    assert not list(ROOT.glob("journal.json")) and not (ROOT / "chaostoolkit.log").exists()


def test_two_zones_down_deviates_and_heals(region: LocalEnvironment, tmp_path: Path) -> None:
    journal = chaos_run(ROOT / "tests" / "testdata" / "chaos" / "quorum-loss.json", tmp_path)
    judge.equal(journal["steady_states"]["before"]["steady_state_met"], True, "hypothesis met before")
    judge.equal(journal["deviated"], True, "deviated (two zones down is beyond the zone tolerance)")
    judge.equal(journal["steady_states"]["after"]["steady_state_met"], False, "hypothesis met after")
    quorum = journal["steady_states"]["after"]["probes"][0]
    judge.equal(quorum["tolerance_met"], False, "the quorum probe's tolerance")
    judge.holds("out of tolerance" in (tmp_path / "quorum-loss.log").read_text(), "the log says what was out of tolerance")
    judge.equal(journal["exit"], 1, "chaos run's exit status on deviation")
    judge.holds(all(r["status"] == "succeeded" for r in journal["rollbacks"]), "the heal rollback ran",
                seen=journal["rollbacks"])
    assert_nothing_applied(region)


def test_bad_zone_names_the_zones_and_applies_nothing(region: LocalEnvironment, tmp_path: Path) -> None:
    from harness.chaostoolkit import actions
    from harness.errors import ConfigError

    with pytest.raises(ConfigError, match=r"unknown zone 'zone-x'; this environment has zones: zone-a, zone-b, zone-c"):
        actions.zone_outage(zone="zone-x", configuration={"harness_region": NAME})
    assert_nothing_applied(region)
