"""DEP-05's operator tasks (seed 003) as resources on a seed: the EtcdOperatorTask custom
resource (druid.gardener.cloud/v1alpha1: spec with taskType, taskConfig, ttlSecondsAfterFinished;
status with taskStatus, initiatedAt, lastErrors, lastOperation, conditions), the admission rules
("Dealing with multiple operator tasks simultaneously": a duplicate is rejected, then each task's
pre-conditions, then FIFO), and the calls that create, read, wait for and delete tasks. What the
harness's steps, CLI and chaostoolkit actions use; an executor (harness.operator_tasks.executor, or
etcd-druid's) does the work.

`spec.etcdName` names the etcd cluster a task is for (the seed's text leaves it to the namespace;
a namespace may hold several).
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ConfigError
from harness.topology import KubeAccess
from harness.wait import wait_for

GROUP, VERSION, PLURAL, KIND = "druid.gardener.cloud", "v1alpha1", "etcdoperatortasks", "EtcdOperatorTask"
CRD_NAME = f"{PLURAL}.{GROUP}"

QUORUM_LOSS_RECOVERY = "QuorumLossRecoveryTask"
ON_DEMAND_SNAPSHOT = "OnDemandSnapshotTask"
ON_DEMAND_SNAP_COMPACTION = "OnDemandSnapCompactionTask"
TASK_TYPES = (QUORUM_LOSS_RECOVERY, ON_DEMAND_SNAPSHOT, ON_DEMAND_SNAP_COMPACTION)
SNAPSHOT_TYPES = ("full-snapshot", "delta-snapshot")

PENDING, IN_PROGRESS, COMPLETED, REJECTED, FAILED = "pending", "inProgress", "completed", "rejected", "failed"
FINISHED = (COMPLETED, REJECTED, FAILED)
ACTIVE = (PENDING, IN_PROGRESS)
DEFAULT_TTL_S = 3600
# The metrics' `state` label (DEP-05 "Metrics"): one of failed, success, rejected.
METRIC_STATE = {COMPLETED: "success", FAILED: "failed", REJECTED: "rejected"}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def crd_manifest() -> dict[str, Any]:
    """The CustomResourceDefinition, its schema after DEP-05's API section."""
    status_props = {
        "observedGeneration": {"type": "integer", "format": "int64"},
        "taskStatus": {"type": "string", "enum": [PENDING, IN_PROGRESS, COMPLETED, REJECTED, FAILED]},
        "initiatedAt": {"type": "string", "format": "date-time"},
        "lastErrors": {"type": "array", "items": {"type": "object", "properties": {
            "code": {"type": "string"}, "description": {"type": "string"},
            "lastUpdateTime": {"type": "string", "format": "date-time"}}}},
        "lastOperation": {"type": "object", "properties": {
            "name": {"type": "string"}, "state": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"}, "reason": {"type": "string"}}},
        "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["taskType"], "properties": {
            "taskType": {"type": "string", "enum": list(TASK_TYPES)},
            "taskConfig": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "ttlSecondsAfterFinished": {"type": "integer", "format": "int32", "minimum": 0},
            "etcdName": {"type": "string"}}},
        "status": {"type": "object", "properties": status_props}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"plural": PLURAL, "singular": "etcdoperatortask", "kind": KIND, "shortNames": ["eot"]},
                 "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": schema},
                               "additionalPrinterColumns": [
                                   {"name": "Type", "type": "string", "jsonPath": ".spec.taskType"},
                                   {"name": "Etcd", "type": "string", "jsonPath": ".spec.etcdName"},
                                   {"name": "State", "type": "string", "jsonPath": ".status.taskStatus"},
                                   {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]}}


