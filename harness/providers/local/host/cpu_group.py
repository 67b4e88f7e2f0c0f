"""A cgroup (v2) holding a region's etcd members, only so that the kernel counts for them the time
in which at least one of their threads was ready to run but waited for a CPU (the "some" total of
its cpu.pressure). On a machine the suite shares, a write slower than a bound by no more than that
may be the machine's doing, not etcd's. No controller is enabled in the group: it limits nothing.

Where the machine has no writable cgroup2 hierarchy (a container's read-only /sys/fs/cgroup, a
user without the right), the region has no group and its latencies are judged without that
evidence: never more leniently.
"""

from __future__ import annotations

import time
from pathlib import Path

PREFIX = "ha-harness-"


def mount_point(mounts: Path = Path("/proc/self/mounts")) -> Path | None:
    """Where the cgroup2 hierarchy is mounted (/sys/fs/cgroup, or .../unified beside cgroup v1)."""
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1].replace("\\040", " "))
    return None


def path_for(region: str) -> Path | None:
    root = mount_point()
    return root / f"{PREFIX}{region}" if root else None


def create(region: str) -> Path | None:
    """The region's group, made; None where it cannot be (see the module's doc)."""
    group = path_for(region)
    if group is None:
        return None
    try:
        group.mkdir(exist_ok=True)
    except OSError:
        return None
    return group if (group / "cpu.pressure").exists() else None


def join(group: Path, pid: int) -> bool:
    """Move `pid` (every thread of it, and what it starts later) into the group."""
    try:
        (group / "cgroup.procs").write_text(str(pid))
        return True
    except OSError:  # gone already, or the group with it: the count misses it, never adds to it
        return False


def waited(group: Path) -> float | None:
    """Seconds so far in which at least one of the group's threads was ready to run and waited for
    a CPU; None without the count."""
    try:
        some = (group / "cpu.pressure").read_text().split("\n", 1)[0]
        return int(some.rsplit("total=", 1)[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


def remove(region: str, timeout: float = 5.0) -> str | None:
    """The region's group gone, what was done (None when there was no group). Whatever is still in
    it is moved to the root; a process just killed leaves it only once it is reaped, so the group
    is tried again until `timeout`."""
    group = path_for(region)
    if group is None or not group.is_dir():
        return None
    deadline = time.monotonic() + timeout
    while True:
        try:
            for pid in (group / "cgroup.procs").read_text().split():
                join(group.parent, int(pid))
            group.rmdir()
            return f"cgroup {group}"
        except FileNotFoundError:
            return f"cgroup {group}"
        except OSError as e:
            if time.monotonic() > deadline:
                return f"cgroup {group} (not removed: {e})"
        time.sleep(0.05)
