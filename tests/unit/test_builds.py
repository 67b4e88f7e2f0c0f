"""harness.builds: each build timed, a failed one named, the command beside them decides the status."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import builds


def test_each_build_is_timed_and_a_failed_one_named(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(builds, "BUILDS", (("a program that builds", "this", ()),
                                           ("a program that cannot", "harness.no_such_module", ())))
    assert builds.run_builds(every=False) == 1
    err = capsys.readouterr().err
    assert "[builds] a program that builds: ready after 0s" in err
    assert "[builds] a program that cannot: FAILED (exit 1)" in err
    assert "[builds] done; failed: a program that cannot" in err


def test_the_command_beside_the_builds_decides_the_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "builds.log"
    status = builds.main(["--log", str(log), "--beside", "--", sys.executable, "-c", "import sys; sys.exit(3)"])
    assert status == 3
    assert log.exists()
    assert "building in the background at idle priority" in capsys.readouterr().err


def test_beside_without_a_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        builds.main(["--beside", "--"])
    assert e.value.code == 2
    assert "--beside needs a command after it" in capsys.readouterr().err


def test_a_build_someone_waits_for_runs_at_normal_priority_from_then_on(tmp_path: Path) -> None:
    """The holder of a build lock, started at idle priority with a child of its own (as `go build`
    and its compilers), is found through /proc/locks and hurried, child included."""
    import fcntl
    import os
    import subprocess

    from harness.gobuild import hurry
    from harness.locks import holders

    lock = tmp_path / "build.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, subprocess, sys, time; f = open(sys.argv[1], 'w'); "
         "fcntl.flock(f, fcntl.LOCK_EX); c = subprocess.Popen(['sleep', '30']); print(c.pid, flush=True); "
         "time.sleep(30)", str(lock)],
        stdout=subprocess.PIPE, text=True, preexec_fn=builds._idle)
    try:
        assert holder.stdout is not None
        child = int(holder.stdout.readline())
        assert os.sched_getscheduler(child) == os.SCHED_IDLE
        with open(lock) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the holder's lock was free")
            except BlockingIOError:
                pass
        assert holders(lock) == [holder.pid]
        hurry(holders(lock))
        assert os.sched_getscheduler(holder.pid) == os.SCHED_OTHER
        assert os.sched_getscheduler(child) == os.SCHED_OTHER
    finally:
        os.killpg(holder.pid, 9)
        holder.wait()
