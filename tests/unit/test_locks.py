"""harness.locks.held: one holder at a time across processes, a waiter that says what it awaits,
and nothing left behind on a directory."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from harness.locks import held


def _hold(path: str, seconds: float, ready: "multiprocessing.synchronize.Event") -> None:
    with held(Path(path), "the test's resource", progress=lambda m: None):
        ready.set()
        time.sleep(seconds)


def test_a_second_process_waits_and_says_so_until_the_holder_exits(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    ready = multiprocessing.get_context("fork").Event()
    holder = multiprocessing.get_context("fork").Process(target=_hold, args=(str(lock), 0.6, ready))
    holder.start()
    assert ready.wait(10)
    said: list[str] = []
    started = time.monotonic()
    with held(lock, "the test's resource", progress=said.append, heartbeat_s=0.2):
        waited = time.monotonic() - started
    holder.join(10)
    assert waited >= 0.3, waited  # it really waited for the other process
    assert said and said[0].startswith("waiting for the test's resource: another harness run holds its lock")


def test_a_directory_is_locked_without_a_file_left_in_it(tmp_path: Path) -> None:
    with held(tmp_path, "the directory"):
        assert list(tmp_path.iterdir()) == []
    assert list(tmp_path.iterdir()) == []


def test_the_lock_is_released_when_the_body_raises(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    try:
        with held(lock, "x"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    said: list[str] = []
    with held(lock, "x", progress=said.append):
        pass
    assert said == []  # taken at once
