"""chaos/quorum-loss-recovery.json with the stock `chaos run`, against a region with backups and
its seed: the two volumes really go (quorum lost), the QuorumLossRecoveryTask completes, the
hypothesis holds before and after, and nothing is left in the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import judge
from harness.config import load_config
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.test_chaostoolkit import ROOT, assert_held, chaos_run, outputs

pytestmark = pytest.mark.kube


@pytest.fixture
def backed_up(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalEnvironment]:
    provider = LocalRegion(load_config(overrides={"region.name": "ct", "region.subnet_prefix": "10.97",
                                                  "region.backups": True, "region.delta_snapshot_period_s": 1.0}))
    provider.down()
    env = provider.up()
    try:
        provider.seed(env)
        yield env
    finally:
        provider.down()


def test_quorum_loss_recovery_experiment(backed_up: LocalEnvironment, tmp_path: Path) -> None:
    journal = chaos_run(ROOT / "chaos" / "quorum-loss-recovery.json", tmp_path, timeout=300)
    assert_held(journal)
    out = outputs(journal)
    judge.equal(len({f["target"] for f in out["lose-two-volumes"]}), 2, "two different members' volumes lost")
    task = out["quorum-loss-recovery-task"]
    judge.equal(task["state"], "completed", "the QuorumLossRecoveryTask's state")
    judge.holds("restored revision" in task["lastOperation"]["reason"], "the task says what it restored", seen=task)
    judge.none_of(backed_up.refresh().get("faults", []), "faults left in the ledger")
