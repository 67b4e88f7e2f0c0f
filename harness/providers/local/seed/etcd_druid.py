"""etcd-druid on the local seed (harness.kube.druid): a seed component (it stops with the seed),
started by a scenario whose reference's etcds are gardenlet's Etcd resources, and stopped at its
end, after the control plane is gone (its undeploy deletes the Etcd resources first)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.kube import druid
from harness.providers.local.seed.resource_manager import seed_of, stop_component

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord


def start_etcd_druid(env: RegionRecord) -> bool:
    """Running, its CRDs registered; False when it already was."""
    cp = seed_of(env, druid.NAME)
    if druid.NAME in cp.running():
        return False
    druid.start(cp, cp.workdir / druid.NAME)
    return True


def stop_etcd_druid(env: RegionRecord) -> list[str]:
    """The process stopped (its CRDs stay, as on a seed); what was done."""
    return stop_component(seed_of(env, druid.NAME), druid.NAME)


def etcd_druid_running(env: RegionRecord) -> bool:
    return druid.NAME in seed_of(env, druid.NAME).running()
