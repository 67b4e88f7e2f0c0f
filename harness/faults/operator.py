"""Faults of the operators that keep a control plane on its seed: gardener-resource-manager gone,
etcd-druid gone."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, SeedEtcdDruid, SeedResourceManager

RESOURCE_MANAGER = "gardener-resource-manager"
ETCD_DRUID = "etcd-druid"


class ResourceManagerDown:
    """gardener-resource-manager gone from the seed while its webhook configurations stay, as when
    its pods are: Gardener registers them with failurePolicy Fail, so the seed's API server refuses
    every pod of a shoot namespace (pod-kube-apiserver-load-balancing) and every workload of a
    namespace the high-availability-config webhook considers until it serves again. Heal starts it
    again, its webhooks registered anew."""

    kind: ClassVar[str] = "resource-manager-down"

    def available(self, env: Environment) -> str | None:
        return lacks(env, SeedResourceManager, f"run {RESOURCE_MANAGER}")

    def validate(self, env: Environment, target: str) -> str:
        if target != RESOURCE_MANAGER:
            raise ConfigError(f"resource-manager-down takes {RESOURCE_MANAGER!r}, got {target!r}")
        assert isinstance(env, SeedResourceManager)
        state = env.resource_manager_state()
        if not (state["running"] and state["registered"]):
            raise ConfigError(f"{RESOURCE_MANAGER} does not serve the seed's webhooks now ({state}): a scenario in the "
                              "gardener form, or `harness deploy --form gardener`, starts it")
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, SeedResourceManager)
        return {"done": env.kill_resource_manager()}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, SeedResourceManager)
        state = env.resource_manager_state()
        return state if state["registered"] and not state["running"] else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, SeedResourceManager)
        env.start_resource_manager()


class EtcdDruidDown:
    """etcd-druid gone from the seed, as when its pod is: the etcds it made keep running (their
    StatefulSets are the seed's controllers'), but nothing reconciles their Etcd resources or
    updates their status, which stays as druid last wrote it. Heal starts it again; it reconciles
    what it finds."""

    kind: ClassVar[str] = "etcd-druid-down"

    def available(self, env: Environment) -> str | None:
        return lacks(env, SeedEtcdDruid, f"run {ETCD_DRUID}")

    def validate(self, env: Environment, target: str) -> str:
        if target != ETCD_DRUID:
            raise ConfigError(f"etcd-druid-down takes {ETCD_DRUID!r}, got {target!r}")
        assert isinstance(env, SeedEtcdDruid)
        if not env.etcd_druid_running():
            raise ConfigError(f"{ETCD_DRUID} does not run on the seed now: a scenario whose etcds etcd-druid makes, "
                              "or `harness deploy --form gardener --real --druid`, starts it")
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, SeedEtcdDruid)
        return {"done": env.stop_etcd_druid()}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, SeedEtcdDruid)
        return None if env.etcd_druid_running() else {"running": False}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, SeedEtcdDruid)
        env.start_etcd_druid()
