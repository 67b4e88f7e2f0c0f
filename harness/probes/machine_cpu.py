"""The machine's CPU over a stretch, from /proc/stat: how busy it was (every process, the
harness's own included) and how much of it a hypervisor took (steal). The context of a timing
verdict: an inconclusive one says what the machine had, and each scenario's run records it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CpuTimes:
    """Clock ticks summed over every core since boot."""

    busy: int  # user, nice, system, irq, softirq and steal
    idle: int  # idle and iowait
    steal: int
    cores: int


def read(path: Path = Path("/proc/stat")) -> CpuTimes | None:
    """The machine's CPU times now; None where there is no /proc/stat to read."""
    try:
        first = path.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not first or first[0] != "cpu":
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in (first[1:9] + ["0"] * 8)[:8])
    return CpuTimes(user + nice + system + irq + softirq + steal, idle + iowait, steal, os.cpu_count() or 1)


@dataclass(frozen=True)
class CpuShare:
    busy_percent: float  # of every core's time
    steal_percent: float
    cores: int

    def describe(self) -> str:
        return (f"the machine's CPU was {self.busy_percent:.0f}% busy over {self.cores} core(s), "
                f"{self.steal_percent:.0f}% taken by the hypervisor")


def between(before: CpuTimes | None, after: CpuTimes | None) -> CpuShare | None:
    """How busy the machine was from one reading to the next; None without both or without time
    between them."""
    if before is None or after is None:
        return None
    busy, idle = after.busy - before.busy, after.idle - before.idle
    if busy + idle <= 0:
        return None
    total = busy + idle
    return CpuShare(100.0 * busy / total, 100.0 * (after.steal - before.steal) / total, after.cores)
