"""Load in its own processes: locust, headless, inside the network namespace of a client zone.

gevent's monkey-patching stays out of pytest's process, and the client's placement decides which
traffic crosses zones. More than one core: locust's own `--processes N`. More than one machine:
locust's master in that namespace and its workers elsewhere (`LoadSpec.workers`, network namespaces
this run starts them in, and `expect_workers` started by someone else with `worker_command()`);
the workers ship their histories to the master (harness/load/locustfile.py). Watchers run in a locust
process of their own, so that when the load stops they can be given the time to receive every
event up to a fence write (a put made after the writers stopped) before they are stopped too: a
watcher that went silent is then told apart from one that was merely stopped early. When the load
stops, locust's statistics go on the timeline, and the recorded operations and watch events come
back as a history (harness.load.history).
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from harness import netns as ns
from harness.errors import ConfigError, HarnessError, WaitAbandoned, WaitTimeout
from harness.topology import EtcdTls
from harness.timeline import Event, Timeline
from harness.wait import first_within, wait_serving

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
PROFILES = ("put", "write", "range", "mixed")


@dataclass(frozen=True)
class LoadSpec:
    profile: str
    rate: float  # operations per second, all users together
    hosts: tuple[str, ...]  # member client URLs the users spread over
    value_size: int = 1024
    users: int = 10
    processes: int = 1  # locust --processes; 1 runs in one process
    watch_hosts: tuple[str, ...] = ()  # one watcher records every event through each of these members
    watch_netns: str | None = None  # the watchers' network namespace (a client zone); None: the writers'
    key_prefix: str = "/load/"
    shared_keys: int = 0  # mixed: keys every user shares (0: each user its own)
    # Distributed: locust workers this run starts, `processes` each, in these network namespaces
    # (None: the harness's own), and worker processes started elsewhere (LoadRun.worker_command).
    workers: tuple[str | None, ...] = ()
    expect_workers: int = 0
    tls: EtcdTls | None = None  # the cluster's client TLS (EtcdCluster.tls) for https:// hosts

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ConfigError(f"unknown load profile {self.profile!r}; accepted: {', '.join(PROFILES)}")
        if self.rate <= 0 or self.users < 1 or self.processes < 1 or self.value_size < 32 or not self.hosts \
                or self.shared_keys < 0 or self.expect_workers < 0:
            raise ConfigError(f"a load needs rate > 0, users and processes >= 1, values of 32 bytes or more, a "
                              f"host, shared keys and workers expected elsewhere >= 0; got {self}")

    @property
    def worker_processes(self) -> int:
        """Locust workers the master waits for; 0: no master, one locust (with its own --processes)."""
        return len(self.workers) * self.processes + self.expect_workers


def _locust() -> list[str]:
    # As a module of this interpreter: whatever finds the harness finds locust beside it.
    return [sys.executable, "-m", "locust"]


def new_workdir(base: Path, name: str) -> Path:
    """A fresh directory for one load under `base` (created): a load outside a scenario keeps its
    output in the region's work directory, which `harness down` removes, or where the user asked;
    never in the system's temporary directory, where nothing would remove it."""
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))


def region_loads(state_dir: Path, region: str) -> Path:
    """Where loads started outside a scenario (`harness load`, chaostoolkit) keep their output."""
    return state_dir / region / "loads"


FENCE_WAIT = 15.0  # seconds the watchers get to deliver the fence write
WORKERS_WAIT = 30.0  # seconds the workers this run starts get to connect to its master
ELSEWHERE_WAIT = 600.0  # the same with workers someone starts elsewhere, by hand
# Seconds a started locust gets to record its first operation. A locust that exits is seen at
# once; one alive but starved on a busy machine took more than 20 s (twice in one day's runs).
FIRST_OPERATION_WAIT = 60.0
WORKERS_ACCOUNT = "workers.json"  # in history_dir: what each worker connected, sent and got across


