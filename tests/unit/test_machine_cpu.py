"""The machine's CPU over a stretch, read from /proc/stat's first line."""

from __future__ import annotations

from pathlib import Path

from harness.probes import machine_cpu


def test_busy_and_steal_shares_between_two_readings(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    before = machine_cpu.read(stat)
    # 300 ticks busy (200 user, 40 system, 60 steal) and 100 idle since.
    stat.write_text("cpu  300 0 90 890 60 0 0 60 0 0\n")
    share = machine_cpu.between(before, machine_cpu.read(stat))
    assert share is not None and share.busy_percent == 75.0 and share.steal_percent == 15.0
    assert "75% busy" in share.describe() and "15% taken by the hypervisor" in share.describe()


def test_no_reading_or_no_time_between_is_no_share(tmp_path: Path) -> None:
    assert machine_cpu.read(tmp_path / "absent") is None
    here = machine_cpu.read()
    assert here is not None and here.cores >= 1  # this machine has a /proc/stat
    assert machine_cpu.between(None, here) is None and machine_cpu.between(here, here) is None
