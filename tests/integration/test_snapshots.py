"""A full snapshot of a running region, every member's data lost, and the region made again from
the snapshot with etcdutl (etcd-druid's recovery after all members' volumes are gone)."""

from __future__ import annotations

from pathlib import Path

from harness.backup.snapshots import save_full, snapshot_status
from harness.etcd_builds import etcdutl_binary
from harness.probes.etcd import hashkv
from harness.providers.local.region import LocalRegion
from tests.integration.conftest import config_for


def test_every_members_data_lost_and_restored_from_a_full_snapshot(tmp_path: Path) -> None:
    etcdutl = etcdutl_binary()
    region = LocalRegion(config_for("sn"))
    region.down()
    env = region.up()
    try:
        leader = env.leader(env.wait_healthy())
        client = env.client(leader, None, timeout=5.0)
        try:
            for i in range(500):
                client.put(f"/it-snap/{i:04d}", f"v{i}" * 50)
            snap = save_full(client, tmp_path / "full.db", etcdutl)
            client.put("/it-snap/after", "not in the snapshot")
        finally:
            client.close()
        assert snap.size > 0 and snap.revision >= 501 and snapshot_status(etcdutl, snap.path)["revision"] == snap.revision
        assert not (tmp_path / "full.db.partial").exists()

        took = env.restore_members(snap.path, etcdutl)
        assert took > 0
        statuses = env.wait_healthy(env.config.timeouts.recovery)
        assert {s.revision for s in statuses.values()} == {snap.revision}  # the snapshot's, not one write more
        reader = env.client(env.members[0].name, None, timeout=5.0)
        try:
            keys = reader.keys("/it-snap/", serializable=False)
        finally:
            reader.close()
        assert len(keys) == 500 and "/it-snap/after" not in keys
        assert len(set(hashkv(env).values())) == 1
    finally:
        region.down()
