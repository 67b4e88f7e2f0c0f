"""A member's data directory on a filesystem that forgets what was not fsynced: power loss.

etcd's robustness suite runs members on LazyFS, which holds written data in memory until it
is fsynced, so that a simulated power loss loses exactly what a real disk could lose. LazyFS
cannot be built here; ./powerloss_fs (module `ha-harness/powerloss-fs`, go-fuse pinned in its
go.mod) is the same idea as a small Go FUSE loopback, see its main.go:

- metadata (create, rename, unlink, mkdir, link, chmod, fallocate) goes to the backing
  directory at once: gentler than a real power loss, which can also lose an un-fsynced rename;
- file data and size changes stay in the helper's memory until fsync/fdatasync of the file;
  reads and mmap reads through the mount see them; closing a file persists nothing;
- `power_off` (SIGUSR1) drops every unsynced page and reports how much; `stop` (SIGTERM) writes
  everything first, a clean power-off.

The helper mounts with mount(2) (no fusermount), so it needs root and /dev/fuse. Its stderr
goes to the log given to `start`; its stdout (the "ready" line, then one JSON line when it
powers off) to a file next to it, LOG.stdout. `start` returns only the pid: `power_off` finds
that file again through /proc/PID/fd/1, so it needs nothing else from the caller.

The program is found or built like the Porcupine helper (harness/validate/linearizability.py):
the cache ${XDG_CACHE_HOME:-~/.cache}/ha-harness/powerloss-fs/<go-fuse version>-<source hash>/,
else built there with the machine's `go` under a lock, with a progress line on stderr.
`python -m harness.providers.local.host.powerloss_fs` builds it ahead of time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness import gobuild
from harness.errors import EnvironmentStateError, PrerequisiteError
from harness.gobuild import Progress
from harness.processes import cmdline, process_state

MODULE_DIR = Path(__file__).resolve().parent / "powerloss_fs"
BINARY_NAME = "powerloss-fs"
# Lines of the helper's log quoted in errors.
LOG_TAIL_LINES = 20
# Seconds to wait for a helper killed with SIGKILL to be gone.
KILL_WAIT_S = 5.0
_POLL_S = 0.02


def _stderr_progress(message: str) -> None:
    print(f"[powerloss-fs] {message}", file=sys.stderr, flush=True)


# --- the helper program ---------------------------------------------------------------------


PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, BINARY_NAME, "github.com/hanwen/go-fuse/v2", "go-fuse", "powerloss-fs", "the power-loss filesystem",
    "install Go >= 1.21 (the official release tarball unpacked into /usr/local/go, with /usr/local/go/bin on PATH) "
    f"with access to the Go module proxy, or build it yourself: `go build -o powerloss-fs .` in {MODULE_DIR}",
    "python -m harness.providers.local.host.powerloss_fs")


def helper_binary(cache_root: Path | None = None, *, progress: Progress = _stderr_progress,
                  heartbeat_s: float = 30.0) -> Path:
    """The powerloss-fs program for the pinned sources, built into the cache on first use."""
    return PROGRAM.path(cache_root, progress=progress, heartbeat_s=heartbeat_s)


# --- processes and mounts -------------------------------------------------------------------


def is_mounted(mount: Path) -> bool:
    """Whether anything is mounted at `mount`, by /proc/self/mounts: never stats the mount, which
    can fail (ENOTCONN) once its helper died, or hang while the helper is stuck."""
    target = os.path.abspath(mount)
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            # Spaces and the like are octal escapes in /proc/mounts.
            if len(fields) > 1 and re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1]) == target:
                return True
    return False


def unmount(mount: Path) -> None:
    """Lazily unmount `mount` if anything is mounted there."""
    if not is_mounted(mount):
        return
    done = subprocess.run(["umount", "--lazy", str(mount)], capture_output=True, text=True, check=False)
    if done.returncode != 0 and is_mounted(mount):
        raise EnvironmentStateError(f"cannot unmount {mount}: `umount --lazy` said {done.stderr.strip()!r}")


def _is_helper(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) powerloss-fs: signals go to nothing else."""
    return (os.path.basename(cmdline(pid).split(" ", 1)[0]) == BINARY_NAME
            and process_state(pid) not in ("", "Z"))


def exited(pid: int) -> bool:
    """Whether `pid` is no longer a running powerloss-fs; reaps it if it is our child.

    Our child (start() in this process) has exited only once reaped: while it exits, its
    cmdline is already empty before it turns zombie, and judging it by /proc then would leave
    it unreaped. A child already exiting (killed by someone else) is waited for, not signalled.
    """
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
        if _is_exiting(pid):
            os.waitpid(pid, 0)  # moments away: the kernel is tearing it down
            return True
        return False
    except ChildProcessError:
        return not _is_helper(pid)


_PF_EXITING = 0x4  # include/linux/sched.h: the task is in do_exit()
_SIGKILL_BIT = 1 << (9 - 1)  # SIGKILL's bit in /proc/PID/status's SigPnd and ShdPnd


