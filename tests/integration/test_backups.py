"""Backups of a real region to its local cloud's S3 ([region] backups): the leading sidecar's full
and delta snapshots, a leader change that leaves no gap in the store, a damaged delta refused
before any member is touched, and every member restored from the store's chain."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from harness.backup.store import DELTA, chain, decode_delta
from harness.config import load_config
from harness.errors import EnvironmentStateError
from harness.faults.runner import FaultRunner
from harness.probes.etcd import hashkv
from harness.providers.local.backups import sidecar_request
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.wait import wait_for


@pytest.fixture
def backed_up() -> Iterator[LocalEnvironment]:
    region = LocalRegion(load_config(overrides={"region.name": "bku", "region.backups": True,
                                                "region.delta_snapshot_period_s": 0.5}))
    region.down()
    try:
        yield region.up()
    finally:
        region.down()


def _put(env: LocalEnvironment, prefix: str, n: int) -> int:
    client = env.client(env.members[0].name, timeout=5.0)
    try:
        return max(client.put(f"{prefix}{i:04d}", f"v{i}") for i in range(n))
    finally:
        client.close()


def _store_reaches(env: LocalEnvironment, revision: int) -> None:
    wait_for(lambda: env.backup_store().latest_revision(), lambda r: r >= revision,
             f"the backup store to reach revision {revision}", 10.0)


def test_deltas_follow_on_across_a_leader_change_and_only_the_leader_writes(backed_up: LocalEnvironment) -> None:
    env = backed_up
    _store_reaches(env, _put(env, "/bk/a/", 200))
    leader = env.leader(env.wait_healthy())
    statuses = env.backup_sidecars()
    assert [m for m, s in statuses.items() if isinstance(s, dict) and s["leading"]] == [leader]
    follower = next(m.name for m in env.members if m.name != leader)
    with pytest.raises(EnvironmentStateError, match="only the leading sidecar takes snapshots"):
        sidecar_request(env, follower, "POST", "/snapshot/full")

    # Leadership moves: the new leader's sidecar carries on from the store's newest revision.
    target = env.client(follower).status().member_id
    env.client(str(leader), timeout=10.0).move_leader(target)
    wait_for(lambda: env.leader(env.status()), lambda name: name == follower, f"{follower} to lead", 10.0)
    last = _put(env, "/bk/b/", 200)
    _store_reaches(env, last)
    found = chain(env.backup_store().list())
    assert found.broken is None and found.revision == last
    events = [e for d in found.deltas for e in decode_delta(d, env.backup_store().get(d))]
    assert [e["revision"] for e in events] == sorted({e["revision"] for e in events})  # each revision once
    assert events[-1]["revision"] == last

    # On demand: a full snapshot at the cluster's revision, and an empty delta is none.
    taken = env.take_snapshot("full")
    assert taken["snapshot"]["kind"] == "Full" and taken["snapshot"]["end"] == last
    assert env.take_snapshot("delta")["snapshot"] is None


def test_a_damaged_delta_is_refused_before_any_member_is_touched_then_the_chain_restores(
        backed_up: LocalEnvironment) -> None:
    env = backed_up
    last = _put(env, "/bk/c/", 300)
    _store_reaches(env, last)
    store = env.backup_store()
    delta = next(n for n in reversed(store.list()) if n.kind == DELTA)
    good = store.get(delta)
    doc = json.loads(good)
    doc["events"] = doc["events"][:-1]
    store.put(delta, json.dumps(doc).encode())
    pids = {m.name: env.member_pid(m.name) for m in env.members}
    with pytest.raises(EnvironmentStateError, match="does not match its digest"):
        env.restore_from_backups()
    assert {m.name: env.member_pid(m.name) for m in env.members} == pids  # nothing was stopped or deleted
    store.put(delta, good)

    # Every member's volume lost (the fault, irreversible), then the store brings the cluster back.
    timeline = Timeline()
    runner = FaultRunner(env, timeline)
    for m in env.members:
        runner.inject("volume-loss", m.name, wait_healthy=False)
    assert all(not env.member_running(m.name) for m in env.members)
    assert all(a.data["irreversible"] for a in runner.active)
    done = env.restore_from_backups()
    assert done["revision"] == last and done["store_revision"] == last
    runner.heal()  # nothing to undo; the restored region is healthy again
    statuses = env.wait_healthy(env.config.timeouts.recovery)
    assert {s.revision for s in statuses.values()} == {last}
    keys = env.client(env.members[1].name, timeout=5.0).keys("/bk/c/", serializable=False)
    assert len(keys) == 300 and len(set(hashkv(env).values())) == 1
    time.sleep(1.0)  # the restored cluster's leading sidecar goes on from the store's revision
    assert any(isinstance(s, dict) and s["leading"] and s["revision"] == last for s in env.backup_sidecars().values())
