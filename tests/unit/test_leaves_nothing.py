"""scripts/leaves_nothing.py, the check that a run leaves the machine as it found it: shown
failing on what a run could leave (a temporary file, a file in the harness's directories) and
passing on pytest's own scratch, on real commands."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "leaves_nothing.py"
spec = importlib.util.spec_from_file_location("leaves_nothing", SCRIPT)
assert spec and spec.loader
leaves_nothing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(leaves_nothing)


def sh(script: str) -> list[str]:
    return ["sh", "-c", script]


@pytest.fixture
def harness_dirs(tmp_path: Path) -> tuple[str, ...]:
    (tmp_path / "ha-harness").mkdir()
    (tmp_path / "ha-harness" / "kept.json").write_text("{}")  # there before: not the run's
    return (str(tmp_path / "ha-harness*"),)


def test_pytest_scratch_and_empty_directories_are_no_trace(harness_dirs: tuple[str, ...],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    base = harness_dirs[0].rstrip("*")
    command = sh(f'mkdir -p "$TMPDIR/pytest-of-me/pytest-0/t0" "{base}/region-x/logs" && echo $TMPDIR > {base}/../tmp')
    assert leaves_nothing.run(command, harness_dirs) == 0
    tmp = Path((Path(base).parent / "tmp").read_text().strip())
    assert tmp.name.startswith("hh-run-") and not tmp.exists()  # removed with pytest's scratch
    assert capsys.readouterr().err == ""


def test_a_temporary_file_or_a_harness_file_left_fails_and_is_named(harness_dirs: tuple[str, ...],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    base = harness_dirs[0].rstrip("*")
    command = sh(f'touch "$TMPDIR/osrcp-1.json" && mkdir "{base}/r" && touch "{base}/r/region-r.json"')
    assert leaves_nothing.run(command, harness_dirs) == 1
    err = capsys.readouterr().err
    assert "2 thing(s) left behind" in err and "osrcp-1.json" in err and f"file {base}/r/region-r.json" in err
    assert "kept.json" not in err


def test_a_regions_cgroup_left_fails_and_is_named(tmp_path: Path, harness_dirs: tuple[str, ...],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cgroup").mkdir()
    (tmp_path / "cgroup" / "ha-harness-old").mkdir()  # there before: not the run's
    assert leaves_nothing.run(sh(f'mkdir "{tmp_path}/cgroup/ha-harness-r1" "{tmp_path}/cgroup/other"'), harness_dirs,
                              str(tmp_path / "cgroup")) == 1
    err = capsys.readouterr().err
    assert "1 thing(s) left behind" in err and f"cgroup {tmp_path}/cgroup/ha-harness-r1" in err


def test_the_cgroup2_mount_is_found_beside_cgroup_v1(tmp_path: Path) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n")
    assert leaves_nothing.cgroup_root(str(mounts)) == "/sys/fs/cgroup/unified"
    mounts.write_text("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n")
    assert leaves_nothing.cgroup_root(str(mounts)) is None


def test_a_failed_command_keeps_its_temporary_files_and_its_status(harness_dirs: tuple[str, ...],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert leaves_nothing.run(sh('touch "$TMPDIR/evidence" && exit 3'), harness_dirs) == 3
    err = capsys.readouterr().err
    kept = Path(err.split("kept in ")[1].split()[0])
    assert (kept / "evidence").exists()
    shutil.rmtree(kept)


def test_usage_without_a_command() -> None:
    assert leaves_nothing.main([]) == 2 and leaves_nothing.main(["--"]) == 2
    assert leaves_nothing.main(["--", sys.executable, "-c", "pass"]) == 0


def test_an_interrupt_lets_the_command_finish_its_teardown(tmp_path: Path) -> None:
    """Ctrl-C reaches the whole process group: the check waits for the command to heal and tear
    down (subprocess.call would kill it) and keeps its status."""
    torn_down = tmp_path / "torn-down"
    child = ("import signal, sys, time\n"
             "def stop(*_):\n"
             f"    time.sleep(1); open({str(torn_down)!r}, 'w').close(); sys.exit(5)\n"
             "signal.signal(signal.SIGINT, stop)\n"
             "print('ready', flush=True); time.sleep(30)\n")
    check = subprocess.Popen([sys.executable, str(SCRIPT), "--", sys.executable, "-c", child],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert check.stdout is not None and check.stdout.readline() == "ready\n"
    os.killpg(check.pid, signal.SIGINT)
    _, err = check.communicate(timeout=20)
    assert check.returncode == 5 and torn_down.exists()
    shutil.rmtree(err.split("kept in ")[1].split()[0])
