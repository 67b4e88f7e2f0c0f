"""Running versus Ready: what the pod tables call Running, and when the node agent reports Ready."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.kube import agent
from harness.processes import ProcessRecord, boot_id, start_ticks
from harness.kube.placement import RUNNING, RUNNING_NOT_READY, PodPlacement
from harness.steps import placement as steps


def _pod(name: str, phase: str = "Running", ready: bool = True, node_ready: bool | None = True,
         zone: str = "zone-a") -> PodPlacement:
    return PodPlacement(name, "etcd-main", phase, ready, f"{zone}-1", zone, None, None, False, {}, node_ready=node_ready)


def test_a_table_cell_running_means_running_ready_and_on_a_ready_node() -> None:
    assert _pod("serving").state == RUNNING
    assert _pod("starting", ready=False).state == RUNNING_NOT_READY
    # Ready=True on a NotReady node is its silent kubelet's last word, not a pod serving.
    assert _pod("stale", node_ready=False).state == RUNNING_NOT_READY
    assert _pod("pending", "Pending", False, node_ready=None).state == "Pending"


def test_the_table_step_counts_pods_by_what_they_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    pods = [_pod("etcd-main-0"), _pod("etcd-main-1", ready=False, zone="zone-b"),
            _pod("etcd-main-2", node_ready=False, zone="zone-c")]
    monkeypatch.setattr(steps.cluster, "connect", lambda kube: None)
    monkeypatch.setattr(steps.placement, "observe", lambda api, namespace: pods)
    shoot: Any = SimpleNamespace(seed=SimpleNamespace(kube=None), spec=SimpleNamespace(namespace="ns"))
    seen, _ = steps._pods_by_row(shoot, {"etcd-main"})
    assert seen == Counter({("etcd-main", "zone-a", "Running"): 1, ("etcd-main", "zone-b", "Running, not ready"): 1,
                            ("etcd-main", "zone-c", "Running, not ready"): 1})


def test_a_table_state_nobody_reports_is_refused() -> None:
    table = [["component", "zone", "phase"], ["etcd-main", "zone-a", "Runing"]]
    with pytest.raises(ConfigError, match="'Runing' in the table is none of"):
        steps._table_rows(table)
    assert steps._table_rows([table[0], ["etcd-main", "zone-a", "Running, not ready"]])


class _Core:
    def __init__(self) -> None:
        self.patched: list[dict[str, Any]] = []

    def patch_namespaced_pod_status(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> None:
        self.patched.append(body["status"])


def _agent(tmp_path: Any) -> agent.Agent:
    a = agent.Agent.__new__(agent.Agent)
    a.args = argparse.Namespace(host_ip="10.77.1.11")
    a.core, a.running = _Core(), {}
    a.state_path = tmp_path / "agent.json"
    return a


def _running(ready: bool) -> agent.Running:
    me = os.getpid()
    record = ProcessRecord("etcd-main-0", me, start_ticks(me) or 0, boot_id(), "/dev/null", ())
    return agent.Running("uid", "ns", "etcd-main-0", "etcd", "10.77.1.20", record.to_dict(), agent.now(), ready=ready)


def _api_pod(ready: str) -> Any:
    return SimpleNamespace(status=SimpleNamespace(
        pod_ip="10.77.1.20", conditions=[SimpleNamespace(type="Ready", status=ready)],
        container_statuses=[SimpleNamespace(restart_count=0)]))


def test_the_agent_reports_running_but_not_ready_until_the_health_check_passes(tmp_path: Any) -> None:
    status = agent.pod_status(_running(ready=False), "10.77.1.11")
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "False"
    assert status["containerStatuses"][0]["ready"] is False


def test_the_agent_reports_ready_again_after_the_node_controller_marked_the_pod_not_ready(tmp_path: Any) -> None:
    a, r = _agent(tmp_path), _running(ready=True)
    a._report(r, _api_pod("False"))
    assert len(a.core.patched) == 1  # first report
    a._report(r, _api_pod("True"))
    assert len(a.core.patched) == 1  # the API holds what the agent would say: nothing to patch
    # The zone was cut; the node controller marked the pod not Ready; the process still serves.
    a._report(r, _api_pod("False"))
    assert len(a.core.patched) == 2
    assert {c["type"]: c["status"] for c in a.core.patched[-1]["conditions"]}["Ready"] == "True"
    assert json.loads(r.reported)[0] == "True"
