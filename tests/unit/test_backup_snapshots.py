"""harness.backup.snapshots: what it refuses before etcdutl runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backup.snapshots import MemberSeed, restore
from harness.errors import EnvironmentStateError


def test_a_restore_never_writes_over_a_members_data(tmp_path: Path) -> None:
    empty, held = tmp_path / "etcd-0", tmp_path / "etcd-1"
    (held / "member").mkdir(parents=True)
    never_run = tmp_path / "no-etcdutl"  # reached only if the check let a member through
    seeds = [MemberSeed("etcd-0", "http://10.0.0.1:2380", empty), MemberSeed("etcd-1", "http://10.0.0.2:2380", held)]
    with pytest.raises(EnvironmentStateError, match="etcd-1 holds data: a restore makes a new data directory"):
        restore(never_run, tmp_path / "full.db", seeds, "t")
    assert not empty.exists()  # checked for all before any was made