def task_manifest(name: str, namespace: str, task_type: str, etcd_name: str, config: Mapping[str, Any] | None = None,
                  ttl_s: int | None = None) -> dict[str, Any]:
    """A task, checked before anything is created: a type and a config DEP-05 defines."""
    if task_type not in TASK_TYPES:
        raise ConfigError(f"unknown task type {task_type!r}; accepted: {', '.join(TASK_TYPES)}")
    config = dict(config or {})
    if task_type == ON_DEMAND_SNAPSHOT:
        if config.get("snapshotType") not in SNAPSHOT_TYPES:
            raise ConfigError(f"{ON_DEMAND_SNAPSHOT} needs taskConfig.snapshotType, one of {', '.join(SNAPSHOT_TYPES)}; "
                              f"got {config.get('snapshotType')!r}")
    elif config:
        raise ConfigError(f"{task_type} takes no task config (DEP-05 sets it to nil), got {config}")
    if ttl_s is not None and (isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or ttl_s < 0):
        raise ConfigError(f"ttlSecondsAfterFinished must be a whole number of seconds >= 0, got {ttl_s!r}")
    spec: dict[str, Any] = {"taskType": task_type, "etcdName": etcd_name,
                            "ttlSecondsAfterFinished": DEFAULT_TTL_S if ttl_s is None else ttl_s}
    if config:
        spec["taskConfig"] = config
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


# -- admission: pure, over what the executor observed ------------------------------------------
@dataclass(frozen=True)
class ClusterFacts:
    """What the pre-conditions are judged on, as observed just before."""

    replicas: int
    quorum: bool  # a leader that a majority of the members follow
    backups: bool  # backups are configured and the store holds a full snapshot


def state(task: Mapping[str, Any]) -> str | None:
    return (task.get("status") or {}).get("taskStatus")


