"""A write latency the machine made long is told from etcd's own: the probe reads how long the
region's members waited for a CPU (their cgroup's CPU pressure), and a bound missed by no more than
that is inconclusive. The leader is starved for real here: pinned to one core beside four busy
processes, at the lowest priority."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness import judge
from harness.probes.availability import AvailabilityProbe
from harness.processes import cmdline
from harness.providers.local.host import cpu_group
from harness.providers.local.region import LocalEnvironment
from harness.steps.checks import p99_under
from harness.timeline import Timeline
from harness.validate import availability as av

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or cpu_group.mount_point() is None,
                                reason="needs sched_setaffinity and a cgroup2 hierarchy")
BUSY = [sys.executable, "-c", "while True: pass"]


@contextmanager
def starved(pid: int, seconds: float) -> Iterator[None]:
    """`pid` with every thread on core 0 at nice 19, beside four busy processes there at nice 0,
    each in a session of its own: with autogroups the scheduler shares a core between sessions
    first, and nice weighs only within one, so one session of busy processes would take half."""
    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    affinity, niceness = os.sched_getaffinity(pid), os.getpriority(os.PRIO_PROCESS, pid)
    hogs = [subprocess.Popen(BUSY, start_new_session=True, preexec_fn=lambda: os.sched_setaffinity(0, {0}))
            for _ in range(4)]
    try:
        for tid in tids:
            os.sched_setaffinity(tid, {0})
            os.setpriority(os.PRIO_PROCESS, tid, 19)
        time.sleep(seconds)
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        for tid in tids:
            try:
                os.sched_setaffinity(tid, affinity)
                os.setpriority(os.PRIO_PROCESS, tid, niceness)
            except ProcessLookupError:
                pass


def test_a_leader_starved_of_cpu_makes_a_missed_latency_bound_inconclusive(region_env: LocalEnvironment) -> None:
    group = region_env.state["cpu_group"]
    assert group and sorted(int(p) for p in (Path(group) / "cgroup.procs").read_text().split()) == sorted(
        region_env.member_pid(m.name) for m in region_env.members)
    timeline = Timeline()
    leader = region_env.leader()
    assert leader is not None
    pid = region_env.member_pid(leader)
    assert pid is not None and "etcd" in cmdline(pid)
    probe = AvailabilityProbe(region_env, timeline, region_env.member(leader).zone).start()
    try:
        time.sleep(1.0)
        start = timeline.now()
        with starved(pid, 3.0):
            end = timeline.now()
        time.sleep(0.5)
    finally:
        history = probe.stop()
    # The acknowledged writes: on a machine already saturated a starved leader also lets some time
    # out, and a failed write has no latency to take waits from (a bound on it stays red).
    acked = [s for s in history.samples if s.kind != "write" or s.ok]
    during = av.write_latency(acked, start, end, 0.99)
    waited = av.cpu_waited(history.samples, start, end)
    # Measured: 0.9-1.3 s over the 3 s starved on an idle machine, 0.48 s once in a run of the whole
    # suite (0.5-0.6 s over 2 s calm: the probe's threads and the members share 2 cores, and some
    # member thread waits a little at most wake-ups; the busy processes are of another session, so
    # nice weighs only within each). What counts below is the waits across the slow writes.
    assert waited > 0.1, f"the members waited {waited:.3f}s for a CPU over 3 s starved"
    # Starved, the leader's slowest writes took 6.6-12 ms where they took 3 ms; the machine's waits
    # across them explain 2-7 ms of it.
    assert during.unhindered < during.value - 0.001, during
    with pytest.raises(judge.Inconclusive, match="the members' waits for a CPU"):
        p99_under(during, during.value * 1000, "write latency")
    with pytest.raises(judge.ToleranceViolation):  # no more than it: the system's
        p99_under(during, during.unhindered * 1000 * 0.9, "write latency")


def test_harness_down_removes_the_regions_cpu_group(region_env: LocalEnvironment) -> None:
    group = Path(region_env.state["cpu_group"])
    assert group.is_dir()
    from harness.providers.local.region import LocalRegion
    from tests.integration.conftest import config_for

    assert f"cgroup {group}" in LocalRegion(config_for(region_env.spec.name)).down()
    assert not group.exists()
