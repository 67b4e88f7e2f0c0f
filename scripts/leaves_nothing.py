#!/usr/bin/env python3
"""Run a command and fail when it leaves anything of the harness on the machine outside the
repository and ~/.cache: CI runners and laptops run the suite again and again.

    scripts/leaves_nothing.py -- python -m harness.builds --all --beside -- pytest ...   (make test)

The command gets a temporary directory of its own (TMPDIR; pytest's scratch, pytest-of-*, goes
there too and is removed with it). Afterwards it must hold nothing else, no network namespace
may be new, no file may be new under the harness's state and data directories, and no cgroup of
a region (ha-harness-*) may be new. After a
failed command its temporary directory is kept for reading and only the rest is checked.
Standard library only: it runs before and around everything else.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# Where the harness keeps regions (harness/config.py): root's and any user's, in memory and on disk.
HARNESS_DIRS = ("/run/ha-harness", "/tmp/ha-harness*", "/var/tmp/ha-harness*", "/dev/shm/ha-harness*")
PYTEST_SCRATCH = "pytest-of-"


def netns() -> set[str]:
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def harness_files(patterns: tuple[str, ...] = HARNESS_DIRS) -> set[str]:
    """Every file (not directory) under the harness's directories; a directory left empty is no
    trace of a run (the state directory is shared by concurrent regions and kept)."""
    found: set[str] = set()
    for base in (b for p in patterns for b in glob.glob(p)):
        for root, _, files in os.walk(base):
            found |= {os.path.join(root, f) for f in files}
    return found


def cgroup_root(mounts: str = "/proc/self/mounts") -> str | None:
    """Where the cgroup2 hierarchy is mounted (a region's group is made there)."""
    try:
        with open(mounts) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "cgroup2":
                    return parts[1]
    except OSError:
        pass
    return None


def cgroups(root: str | None) -> set[str]:
    return set(glob.glob(os.path.join(root, "ha-harness-*"))) if root else set()


def left_in(tmp: Path) -> list[str]:
    """What is in the command's temporary directory but pytest's own scratch."""
    return sorted(str(p) for p in tmp.iterdir() if not p.name.startswith(PYTEST_SCRATCH))


def _wait(child: subprocess.Popen[bytes]) -> int:
    """The command's status, once it has ended: an interrupt reaches it too and it heals and tears
    down before it exits (never killed here, as subprocess.call would); a SIGTERM is passed on."""
    signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def run(command: list[str], patterns: tuple[str, ...] = HARNESS_DIRS, groups_in: str | None = None) -> int:
    """`groups_in`: where regions' cgroups are looked for (the cgroup2 mount when not given)."""
    groups_in = groups_in or cgroup_root()
    namespaces, files, groups = netns(), harness_files(patterns), cgroups(groups_in)
    # A short name: unix sockets under pytest's scratch in it stay within their 108 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="hh-run-"))
    tmp.chmod(0o1777)  # as /tmp: the rootless tests' user writes here too
    status = _wait(subprocess.Popen(command, env={**os.environ, "TMPDIR": str(tmp)}))
    left = [f"network namespace {ns}" for ns in sorted(netns() - namespaces)]
    left += [f"file {f}" for f in sorted(harness_files(patterns) - files)]
    left += [f"cgroup {g}" for g in sorted(cgroups(groups_in) - groups)]
    if status != 0:
        print(f"leaves-nothing: the command failed; its temporary files are kept in {tmp}", file=sys.stderr)
    else:
        left += [f"temporary {p}" for p in left_in(tmp)]
        shutil.rmtree(tmp, ignore_errors=True)
    if left:
        print(f"leaves-nothing: {len(left)} thing(s) left behind on this machine:", file=sys.stderr)
        for what in left:
            print(f"  {what}", file=sys.stderr)
    return status or (1 if left else 0)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: leaves_nothing.py -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    return run(argv[argv.index("--") + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
