"""Processes the harness starts and stops: start detached, identify across harness runs, signal,
reap, read their command lines and logs. Every layer uses these; they import only the wait helpers.

A process is remembered by pid plus its kernel start time and boot id, so a later
`harness down` never signals an unrelated process that reused the pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.wait import first_within


def pid_alive(pid: int) -> bool:
    """The pid runs and is no zombie (a zombie child of ours is reaped on the way)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return process_state(pid) not in ("Z", "")


def signal_pid(pid: int, sig: signal.Signals) -> bool:
    """Send sig to pid; False when it is gone."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def reap(pid: int, timeout: float) -> None:
    """Wait up to timeout for pid to be gone (reaping it if it is our child)."""
    first_within(lambda: None if pid_alive(pid) else True, f"process {pid} to exit", timeout, interval=0.01)


def cmdline(pid: int) -> str:
    """The pid's command line, its arguments joined by spaces ("" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """Kernel start time of pid in clock ticks since boot; None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields resume after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def process_state(pid: int) -> str:
    """A process's state letter from /proc ("" when it is gone; Z a zombie, T stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_ticks: int
    boot_id: str
    log: str
    argv: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["argv"] = list(self.argv)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProcessRecord:
        return cls(
            name=str(d["name"]),
            pid=int(d["pid"]),
            start_ticks=int(d["start_ticks"]),
            boot_id=str(d.get("boot_id", "")),
            log=str(d["log"]),
            argv=tuple(d.get("argv", ())),
        )

    def alive(self) -> bool:
        """Still running and still the process we started (not a recycled pid)."""
        if self.boot_id and self.boot_id != boot_id():
            return False
        return start_ticks(self.pid) == self.start_ticks


def spawn(name: str, argv: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[bytes], ProcessRecord]:
    """Start argv in its own session (so a harness crash or Ctrl-C does not take it down)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    # Appending: a restarted component (a node that came back) keeps its earlier log.
    with open(log_path, "ab") as log:
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=dict(env) if env is not None else None,
            )
        except OSError as exc:
            raise HarnessError(f"cannot start {name} ({argv[0]}): {exc}") from exc
    ticks = start_ticks(proc.pid)
    record = ProcessRecord(name, proc.pid, ticks if ticks is not None else -1, boot_id(), str(log_path), tuple(argv))
    return proc, record


def signal_group(record: ProcessRecord, sig: int) -> bool:
    """Send sig to the process's session group; False if it is no longer ours to signal."""
    if not record.alive():
        return False
    try:
        if os.getpgid(record.pid) == record.pid:
            os.killpg(record.pid, sig)
        else:
            os.kill(record.pid, sig)
    except ProcessLookupError:
        return False
    return True


def terminate(record: ProcessRecord, grace_s: float, popen: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM (waking a stopped process), wait up to grace_s, then SIGKILL."""
    if not signal_group(record, signal.SIGTERM):
        if popen is not None:
            popen.poll()
        return
    # A SIGSTOPped process (a silenced zone) only acts on SIGTERM once continued.
    signal_group(record, signal.SIGCONT)
    exited = lambda: None if (popen.poll() is None if popen is not None else record.alive()) else True  # noqa: E731
    if first_within(exited, f"{record.name} to exit", grace_s, interval=0.1):
        return
    signal_group(record, signal.SIGKILL)
    first_within(exited, f"{record.name} to exit after SIGKILL", 5.0, interval=0.1)


def log_tail(path: str | Path, lines: int = 25) -> str:
    """The last lines of a log, for an error message."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


# What a child that tears down on SIGINT gets after the deadline of run_to_end: its teardown
# (heal every fault, take its region down) takes seconds to a minute on a busy machine.
TEARDOWN_GRACE_S = 180.0


def run_to_end(argv: Sequence[str], what: str, *, timeout: float | None = None, **popen: Any) -> int:
    """Run a child that heals its faults and tears down on SIGINT (a pytest of scenarios) and wait
    until it has: its exit status. subprocess.call and run kill the child 0.25 s after a Ctrl-C,
    in the middle of that teardown, and so leave a zone blackholed. Here the child runs in a process
    group of its own: a Ctrl-C reaches this process only, which passes one SIGINT on and waits for
    the child to end, saying so again at each further Ctrl-C. Past `timeout` the child gets a SIGINT
    too, TEARDOWN_GRACE_S more, then SIGKILL, and subprocess.TimeoutExpired is raised."""
    proc = subprocess.Popen(list(argv), process_group=0, **popen)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(TEARDOWN_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        print(f"interrupted: waiting for {what} (pid {proc.pid}) to heal its faults and tear down",
              file=sys.stderr, flush=True)
        while proc.returncode is None:
            try:
                proc.wait()
            except KeyboardInterrupt:
                print(f"still waiting for {what} (pid {proc.pid}) to heal its faults and tear down",
                      file=sys.stderr, flush=True)
        raise