def _same_kind(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    sa, sb = a.get("spec") or {}, b.get("spec") or {}
    if sa.get("taskType") != sb.get("taskType") or sa.get("etcdName") != sb.get("etcdName"):
        return False
    if sa.get("taskType") == ON_DEMAND_SNAPSHOT:  # "with the same SnapshotType"
        return (sa.get("taskConfig") or {}).get("snapshotType") == (sb.get("taskConfig") or {}).get("snapshotType")
    return True


def admit(task: Mapping[str, Any], others: Sequence[Mapping[str, Any]], facts: ClusterFacts) -> str | None:
    """None when the task may queue; else why it is rejected: a duplicate of a task pending or in
    progress for the same etcd, then its type's pre-conditions (DEP-05's table and use cases)."""
    name = task["metadata"]["name"]
    spec = task.get("spec") or {}
    kind = spec.get("taskType")
    for other in others:
        if other["metadata"]["name"] != name and state(other) in ACTIVE and _same_kind(task, other):
            return f"duplicate of task {other['metadata']['name']} ({state(other)}): one {kind} at a time per etcd"
    if kind not in TASK_TYPES:
        return f"unknown task type {kind!r}; accepted: {', '.join(TASK_TYPES)}"
    if kind == ON_DEMAND_SNAPSHOT:
        snapshot = (spec.get("taskConfig") or {}).get("snapshotType")
        if snapshot not in SNAPSHOT_TYPES:
            return f"taskConfig.snapshotType must be one of {', '.join(SNAPSHOT_TYPES)}, got {snapshot!r}"
        if not facts.backups:
            return "backups are not enabled for this etcd (no full snapshot in its store)"
        if not facts.quorum:
            return "the etcd cluster has no quorum: an on-demand snapshot needs a healthy cluster"
    elif kind == QUORUM_LOSS_RECOVERY:
        if not facts.backups:
            return "there is no backup to recover from (no full snapshot in the store)"
        if facts.replicas > 1 and facts.quorum:
            return (f"the etcd cluster has quorum ({facts.replicas} members): this task recovers from a permanent "
                    "quorum loss only")
    elif kind == ON_DEMAND_SNAP_COMPACTION and not facts.backups:
        return "backups are not enabled for this etcd (no full snapshot in its store)"
    return None


# -- the API calls ------------------------------------------------------------------------------
def _api(kube: KubeAccess) -> Any:
    from kubernetes import client as k8s

    from harness.kube.cluster import connect

    return k8s.CustomObjectsApi(connect(kube))


def install_crd(kube: KubeAccess, timeout: float = 30.0) -> None:
    """The CRD, once; returns when the API serves the resource."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    from harness.kube.cluster import api_errors, connect

    ext = k8s.ApiextensionsV1Api(connect(kube))
    with api_errors(f"creating the {CRD_NAME} CustomResourceDefinition"):
        try:
            ext.create_custom_resource_definition(crd_manifest())
        except ApiException as e:
            if e.status != 409:  # 409: installed before
                raise

    def established() -> bool:
        crd = ext.read_custom_resource_definition(CRD_NAME)
        return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))

    wait_for(established, bool, f"the {CRD_NAME} CustomResourceDefinition established", timeout)


def create_task(kube: KubeAccess, manifest: Mapping[str, Any]) -> dict[str, Any]:
    from harness.kube.cluster import api_errors

    ns = manifest["metadata"]["namespace"]
    with api_errors(f"creating task {manifest['metadata']['name']} in {ns}"):
        return dict(_api(kube).create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, dict(manifest)))


def get_task(kube: KubeAccess, namespace: str, name: str) -> dict[str, Any]:
    from harness.kube.cluster import api_errors

    with api_errors(f"reading task {name} in {namespace}"):
        return dict(_api(kube).get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name))


def list_tasks(kube: KubeAccess, namespace: str) -> list[dict[str, Any]]:
    """Oldest first (FIFO: creation time, then name)."""
    from harness.kube.cluster import api_errors

    with api_errors(f"listing the tasks in {namespace}"):
        items = _api(kube).list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    return sorted(items, key=lambda t: (t["metadata"]["creationTimestamp"], t["metadata"]["name"]))


def delete_task(kube: KubeAccess, namespace: str, name: str) -> None:
    from harness.kube.cluster import api_errors

    with api_errors(f"deleting task {name} in {namespace}"):
        _api(kube).delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def patch_status(kube: KubeAccess, namespace: str, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
    from harness.kube.cluster import api_errors

    with api_errors(f"updating the status of task {name}"):
        return dict(_api(kube).patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, name,
                                                                     {"status": dict(status)}))


def wait_finished(kube: KubeAccess, namespace: str, name: str, timeout: float,
                  progress_every: float = 5.0) -> dict[str, Any]:
    """The task once it is completed, rejected or failed; WaitTimeout with its last state if not."""
    def seen() -> tuple[str | None, str | None]:
        status = get_task(kube, namespace, name).get("status") or {}
        return status.get("taskStatus"), (status.get("lastOperation") or {}).get("reason")

    wait_for(seen, lambda s: s[0] in FINISHED, f"task {name} to finish", timeout, interval=0.2,
             progress_every=progress_every)
    return get_task(kube, namespace, name)


def summary(task: Mapping[str, Any]) -> dict[str, Any]:
    """What `harness task status` prints of a task."""
    status = task.get("status") or {}
    spec = task.get("spec") or {}
    return {"name": task["metadata"]["name"], "namespace": task["metadata"].get("namespace"),
            "type": spec.get("taskType"), "config": spec.get("taskConfig"), "etcd": spec.get("etcdName"),
            "state": status.get("taskStatus"), "initiatedAt": status.get("initiatedAt"),
            "lastOperation": status.get("lastOperation"), "lastErrors": status.get("lastErrors") or [],
            "created": task["metadata"].get("creationTimestamp")}


_NAMES = itertools.count(1)


def unique_name(task_type: str) -> str:
    short = {QUORUM_LOSS_RECOVERY: "quorum-loss-recovery", ON_DEMAND_SNAPSHOT: "snapshot",
             ON_DEMAND_SNAP_COMPACTION: "snapshot-compaction"}.get(task_type, "task")
    return f"{short}-{int(time.time() * 1000) % 10**10}-{next(_NAMES)}"  # two in one millisecond differ



def task_counts(metrics_url: str, timeout: float = 5.0) -> dict[tuple[str, str], float]:
    """etcd_operator_tasks_total by (type, state), read from the executor's /metrics."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    from harness.errors import EnvironmentStateError

    try:
        with urllib.request.urlopen(metrics_url, timeout=timeout) as resp:
            text = resp.read().decode()
    except OSError as e:
        raise EnvironmentStateError(f"the task executor's metrics at {metrics_url}: {e}") from None
    return {(sample.labels["type"], sample.labels["state"]): sample.value
            for family in text_string_to_metric_families(text) if family.name == "etcd_operator_tasks"
            for sample in family.samples if sample.name == "etcd_operator_tasks_total"}
