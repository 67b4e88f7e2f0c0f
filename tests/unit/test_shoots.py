"""A scenario's reference deployments (harness.steps.holders.Shoots): a form that Gardener's
webhook decides needs an environment that can run it, and says so before anything is applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config import load_config
from harness.errors import CapabilityMissing
from harness.reference.render import ReferenceSpec
from harness.steps.holders import Shoots
from harness.topology import KubeAccess, Seed


class _NoGardener:
    provider = "cluster"


def test_the_gardener_form_on_an_environment_without_gardeners_webhook_is_refused_before_anything_is_applied(
        tmp_path: Path) -> None:
    shoots = Shoots(load_config(None))
    seed = Seed(KubeAccess(tmp_path / "kubeconfig"), None)
    with pytest.raises(CapabilityMissing, match="gardener form needs Gardener's gardener-resource-manager on the seed, "
                                                "which the cluster environment cannot run"):
        shoots.deploy(seed, ReferenceSpec("zone", ("a", "b", "c"), "gardener"), env=_NoGardener())  # type: ignore[arg-type]
    assert shoots.deployed == [] and shoots.started == []
