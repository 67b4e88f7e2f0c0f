"""The task executor on a real seed: a task an executor left in progress when it died is failed by
the next one (nobody knows how far it got), and a finished task goes after its TTL."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from harness.operator_tasks import tasks as t
from harness.kube.cluster import KubeApiError
from harness.providers.local.region import LocalEnvironment
from harness.wait import wait_for
from harness.processes import pid_alive
from tests.integration.conftest import backed_up_with_seed

pytestmark = pytest.mark.kube


@pytest.fixture
def seeded() -> Iterator[LocalEnvironment]:
    with backed_up_with_seed("tx", "10.98") as env:
        yield env


def test_an_orphaned_task_fails_and_a_finished_one_goes_after_its_ttl(seeded: LocalEnvironment) -> None:
    env = seeded
    ep = env.task_endpoint()
    pid = env.refresh()["task_executors"]["default/etcd"]["pid"]
    os.kill(pid, signal.SIGKILL)  # the executor dies; its record stays in the region's state
    wait_for(lambda: pid_alive(pid), lambda alive: not alive, "the executor gone", 10.0)
    t.create_task(ep.kube, t.task_manifest("orphan", ep.namespace, t.ON_DEMAND_SNAP_COMPACTION, ep.etcd_name))
    t.patch_status(ep.kube, ep.namespace, "orphan", {"taskStatus": t.IN_PROGRESS, "initiatedAt": t.now()})

    again = env.task_endpoint()  # the record's process is dead: a new executor starts
    assert env.refresh()["task_executors"]["default/etcd"]["pid"] != pid
    done = t.summary(t.wait_finished(again.kube, again.namespace, "orphan", 10.0))
    assert done["state"] == t.FAILED
    assert done["lastErrors"][0]["code"] == "ERR_EXECUTOR_RESTARTED"

    t.create_task(ep.kube, t.task_manifest("brief", ep.namespace, t.ON_DEMAND_SNAPSHOT, ep.etcd_name,
                                           {"snapshotType": "full-snapshot"}, ttl_s=0))

    def gone() -> str | None:
        try:
            return t.state(t.get_task(ep.kube, ep.namespace, "brief"))
        except KubeApiError as e:
            return "gone" if e.status == 404 else str(e)

    wait_for(gone, lambda s: s == "gone", "the finished task deleted after its TTL of 0 s", 20.0)
    counts = t.task_counts(again.metrics_url or "")
    assert counts[(t.ON_DEMAND_SNAPSHOT, "success")] == 1.0
    assert counts[(t.ON_DEMAND_SNAP_COMPACTION, "failed")] == 1.0
