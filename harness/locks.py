"""One file lock: an exclusive flock, released when the holder exits however it exits.

Used for the state file's read-modify-write, for claiming a seed's uplink network and for one
Go build per cache. While another process holds the lock the waiter says so now and then (what
it waits for, for how long), so a wait behind a long build or a stuck process is never silent.
(The kubeconfig keeps kubectl's own `<file>.lock` convention instead: kubectl must see it.)
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def _say(message: str) -> None:
    print(f"[harness] {message}", file=sys.stderr, flush=True)


def holders(path: Path) -> list[int]:
    """The processes holding a lock on `path`, as /proc/locks names them ("1: FLOCK ADVISORY WRITE
    PID MAJ:MIN:INODE 0 EOF"; a waiter's line has "->" and is left out)."""
    try:
        st = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    found = []
    for fields in (line.split() for line in lines):
        if "->" in fields or len(fields) < 6:
            continue
        try:
            major, minor, inode = fields[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino):
                found.append(int(fields[4]))
        except ValueError:
            continue
    return found


@contextmanager
def held(path: Path, what: str, progress: Callable[[str], None] = _say, heartbeat_s: float = 10.0,
         waiting: Callable[[Path], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path`: a directory (nothing left behind), or a lock file made
    if missing. `what` names what the lock guards, for the progress lines while waiting;
    `waiting(path)` is called with them (e.g. to hurry the holder)."""
    fd = os.open(path, os.O_RDONLY) if path.is_dir() else os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        started, last = time.monotonic(), None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if last is None or now - last >= heartbeat_s:
                    progress(f"waiting for {what}: another harness run holds its lock {path} "
                             f"({now - started:.0f} s so far)")
                    if waiting is not None:
                        waiting(path)
                    last = now
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # releases the lock
