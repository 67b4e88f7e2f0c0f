"""A member's disk of its own ([region] member_disk_mib): filled by member-disk-full, freed on heal,
swept after a crash, unmounted by `down`; and the fault refused where members share one disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.config import with_region
from harness.errors import ConfigError, FaultError
from harness.faults.runner import FaultRunner
from harness.providers.local.host import disks
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.wait import first_within, wait_for
from tests.integration.conftest import config_for


def test_a_full_disk_stops_its_member_and_heal_brings_it_back_whole() -> None:
    region = LocalRegion(with_region(config_for("dk"), member_disk_mib=192))
    region.down()
    env = region.up()
    data = Path(env.state["data_dir"])
    try:
        assert {p.name for p in disks.mounts_under(data)} == {"etcd-0", "etcd-1", "etcd-2"}
        runner = FaultRunner(env, Timeline())
        active = runner.inject("member-disk-full", "etcd-1")
        assert active.event.data["effect"]["free_bytes"] <= 65536 and (data / "etcd-1" / disks.BALLAST).exists()
        client = env.client("etcd-0", "zone-a", timeout=2.0)
        try:
            def written_until_stopped() -> bool | None:
                client.put("/it-disk/k", os.urandom(2048).hex())
                return None if env.member_running("etcd-1") else True

            assert first_within(written_until_stopped, "etcd-1 out of space", 20.0), "etcd-1 ran on with a full disk"
            # the others go on, after an election when etcd-1 led (1-2 s with a 1 s election timeout)
            wait_for(lambda: client.put("/it-disk/after", "quorum of two"), lambda rev: rev > 0,
                     "a write acknowledged by the two members left", 15.0)
        finally:
            client.close()
        runner.heal()  # waits until every member is healthy and caught up
        assert env.member_running("etcd-1") and not (data / "etcd-1" / disks.BALLAST).exists()
        assert env.member_disk_free("etcd-1") > 10 << 20
        # a ballast the ledger never knew of (a crash before it was recorded) goes with the sweep
        env.fill_member_disk("etcd-2", 1 << 20)
        assert f"removed {data / 'etcd-2' / disks.BALLAST}" in env.sweep()
    finally:
        region.down()
    assert disks.mounts_under(data) == [] and not data.exists()


def test_the_fault_needs_disks_of_their_own_and_says_how_to_get_them(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    with pytest.raises(FaultError, match=r"not a filesystem of its own: bring the region up with \[region\] "
                                         r"member_disk_mib"):
        runner.inject("member-disk-full", "etcd-0")
    with pytest.raises(ConfigError, match="leave_kib is the KiB to leave free"):
        runner.inject("member-disk-full", "etcd-0", {"leave_kib": -1})
    assert region_env.refresh()["faults"] == []
    with pytest.raises(ConfigError, match="member_disk_mib must be 0 .* or 160-4096 MiB"):
        with_region(config_for("dk"), member_disk_mib=10)
