"""What etcd-druid reported, in a scenario's summary and its report section: each change of an
etcd's status once, with when it was first read, and the reads that failed."""

from __future__ import annotations

from pathlib import Path

from harness.probes.etcd_status import EtcdStatusSampler
from harness.report import page, summary
from harness.timeline import Timeline


def test_each_change_of_what_druid_reported_is_kept_once_and_failed_reads_counted() -> None:
    said = iter([
        {"ready": True, "readyReplicas": 3, "replicas": 3, "conditions": [{"type": "Ready", "status": "True"}]},
        {"ready": True, "readyReplicas": 3, "replicas": 3, "conditions": [{"type": "Ready", "status": "True"}]},
        RuntimeError("seed API timed out"),
        {"ready": False, "readyReplicas": 2, "replicas": 3, "conditions": [{"type": "Ready", "status": "True"}],
         "members": [{"name": "etcd-main-0", "status": "NotReady"}]},
    ])

    def read(name: str) -> dict:  # type: ignore[type-arg]
        got = next(said)
        if isinstance(got, Exception):
            raise got
        return got

    timeline = Timeline()
    sampler = EtcdStatusSampler(read, ("etcd-main",), timeline, "shoot--x")
    for _ in range(4):
        sampler.sample()
    events = [{"kind": e.kind, "name": e.name, "start": e.start, "data": e.data} for e in timeline.events]
    rows = summary.etcd_status(events)
    assert [(r["etcd"], r.get("ready"), r.get("ready_replicas"), r.get("failed_reads")) for r in rows] == [
        ("etcd-main", True, 3, None), ("etcd-main", False, 2, None), ("etcd-main", None, None, 1)]
    assert rows[1]["members"] == {"etcd-main-0": "NotReady"} and rows[1]["at"] >= rows[0]["at"]
    html = page.scenario_html(0, summary.scenario({"nodeid": "x::druid", "result": "passed"}, {"events": events}),
                              None, Path("/tmp"))
    assert "etcd-druid reported, of" in html and "2 of 3" in html and "etcd-main-0 NotReady" in html
    assert "reads that failed: 1" in html