def reachable_address(netns: str | None) -> str:
    """The IPv4 address of `netns` (None: this machine) that other machines and namespaces reach it
    at: the source of its default route (a client namespace's own address on its zone's subnet)."""
    out = (ns.ns_run(netns, ["ip", "-o", "-4", "route", "get", "1.1.1.1"]) if netns
           else ns.run(["ip", "-o", "-4", "route", "get", "1.1.1.1"]))
    words = out.split()
    if "src" not in words:
        raise HarnessError(f"no route out of {netns or 'this machine'} to give its workers an address: {out.strip()}")
    return words[words.index("src") + 1]


def free_port(netns: str | None) -> int:
    """A TCP port free in `netns` now (the master binds it a moment later)."""
    with ns.entered(netns) if netns else nullcontext():
        sock = socket.socket()
    with sock:
        sock.bind(("", 0))
        return int(sock.getsockname()[1])


class LoadRun:
    """One locust run for as long as a scenario (or a CLI command) needs it: its writers, and its
    watchers in a process of their own."""

    def __init__(self, spec: LoadSpec, netns: str | None, workdir: Path, timeline: Timeline) -> None:
        self.spec, self.netns, self.workdir, self.timeline = spec, netns, workdir, timeline
        self.proc: subprocess.Popen[bytes] | None = None
        self.watch_proc: subprocess.Popen[bytes] | None = None
        self.worker_procs: list[subprocess.Popen[bytes]] = []
        self.master: tuple[str, int] | None = None  # where workers reach the master
        self.event: Event | None = None
        self.fence: dict[str, Any] | None = None

    @property
    def history_dir(self) -> Path:
        return self.workdir / "history"

    def _common(self) -> list[str]:
        s = self.spec
        return ["--host", ",".join(s.hosts), "--load-profile", s.profile, "--rate", str(s.rate),
                "--value-size", str(s.value_size), "--key-prefix", s.key_prefix, "--shared-keys", str(s.shared_keys),
                "--history-dir", str(self.history_dir), "--run-time", "24h", "--only-summary", "--stop-timeout", "2",
                *self._tls_options()]

    def _tls_options(self) -> list[str]:
        """The client certificate's files (workers elsewhere need them at the same paths)."""
        tls = self.spec.tls
        if tls is None:
            return []
        return ["--etcd-ca", str(tls.ca), "--etcd-cert", str(tls.cert), "--etcd-key", str(tls.key),
                *(["--etcd-server-name", tls.server_name] if tls.server_name else [])]

    def _wrap(self, argv: list[str], netns: str | None = None) -> list[str]:
        netns = netns or self.netns
        return (["ip", "netns", "exec", netns] if netns else []) + argv

    def argv(self) -> list[str]:
        """The writers: locust's EtcdUser (distributed: its master, which runs no user itself)."""
        s = self.spec
        argv = [*_locust(), "-f", str(LOCUSTFILE), "--headless", "-u", str(s.users), "-r", str(s.users),
                *self._common(), "--csv", str(self.workdir / "locust")]
        if s.worker_processes:
            assert self.master is not None, "start() chooses the master's address"
            argv += ["--master", "--expect-workers", str(s.worker_processes), "--master-bind-port", str(self.master[1])]
        elif s.processes > 1:
            argv += ["--processes", str(s.processes)]
        return self._wrap(argv + ["EtcdUser"])

    def _worker_argv(self, locust: list[str]) -> list[str]:
        # Everything else (host, profile, rate, history) comes from the master with the users.
        assert self.master is not None, "start() chooses the master's address"
        argv = [*locust, "-f", str(LOCUSTFILE), "--worker", "--master-host", self.master[0],
                "--master-port", str(self.master[1])]
        return argv + (["--processes", str(self.spec.processes)] if self.spec.processes > 1 else [])

    def worker_command(self) -> str:
        """What to run on another machine (with the harness installed) for one more worker."""
        return shlex.join(self._worker_argv(["python", "-m", "locust"]))

    def watch_argv(self) -> list[str]:
        """The watchers: locust's WatchUser, one per watched member."""
        n = len(self.spec.watch_hosts)
        return self._wrap([*_locust(), "-f", str(LOCUSTFILE), "--headless", "-u", str(n), "-r", str(n),
                           *self._common(), "--watch-host", ",".join(self.spec.watch_hosts),
                           "--csv", str(self.workdir / "watch"), "WatchUser"], self.spec.watch_netns)

    def _spawn(self, argv: list[str], log_name: str) -> subprocess.Popen[bytes]:
        log = open(self.workdir / log_name, "ab")
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def start(self) -> LoadRun:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.spec.watch_hosts:  # first, so the watchers see the first writes
            self.watch_proc = self._spawn(self.watch_argv(), "watch.log")
        if self.spec.worker_processes:
            self.master = reachable_address(self.netns), free_port(self.netns)
        self.proc = self._spawn(self.argv(), "locust.log")
        self.worker_procs = [self._spawn(self._wrap(self._worker_argv(_locust()), netns), f"worker-{i}.log")
                             for i, netns in enumerate(self.spec.workers)]
        self.event = self.timeline.begin("load", self.spec.profile, rate=self.spec.rate, hosts=list(self.spec.hosts),
                                         netns=self.netns, processes=self.spec.processes,
                                         watch_hosts=list(self.spec.watch_hosts), shared_keys=self.spec.shared_keys,
                                         **({"workers": list(self.spec.workers), "expect_workers": self.spec.expect_workers,
                                             "master": "%s:%d" % self.master} if self.master else {}))
        return self

    @staticmethod
    def _interrupt(proc: subprocess.Popen[bytes] | None, timeout: float, grace: float = 0.0) -> None:
        """After `grace` s to end by itself: SIGTERM, on which locust shuts down as on Ctrl-C (its
        statistics written) even where SIGINT is ignored (started in the background by a script);
        to the process alone (a master, not its forked workers: it tells them to stop and ship
        their history first); then SIGKILL to its group if it does not go."""
        if proc is None:
            return
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            pass
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def stop_writers(self, timeout: float = 20.0) -> None:
        self._interrupt(self.proc, timeout)
        for proc in self.worker_procs:  # the master told them to quit
            self._interrupt(proc, 5.0, grace=5.0)

    def stop_watchers(self, timeout: float = 5.0) -> None:
        """Stop the watchers (also alone, as a client whose watch process died while writers go on)."""
        self._interrupt(self.watch_proc, timeout)

    def watchers_reached(self, revision: int) -> bool:
        """Every watcher of this run has delivered an event at or above `revision` (True without watchers)."""
        from harness.load.history import watchers

        if self.watch_proc is None:
            return True
        seen = watchers(self.history_dir)
        return len(seen) == len(self.spec.watch_hosts) and all(
            w.events and max(e.revision for e in w.events) >= revision for w in seen)

    def watching(self) -> bool:
        return self.watch_proc is not None and self.watch_proc.poll() is None

    def finish(self) -> dict[str, Any]:
        """Stop whatever still runs; locust's statistics, also on the timeline. Raises (once) when
        a worker's history did not all come back: a shorter history is not to be judged."""
        self.stop_writers()
        self.stop_watchers()
        stats = self.stats()
        if self.event is not None and self.event.end is None:
            missing = self.missing_history()
            self.timeline.finish(self.event, **stats, **({"fence": self.fence} if self.fence else {}),
                                 **({"missing_history": missing} if missing else {}))
            if missing:
                raise HarnessError(f"the load's history is incomplete ({self.history_dir}): {'; '.join(missing)}")
        return stats

    def _workers_account(self) -> dict[str, Any]:
        """The master's account of its workers (written by harness/load/locustfile.py's _Gather)."""
        try:
            return dict(json.loads((self.history_dir / WORKERS_ACCOUNT).read_text()))
        except (OSError, ValueError):
            return {"final": False, "workers": {}}

    def missing_history(self) -> list[str]:
        """What of the workers' histories did not reach the master's history_dir (none: all of it)."""
        if not self.spec.worker_processes:
            return []
        account = self._workers_account()
        workers = account["workers"]
        out = [f"worker {w['index']} ({w['file'] or 'no history file'}) never said its history was complete"
               for w in workers.values() if w["sent"] is None]
        out += [f"worker {w['index']} ({w['file']}) sent {w['sent']} lines, {w['received']} arrived"
                for w in workers.values() if w["sent"] is not None and w["sent"] != w["received"]]
        if len(workers) < self.spec.worker_processes:
            out.append(f"{len(workers)} of {self.spec.worker_processes} workers connected")
        if not account["final"]:
            out.append(f"the master did not finish gathering its workers' histories; its log: {self.workdir / 'locust.log'}")
        return out

    def stop(self, fence: Callable[[str, str], int] | None = None) -> dict[str, Any]:
        """Stop one run on its own: writers, then (with watchers and `fence`) a fence write the
        watchers are given the time to deliver, then the watchers. Returns locust's statistics."""
        self.stop_writers()
        if self.watch_proc is not None and fence is not None and self.fence is None:
            stop_behind_fence([self], fence)
        return self.finish()

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

    def wait_started(self, timeout: float = FIRST_OPERATION_WAIT) -> None:
        """Until every worker has connected (distributed), then until the first operation is
        recorded (locust, gRPC and the users take a moment)."""
        history = self.workdir / "history"
        logs = [(self.proc, "locust.log"), (self.watch_proc, "watch.log"),
                *((p, f"worker-{i}.log") for i, p in enumerate(self.worker_procs))]

        def gone() -> str | None:
            for proc, log in logs:
                if proc is not None and proc.poll() is not None:
                    return f"locust exited ({proc.returncode}); its log: {(self.workdir / log).read_text()[-1500:]}"
            return None

        def connected() -> str | None:
            n = len(self._workers_account()["workers"])
            return None if n >= self.spec.worker_processes else f"{n} of {self.spec.worker_processes} connected"

        def recorded() -> str | None:
            return None if history.exists() and any(f.stat().st_size for f in history.glob("ops-*.jsonl")) \
                else "no operation recorded yet"

        workers_wait = ELSEWHERE_WAIT if self.spec.expect_workers else WORKERS_WAIT
        waits = [(connected, "the load's locust workers to connect to %s:%d" % self.master, workers_wait)] \
            if self.master else []
        for serving, what, limit in [*waits, (recorded, "the load's first operation", timeout)]:
            try:
                wait_serving(serving, gone, what, limit, progress_every=5.0)
            except (WaitAbandoned, WaitTimeout) as e:
                self.stop_writers()  # a load that never started leaves nothing running (a master waiting for ever)
                self.stop_watchers()
                why = e.reason if isinstance(e, WaitAbandoned) else f"{e}; locust's logs are in {self.workdir}"
                raise HarnessError(why) from None


