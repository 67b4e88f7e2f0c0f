"""chaostoolkit actions for DEP-05's operator tasks (seed 003), one a task type, and the faults of
backups: a member's volume lost, the object store unreachable.

Each task action creates an EtcdOperatorTask on the environment's seed and waits until it is
completed, rejected or failed (bounded by `timeout`); it returns the task's summary and raises
when the task did not complete, so an experiment's method fails with the task's reason.
"""

from __future__ import annotations

import logging
from typing import Any

from harness.operator_tasks import tasks as t
from harness.chaostoolkit.actions import _inject, _leader_member, _recover
from harness.chaostoolkit.context import bounded, environment, positive
from harness.errors import CapabilityMissing, ConfigError, HarnessError
from harness.providers.base import Environment, OperatorTasks

__all__ = ["recover_quorum_loss", "take_snapshot", "compact_snapshots", "volume_loss", "backup_store_outage",
           "backup_store_recovery"]

logger = logging.getLogger("chaostoolkit")
SNAPSHOT_TYPES = {"full": "full-snapshot", "delta": "delta-snapshot"}


class TaskNotCompleted(HarnessError):
    """The task ended rejected or failed."""


def _run_task(env: Environment, kind: str, config: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
    if not isinstance(env, OperatorTasks):
        raise CapabilityMissing(f"the {env.provider} environment runs no operator tasks for its etcd")
    limit = positive(timeout, "timeout", 600.0)

    def run() -> dict[str, Any]:
        ep = env.task_endpoint()
        name = t.unique_name(kind)
        t.create_task(ep.kube, t.task_manifest(name, ep.namespace, kind, ep.etcd_name, config))
        return t.summary(t.wait_finished(ep.kube, ep.namespace, name, limit))

    done = bounded(run, limit + 60.0, f"the {kind}")
    reason = (done.get("lastOperation") or {}).get("reason")
    logger.info(f"harness: {kind} {done['name']} {done['state']}: {reason}")
    if done["state"] != t.COMPLETED:
        raise TaskNotCompleted(f"{kind} {done['name']} ended {done['state']}: {reason}")
    return done


def recover_quorum_loss(timeout: float = 600.0, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """A QuorumLossRecoveryTask: every member restored from the backups (rejected while there is quorum)."""
    return _run_task(environment(configuration), t.QUORUM_LOSS_RECOVERY, None, timeout)


def take_snapshot(snapshot_type: str = "full", timeout: float = 300.0,
                  configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OnDemandSnapshotTask: a "full" or "delta" snapshot from the leading backup sidecar."""
    if snapshot_type not in SNAPSHOT_TYPES:
        raise HarnessError(f"unknown snapshot type {snapshot_type!r}; accepted: {', '.join(SNAPSHOT_TYPES)}")
    return _run_task(environment(configuration), t.ON_DEMAND_SNAPSHOT,
                     {"snapshotType": SNAPSHOT_TYPES[snapshot_type]}, timeout)


def compact_snapshots(timeout: float = 600.0, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """An OnDemandSnapCompactionTask: the store's full snapshot and deltas made into a new full snapshot."""
    return _run_task(environment(configuration), t.ON_DEMAND_SNAP_COMPACTION, None, timeout)


def volume_loss(members: str = "leader", max_duration: float = 300.0,
                configuration: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Destroy members' volumes with their pods, back to back (irreversible: recover_quorum_loss
    brings the cluster back). `members`: comma-separated names, "leader", or "follower" (a member
    that does not lead), all resolved before the first volume goes."""
    env = environment(configuration)
    wanted = [m.strip() for m in members.split(",") if m.strip()]
    leader = _leader_member(env) if {"leader", "follower"} & set(wanted) else None
    followers = [m.name for m in env.members if m.name != leader]  # type: ignore[attr-defined]
    chosen = [leader if m == "leader" else followers.pop(0) if m == "follower" else env.member(m).name for m in wanted]
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"volume_loss: {members!r} names a member twice ({', '.join(map(str, chosen))})")
    return [_inject(env, "volume-loss", str(m), None, max_duration) for m in chosen]


def backup_store_outage(zone: str = "all", max_duration: float = 300.0,
                        configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """The backup store unreachable from `zone` (or from "all" zones)."""
    env = environment(configuration)
    return _inject(env, "backup-store-outage", zone if zone == "all" else env.zone(zone), None, max_duration)


def backup_store_recovery(configuration: dict[str, Any] | None = None) -> list[str]:
    """Make the backup store reachable again (every backup-store-outage)."""
    return _recover(environment(configuration), ("backup-store-outage",), None)
