"""Gardener's gardener-resource-manager on the local seed (harness.kube.resource_manager): a seed
component (it stops with the seed), started by a scenario whose reference control plane Gardener's
webhook is to decide (the gardener form), and stopped at its end: its webhooks are registered with
failurePolicy Fail, so they go first, before the process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import EnvironmentStateError
from harness.kube import resource_manager as grm
from harness.processes import terminate
from harness.topology import KubeAccess

if TYPE_CHECKING:
    from harness.kube import ControlPlane
    from harness.providers.local.core import RegionRecord

STOP_GRACE_S = 5.0


def seed_of(env: RegionRecord, component: str = grm.NAME) -> ControlPlane:
    """The region's seed, which is to run one of Gardener's components."""
    from harness.providers.local.seed.kubernetes import control_plane

    cp = control_plane(env)
    if cp is None:
        raise EnvironmentStateError(f"region {env.spec.name!r} runs no seed for {component}: bring it up with "
                                    "`harness up --kubernetes`")
    return cp


def start_resource_manager(env: RegionRecord) -> bool:
    """Running, its webhooks registered; False when it already was."""
    cp = seed_of(env)
    if grm.NAME in cp.running() and grm.calls_ha_webhook(KubeAccess(cp.kubeconfig)):
        return False
    grm.start(cp, cp.zones, cp.workdir / grm.NAME)
    return True


def stop_resource_manager(env: RegionRecord) -> list[str]:
    """Its webhook configurations removed, then the process stopped; what was done."""
    cp = seed_of(env)
    return grm.unregister(KubeAccess(cp.kubeconfig)) + stop_component(cp)


def kill_resource_manager(env: RegionRecord) -> list[str]:
    """The process stopped, its webhook configurations left registered (the fault
    resource-manager-down); what was done."""
    return [f"{done}; its webhooks stay registered" for done in stop_component(seed_of(env))]


def resource_manager_state(env: RegionRecord) -> dict[str, bool]:
    cp = seed_of(env)
    return {"running": grm.NAME in cp.running(), "registered": grm.calls_ha_webhook(KubeAccess(cp.kubeconfig))}


def stop_component(cp: ControlPlane, name: str = grm.NAME) -> list[str]:
    """One of Gardener's components on the seed stopped, if it runs; what was done."""
    record = cp.records.get(name)
    if record is None or not record.alive():
        return []
    terminate(record, STOP_GRACE_S)
    return [f"stopped {name}"]
