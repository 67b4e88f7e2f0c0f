"""DEP-05's task resource: manifests checked before anything is created, and the admission rules
(a duplicate rejected, then each type's pre-conditions) over observed facts."""

from __future__ import annotations

from typing import Any

import pytest

from harness.operator_tasks import tasks as t
from harness.errors import ConfigError

QUORUM = t.ClusterFacts(replicas=3, quorum=True, backups=True)
LOST = t.ClusterFacts(replicas=3, quorum=False, backups=True)


def task(name: str, kind: str, config: dict[str, Any] | None = None, state: str | None = None,
         etcd: str = "etcd") -> dict[str, Any]:
    made = t.task_manifest(name, "default", kind, etcd, config)
    return made | ({"status": {"taskStatus": state}} if state else {})


FULL = {"snapshotType": "full-snapshot"}
DELTA = {"snapshotType": "delta-snapshot"}


def test_manifest_is_dep05s_shape() -> None:
    made = t.task_manifest("s", "ns", t.ON_DEMAND_SNAPSHOT, "etcd-main", FULL, 60)
    assert made["apiVersion"] == "druid.gardener.cloud/v1alpha1" and made["kind"] == "EtcdOperatorTask"
    assert made["spec"] == {"taskType": "OnDemandSnapshotTask", "etcdName": "etcd-main", "ttlSecondsAfterFinished": 60,
                            "taskConfig": FULL}
    schema = t.crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    assert set(schema["status"]["properties"]) == {"observedGeneration", "taskStatus", "initiatedAt", "lastErrors",
                                                    "lastOperation", "conditions"}
    assert schema["status"]["properties"]["taskStatus"]["enum"] == ["pending", "inProgress", "completed", "rejected",
                                                                     "failed"]


@pytest.mark.parametrize("kind, config, ttl, message", [
    ("Backup", None, None, "unknown task type 'Backup'; accepted: QuorumLossRecoveryTask"),
    (t.ON_DEMAND_SNAPSHOT, None, None, "needs taskConfig.snapshotType, one of full-snapshot, delta-snapshot"),
    (t.ON_DEMAND_SNAPSHOT, {"snapshotType": "incremental"}, None, "got 'incremental'"),
    (t.QUORUM_LOSS_RECOVERY, FULL, None, "takes no task config"),
    (t.ON_DEMAND_SNAP_COMPACTION, None, -1, "ttlSecondsAfterFinished must be"),
])
def test_bad_tasks_are_refused_before_anything_is_made(kind: str, config: Any, ttl: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        t.task_manifest("x", "ns", kind, "etcd", config, ttl)


def test_a_duplicate_of_an_active_task_is_rejected_a_finished_one_or_another_etcd_is_not() -> None:
    new = task("b", t.ON_DEMAND_SNAPSHOT, FULL)
    assert "duplicate of task a (pending)" in str(t.admit(new, [task("a", t.ON_DEMAND_SNAPSHOT, FULL, t.PENDING)], QUORUM))
    assert "duplicate of task a (inProgress)" in str(
        t.admit(new, [task("a", t.ON_DEMAND_SNAPSHOT, FULL, t.IN_PROGRESS)], QUORUM))
    assert t.admit(new, [task("a", t.ON_DEMAND_SNAPSHOT, FULL, t.COMPLETED)], QUORUM) is None
    assert t.admit(new, [task("a", t.ON_DEMAND_SNAPSHOT, DELTA, t.PENDING)], QUORUM) is None  # another snapshotType
    assert t.admit(new, [task("a", t.ON_DEMAND_SNAPSHOT, FULL, t.PENDING, etcd="etcd-events")], QUORUM) is None
    assert t.admit(new, [new], QUORUM) is None  # itself


def test_pre_conditions() -> None:
    snapshot, recovery = task("s", t.ON_DEMAND_SNAPSHOT, DELTA), task("r", t.QUORUM_LOSS_RECOVERY)
    compaction = task("c", t.ON_DEMAND_SNAP_COMPACTION)
    assert "no quorum" in str(t.admit(snapshot, [], LOST))
    assert t.admit(snapshot, [], QUORUM) is None
    assert "has quorum" in str(t.admit(recovery, [], QUORUM))
    assert t.admit(recovery, [], LOST) is None
    # A single member: the recovery restores it from the full snapshot, quorum or not.
    assert t.admit(recovery, [], t.ClusterFacts(1, True, True)) is None
    no_backups = t.ClusterFacts(3, False, False)
    assert "no backup to recover from" in str(t.admit(recovery, [], no_backups))
    assert "backups are not enabled" in str(t.admit(snapshot, [], t.ClusterFacts(3, True, False)))
    assert "backups are not enabled" in str(t.admit(compaction, [], no_backups))
    assert t.admit(compaction, [], LOST) is None  # runs apart from the cluster: no quorum needed
