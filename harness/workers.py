"""pytest-xdist workers: how many a machine takes, and the region each one runs its scenarios in.

Every worker is a pytest session of its own with a region (and, where a scenario needs one, a
seed) of its own, named after the worker: `--region-name pt` gives `pt0`, `pt1`, ...
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import ConfigError

# What one worker's region, seed and shoot control plane hold at their largest (a region of 5
# members with the seed and the reference on it), with room for the tests' own processes.
WORKER_MEMORY_BYTES = 3 * 1024 ** 3
MAX_WORKERS = 4  # region names leave room for one digit; more than this buys nothing on a CI runner


def count(cores: int, available_bytes: int) -> int:
    """Workers for a machine: one per core, as many as its free memory holds, 1 to MAX_WORKERS.

    A worker spends most of its time waiting for the system under test (elections, outages held
    for seconds, pods coming back), so one per core keeps both cores of a 2-core runner busy without
    starving the etcds the timing verdicts are about."""
    return max(1, min(cores, available_bytes // WORKER_MEMORY_BYTES, MAX_WORKERS))


def machine_count() -> int:
    """count() for this machine: the cores this process may run on and the memory available now."""
    return count(len(os.sched_getaffinity(0)), _available_memory(Path("/proc/meminfo")))


def _available_memory(meminfo: Path) -> int:
    for line in meminfo.read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise ConfigError(f"{meminfo} has no MemAvailable line; cannot tell how many workers the machine holds")


def region_name(name: str, worker_id: str) -> str:
    """The region of worker `gwN` of a session whose region is `name`: the name with N appended."""
    if not worker_id.startswith("gw") or not worker_id[2:].isdigit():
        raise ConfigError(f"pytest-xdist worker ids look like gw0, gw1, ...; got {worker_id!r}")
    named = f"{name}{int(worker_id[2:])}"
    if len(named) > 4:
        raise ConfigError(f"with pytest-xdist each worker's region is --region-name and the worker's number "
                          f"({named!r} for {worker_id}); region names are at most 4 characters, so give a "
                          f"--region-name of at most {4 - len(worker_id[2:])}")
    return named