def stop_behind_fence(runs: list[LoadRun], put: Callable[[str, str], int]) -> dict[str, Any]:
    """With every writer of `runs` stopped: a fence put under their prefix, recorded in the first
    run's history like the load's own writes; then up to FENCE_WAIT s for every watcher to
    deliver it (and so every event before it). Returns what the fence was, for the watch check:
    {"key", "revision", "waited_s"}, or {"key", "error"} when it could not be written."""
    first = runs[0]
    key = f"{first.spec.key_prefix}fence/{uuid.uuid4().hex[:8]}"
    value = f"fence-{key.rsplit('/', 1)[1]}"  # recorded as the load records its values (history.tag)
    invoke = time.monotonic()
    try:
        revision = put(key, f"{value}-fence")
    except HarnessError as e:
        fence: dict[str, Any] = {"key": key, "error": str(e)[:300]}
    else:
        record = {"client": 0, "kind": "put", "key": key, "value": value, "invoke": invoke, "ret": time.monotonic(),
                  "ok": True, "revision": revision}
        first.history_dir.mkdir(parents=True, exist_ok=True)
        with open(first.history_dir / "ops-fence.jsonl", "a") as f:
            f.write(json.dumps(record) + "\n")
        began = time.monotonic()
        first_within(lambda: True if all(r.watchers_reached(revision) or not r.watching() for r in runs) else None,
                     f"the watchers to deliver the fence write at revision {revision}", FENCE_WAIT, interval=0.2)
        fence = {"key": key, "revision": revision, "waited_s": round(time.monotonic() - began, 2)}
    for r in runs:
        r.fence = fence
    return fence
