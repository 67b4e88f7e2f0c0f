"""etcd-druid's view of its etcds, read from each Etcd's status (harness.probes.etcd_status) and
judged over a window (harness.validate.etcd_status, harness.judge.throughout). The statuses are
in the shape etcd-druid v0.36.4 writes them (tests/kube/test_druid_pods.py reads them from it)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from harness import judge
from harness.probes.etcd_status import STALE_AFTER_S, EtcdStatusSampler, StatusRead, read_of
from harness.timeline import Timeline
from harness.validate.etcd_status import quorate_throughout


def _status(ready: bool = True, ready_replicas: int = 3, quorum: str = "True", all_members: str = "True",
            members: tuple[str, ...] = ("Ready", "Ready", "Ready")) -> dict[str, Any]:
    return {"ready": ready, "readyReplicas": ready_replicas, "replicas": 3,
            "conditions": [{"type": "Ready", "status": quorum, "reason": "Quorate" if quorum == "True" else "QuorumLost"},
                           {"type": "AllMembersReady", "status": all_members},
                           {"type": "BackupReady", "status": "Unknown"}],
            "members": [{"name": f"etcd-main-{i}", "id": f"{i:x}", "role": "Member", "status": s}
                        for i, s in enumerate(members)]}


def test_a_status_read_says_quorate_and_all_ready_as_druid_does() -> None:
    read = read_of(1.0, "etcd-main", _status())
    assert read.quorate and read.all_ready
    assert read.members == {"etcd-main-0": "Ready", "etcd-main-1": "Ready", "etcd-main-2": "Ready"}
    # A member lost: still quorate, no longer all ready (each of druid's fields on its own).
    assert not read_of(1.0, "etcd-main", _status(ready_replicas=2)).all_ready
    assert not read_of(1.0, "etcd-main", _status(ready=False)).all_ready
    assert not read_of(1.0, "etcd-main", _status(all_members="False")).all_ready
    lost = read_of(1.0, "etcd-main", _status(ready=False, ready_replicas=1, quorum="False", all_members="False",
                                             members=("NotReady", "NotReady", "Ready")))
    assert not lost.quorate and "Ready False" in lost.says() and "etcd-main-0 NotReady" in lost.says()
    # Before druid's first status: nothing is said, so neither.
    empty = read_of(1.0, "etcd-main", {})
    assert not empty.quorate and not empty.all_ready and "conditions: none" in empty.says()


def test_a_status_druid_stopped_updating_says_nothing() -> None:
    """druid rewrites its conditions every 15 s while it runs: long after its last update, the
    status is what it said before it stopped."""
    status = _status()
    for c in status["conditions"]:
        c["lastUpdateTime"] = "2026-12-08T01:00:00Z"
    at = datetime(2026, 12, 8, 1, 0, 0, tzinfo=timezone.utc).timestamp()
    fresh = read_of(1.0, "etcd-main", status, at + 20.0)
    assert fresh.updated_ago == 20.0 and fresh.quorate and fresh.all_ready and "stale" not in fresh.says()
    old = read_of(1.0, "etcd-main", status, at + STALE_AFTER_S + 1)
    assert old.stale and not old.quorate and not old.all_ready
    assert "stale: druid last updated it 46s before (not reporting)" in old.says()
    # Without the read's own time (or any update time) nothing is known of its age: as read.
    assert not read_of(1.0, "etcd-main", status).stale and not read_of(1.0, "etcd-main", _status(), at).stale


def test_a_failed_read_says_nothing_for_the_etcd() -> None:
    failed = StatusRead(2.0, "etcd-main", error="ApiException: (503)")
    assert not failed.quorate and not failed.all_ready and failed.says() == "not read (ApiException: (503))"


def _reads(*ts: float, lost_at: tuple[float, ...] = ()) -> list[StatusRead]:
    return [read_of(t, "etcd-main", _status(quorum="False") if t in lost_at else _status()) for t in ts]


def test_quorate_throughout_every_read_of_the_window_counts_and_only_those() -> None:
    seen = quorate_throughout(_reads(0.5, 10.0, 11.0, 12.0, 13.0, 14.0, 20.0, lost_at=(0.5, 20.0)), 10.0, 14.0)
    assert (seen.reads, seen.contrary, seen.unread) == (5, [], [])
    judge.throughout(seen.contrary, seen.reads, seen.unread, "quorate")
    lost = quorate_throughout(_reads(10.0, 11.0, 12.0, lost_at=(11.0,)), 10.0, 12.0)
    assert len(lost.contrary) == 1 and lost.contrary[0].startswith("11.0s: ")
    with pytest.raises(judge.ToleranceViolation, match=r"quorate: not at 1 of 3 reads"):
        judge.throughout(lost.contrary, lost.reads, lost.unread, "quorate")
    failed = quorate_throughout([*_reads(10.0, 12.0), StatusRead(11.0, "etcd-main", error="timed out")], 10.0, 12.0)
    assert failed.contrary == ["11.0s: not read (timed out)"]


def test_stretches_nobody_read_are_inconclusive_the_open_ends_counted() -> None:
    middle = quorate_throughout(_reads(10.0, 11.0, 18.0, 19.0), 10.0, 19.0)
    assert middle.unread == [(11.0, 18.0)]
    start = quorate_throughout(_reads(17.0, 18.0), 10.0, 18.0)
    end = quorate_throughout(_reads(10.0, 11.0), 10.0, 18.0)
    assert (start.unread, end.unread) == ([(10.0, 17.0)], [(11.0, 18.0)])
    for seen in (middle, start, end, quorate_throughout([], 10.0, 12.0)):
        with pytest.raises(judge.Inconclusive, match="inconclusive"):
            judge.throughout(seen.contrary, seen.reads, seen.unread, "quorate")
    # A contrary read outweighs what was not read: a violation, not inconclusive.
    both = quorate_throughout(_reads(10.0, 18.0, lost_at=(18.0,)), 10.0, 18.0)
    with pytest.raises(judge.ToleranceViolation):
        judge.throughout(both.contrary, both.reads, both.unread, "quorate")


def test_the_sampler_keeps_every_read_and_a_failed_one_as_a_gap_on_the_timeline() -> None:
    answers: dict[str, Any] = {"etcd-main": _status(), "etcd-events": RuntimeError("connection refused")}

    def read_status(name: str) -> dict[str, Any]:
        got = answers[name]
        if isinstance(got, Exception):
            raise got
        return got  # type: ignore[no-any-return]

    timeline = Timeline()
    sampler = EtcdStatusSampler(read_status, ("etcd-main", "etcd-events"), timeline, "shoot--x", interval=0.05)
    main, events = sampler.sample()
    assert main.quorate and events.error == "RuntimeError: connection refused"
    assert [r.etcd for r in sampler.sample("etcd-main")] == ["etcd-main"]
    assert len(sampler.of("etcd-main")) == 2 and len(sampler.of("etcd-events")) == 1
    marked = [e for e in timeline.events if e.kind == "etcd-status"]
    assert [(e.name, "error" in e.data) for e in marked] == [("etcd-main", False), ("etcd-events", True),
                                                             ("etcd-main", False)]
    assert marked[0].data["conditions"]["Ready"] == "True"
    sampler.start()
    sampler.stop()
    assert [e.data.get("target") for e in timeline.events if e.kind == "probe"] == ["etcd-status", "etcd-status"]
