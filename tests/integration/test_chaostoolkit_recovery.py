"""chaos/quorum-loss-recovery.json with the stock `chaos run`, against a region with backups and
its seed: the two volumes really go (quorum lost), the QuorumLossRecoveryTask completes, the
hypothesis holds before and after, and nothing is left in the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import judge
from harness.providers.local.region import LocalEnvironment
from tests.integration.conftest import backed_up_with_seed
from tests.integration.test_chaostoolkit import NAME, PREFIX, ROOT, assert_held, chaos_run, outputs

# make nightly; make test runs the QuorumLossRecoveryTask feature (features/backups.feature).
pytestmark = [pytest.mark.kube, pytest.mark.long]


@pytest.fixture
def backed_up() -> Iterator[LocalEnvironment]:
    """The region `chaos run` acts on (HARNESS_REGION), with backups and its seed."""
    with backed_up_with_seed(NAME, PREFIX, delta_snapshot_period_s=1.0) as env:
        yield env


def test_quorum_loss_recovery_experiment(backed_up: LocalEnvironment, tmp_path: Path) -> None:
    journal = chaos_run(ROOT / "chaos" / "quorum-loss-recovery.json", tmp_path, timeout=300)
    assert_held(journal)
    out = outputs(journal)
    judge.equal(len({f["target"] for f in out["lose-two-volumes"]}), 2, "two different members' volumes lost")
    task = out["quorum-loss-recovery-task"]
    judge.equal(task["state"], "completed", "the QuorumLossRecoveryTask's state")
    judge.holds("restored revision" in task["lastOperation"]["reason"], "the task says what it restored", seen=task)
    judge.none_of(backed_up.refresh().get("faults", []), "faults left in the ledger")
