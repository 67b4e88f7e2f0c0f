"""Load in its own processes: locust, headless, inside the network namespace of a client zone.

gevent's monkey-patching stays out of pytest's process, and the client's placement decides which
traffic crosses zones. More than one core: locust's own `--processes N`. When the load stops,
locust's statistics go on the timeline, and the recorded operations and watch events come back
as a history (harness.load.history).
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, HarnessError
from harness.timeline import Event, Timeline

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
PROFILES = ("put", "range", "mixed")


@dataclass(frozen=True)
class LoadSpec:
    profile: str
    rate: float  # operations per second, all users together
    hosts: tuple[str, ...]  # member client URLs the users spread over
    value_size: int = 1024
    users: int = 10
    processes: int = 1  # locust --processes; 1 runs in one process
    watch_host: str | None = None  # a watcher records every event through this member (None: no watcher)
    key_prefix: str = "/load/"

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ConfigError(f"unknown load profile {self.profile!r}; accepted: {', '.join(PROFILES)}")
        if self.rate <= 0 or self.users < 1 or self.processes < 1 or self.value_size < 32 or not self.hosts:
            raise ConfigError(f"a load needs rate > 0, users and processes >= 1, values of 32 bytes or more and a "
                              f"host; got {self}")


def _locust() -> list[str]:
    # As a module of this interpreter: whatever finds the harness finds locust beside it.
    return [sys.executable, "-m", "locust"]


class LoadRun:
    """One locust run for as long as a scenario (or a CLI command) needs it."""

    def __init__(self, spec: LoadSpec, netns: str | None, workdir: Path, timeline: Timeline) -> None:
        self.spec, self.netns, self.workdir, self.timeline = spec, netns, workdir, timeline
        self.proc: subprocess.Popen[bytes] | None = None
        self.event: Event | None = None

    def argv(self) -> list[str]:
        s = self.spec
        users = s.users + (1 if s.watch_host else 0)
        argv = [*_locust(), "-f", str(LOCUSTFILE), "--headless", "-u", str(users), "-r", str(users), "--run-time", "24h",
                "--host", ",".join(s.hosts), "--load-profile", s.profile, "--rate", str(s.rate),
                "--value-size", str(s.value_size), "--key-prefix", s.key_prefix,
                "--history-dir", str(self.workdir / "history"),
                "--csv", str(self.workdir / "locust"), "--only-summary", "--stop-timeout", "2"]
        if s.watch_host:
            argv += ["--watch-host", s.watch_host]
        if s.processes > 1:
            argv += ["--processes", str(s.processes)]
        # Without user class names locust runs them all; the watcher only when one is asked for.
        argv += ["EtcdUser", "WatchUser"] if s.watch_host else ["EtcdUser"]
        return (["ip", "netns", "exec", self.netns] if self.netns else []) + argv

    def start(self) -> LoadRun:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "locust.log", "ab")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.event = self.timeline.begin("load", self.spec.profile, rate=self.spec.rate, hosts=list(self.spec.hosts),
                                         netns=self.netns, processes=self.spec.processes)
        return self

    def stop(self, timeout: float = 20.0) -> dict[str, Any]:
        """Stop locust (as Ctrl-C would: it writes its statistics) and return them."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        stats = self.stats()
        if self.event is not None and self.event.end is None:
            self.timeline.finish(self.event, **stats)
        return stats

    def stats(self) -> dict[str, Any]:
        """locust's aggregated figures from its CSV: requests, failures, ops/s, p99 (ms)."""
        path = self.workdir / "locust_stats.csv"
        if not path.exists():
            raise HarnessError(f"locust wrote no statistics; its log: {(self.workdir / 'locust.log').read_text()[-1500:]}")
        with open(path) as f:
            rows = {r["Name"]: r for r in csv.DictReader(f)}
        agg = rows["Aggregated"]
        return {
            "profile": self.spec.profile,
            "requests": int(agg["Request Count"]),
            "failures": int(agg["Failure Count"]),
            "ops_per_s": round(float(agg["Requests/s"]), 1),
            "p99_ms": float(agg["99%"]) if agg["99%"] not in ("N/A", "") else None,
            "per_operation": {name: {"requests": int(r["Request Count"]), "p99_ms": r["99%"]} for name, r in rows.items()
                              if name != "Aggregated"},
        }

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_started(self, timeout: float = 20.0) -> None:
        """Until the first operation is recorded (locust, gRPC and the users take a moment)."""
        deadline = time.monotonic() + timeout
        history = self.workdir / "history"
        while time.monotonic() < deadline:
            if not self.running():
                raise HarnessError(f"locust exited ({self.proc.returncode if self.proc else '?'}); its log: "
                                   f"{(self.workdir / 'locust.log').read_text()[-1500:]}")
            if history.exists() and any(f.stat().st_size for f in history.glob("ops-*.jsonl")):
                return
            time.sleep(0.1)
        raise HarnessError(f"no operation recorded within {timeout:.0f}s; locust's log is {self.workdir / 'locust.log'}")