def _is_exiting(pid: int) -> bool:
    """In do_exit, a zombie, or with a SIGKILL pending: a SIGKILL cannot be blocked or caught, and
    until the killed task is scheduled again (late on a busy machine) nothing else shows it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":\t" in line)
    except (OSError, IndexError):
        return True
    pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
    return fields[0] in ("Z", "X") or bool(int(fields[6]) & _PF_EXITING) or bool(pending & _SIGKILL_BIT)


def _wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not exited(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _tail(path: Path | None) -> str:
    if path is None:
        return "(no log)"
    try:
        lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
    return "\n".join(lines) or f"({path} is empty)"


def stdout_path(log: Path) -> Path:
    """Where start() sends the helper's stdout: next to its log."""
    return log.with_name(log.name + ".stdout")


def _fd_path(pid: int, fd: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/fd/{fd}"))
    except OSError:
        return None


# --- the public operations ------------------------------------------------------------------


def start(backing: Path, mount: Path, log: Path, timeout: float) -> int:
    """Mount `backing` at `mount` through powerloss-fs; return the helper's pid once it serves.

    Creates the directories; the helper runs in a session of its own, its stderr appended to
    `log`, its stdout in stdout_path(log). Waits up to `timeout` seconds (not counting a first
    build of the helper) for its "ready" line and for `mount` to be a mount point. On failure
    raises EnvironmentStateError with the log's tail, leaving nothing mounted or running.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be positive seconds, not {timeout!r}")
    if os.geteuid() != 0:
        raise PrerequisiteError("the power-loss filesystem mounts with mount(2) (there is no fusermount): run as root")
    if not os.path.exists("/dev/fuse"):
        raise PrerequisiteError("the power-loss filesystem needs /dev/fuse (modprobe fuse; in a container, pass the device)")
    backing.mkdir(parents=True, exist_ok=True)
    mount.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    if is_mounted(mount):
        raise EnvironmentStateError(
            f"{mount} is already a mount point; stop() its helper or `umount --lazy {mount}` before mounting it again"
        )
    exe = helper_binary()
    out_path = stdout_path(log)
    with open(out_path, "w") as out, open(log, "a") as err:
        proc = subprocess.Popen(
            [str(exe), "--backing", str(backing), "--mount", str(mount)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
        )
    deadline = time.monotonic() + timeout
    why = ""
    while not why:
        if out_path.read_text(errors="replace").startswith("ready\n") and os.path.ismount(mount):
            return proc.pid
        if (rc := proc.poll()) is not None:
            why = f"exited with status {rc} before it was ready"
        elif time.monotonic() > deadline:
            why = f"was not ready within {timeout:.1f}s"
        else:
            time.sleep(_POLL_S)
    if proc.poll() is None:
        proc.kill()
        proc.wait(KILL_WAIT_S)
    unmount(mount)
    raise EnvironmentStateError(f"powerloss-fs on {mount} (backing {backing}) {why}; {log}:\n{_tail(log)}")


def power_off(pid: int, mount: Path, timeout: float) -> dict[str, Any]:
    """Power loss: the helper drops every unsynced page and size change, unmounts and exits.

    Returns {"dropped_bytes": N, "dropped_files": M}: the bytes of written, never fsynced data
    dropped, and how many files had any unsynced change. If `pid` is not a running powerloss-fs,
    unmounts `mount` if needed and returns zeros with a "note". Raises EnvironmentStateError if
    the helper does not exit within `timeout` seconds (it is then killed: the data is gone, but
    uncounted) or prints no report.
    """
    if exited(pid):
        unmount(mount)
        return {"dropped_bytes": 0, "dropped_files": 0,
                "note": f"powerloss-fs {pid} was not running: nothing was held to drop"}
    out_path, log = _fd_path(pid, 1), _fd_path(pid, 2)
    os.kill(pid, signal.SIGUSR1)
    if not _wait_exit(pid, timeout):
        _kill(pid, mount)
        raise EnvironmentStateError(
            f"powerloss-fs {pid} did not exit within {timeout:.1f}s of SIGUSR1 and was killed: the unsynced data "
            f"is gone, but was not counted; {log}:\n{_tail(log)}"
        )
    unmount(mount)
    report = _last_json(out_path, "dropped_bytes")
    if report is None:
        raise EnvironmentStateError(
            f"powerloss-fs {pid} exited without reporting what it dropped (stdout {out_path}); {log}:\n{_tail(log)}"
        )
    return {"dropped_bytes": int(report["dropped_bytes"]), "dropped_files": int(report["dropped_files"])}


def stop(pid: int, mount: Path, timeout: float) -> None:
    """Clean power-off: the helper writes and fsyncs everything held, unmounts and exits.

    After `timeout` seconds it is killed (what it held is then lost). Either way `mount` is
    unmounted (lazily) if still mounted. A `pid` that is not a running powerloss-fs is left
    alone; only the mount is cleaned up.
    """
    if not exited(pid):
        os.kill(pid, signal.SIGTERM)
        if not _wait_exit(pid, timeout):
            _kill(pid, mount)
    unmount(mount)


def _kill(pid: int, mount: Path) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _wait_exit(pid, KILL_WAIT_S)
    unmount(mount)


def _last_json(path: Path | None, key: str) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and key in value:
            return value
    return None


def main() -> int:
    """Find or build the helper and print its path."""
    try:
        print(f"{BINARY_NAME}: {helper_binary()}")
    except PrerequisiteError as exc:
        print(f"[powerloss-fs] {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
