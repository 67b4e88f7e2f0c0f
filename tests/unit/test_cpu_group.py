"""harness.providers.local.host.cpu_group: the region's members' waits for a CPU, read from the
kernel's pressure file of their cgroup (the group itself is made and removed with a real region:
tests/integration/test_cpu_waits.py)."""

from __future__ import annotations

from pathlib import Path

from harness.providers.local.host import cpu_group


def test_the_cgroup2_mount_is_found_beside_cgroup_v1_and_none_without_it(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    assert cpu_group.mount_point(mounts) == Path("/sys/fs/cgroup/unified")
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n")
    assert cpu_group.mount_point(mounts) is None
    assert cpu_group.mount_point(tmp_path / "absent") is None


def test_the_waits_are_the_some_total_of_the_groups_cpu_pressure(tmp_path: Path) -> None:
    (tmp_path / "cpu.pressure").write_text("some avg10=1.20 avg60=0.50 avg300=0.10 total=2500000\n"
                                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=900\n")
    assert cpu_group.waited(tmp_path) == 2.5
    (tmp_path / "cpu.pressure").write_text("")
    assert cpu_group.waited(tmp_path) is None
    assert cpu_group.waited(tmp_path / "gone") is None
