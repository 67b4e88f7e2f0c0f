"""Locust users that drive etcd over gRPC and record every operation.

    locust -f loadtests/etcd.py --headless -u 20 -r 20 -t 30s --host http://A:2379,http://B:2379 \\
        [--load-profile put|write|range|mixed] [--rate OPS_PER_S] [--value-size BYTES] [--history-dir DIR] \\
        [--shared-keys N]

Each user talks to one endpoint of `--host` (round robin over the list): the harness picks the
endpoints, so "against the leader" or "against a follower" is a choice of host. `--rate` is the
total the run aims for, shared by all `-u` users of every process (locust's constant_throughput).
With `--shared-keys N` the mixed profile (and the put profile, 80 % puts and 20 % reads; the write
profile, puts only) reads and writes N keys that every user, of every process and through every member, shares: what lets a stale read or a lost write show against
another client's operations. Reads are linearizable or serializable (recorded as such: a
serializable read may be stale by design). With `--history-dir` every operation is written there
(one file per process): a line when an operation is invoked (client, kind, key, value, invoke time
on the machine's monotonic clock) and one when it returned (return time, outcome - None: a write
that may or may not have happened -, revision, value read, keys a delete removed); an operation
whose process stopped before it returned has only the first. Watchers write every response they
get. Written values are unique.

Distributed (`--master` and `--worker`, on other machines): a worker shares no filesystem with its
master, so it ships its lines to the master in locust's custom messages ("history"), which
appends them under the worker's own file name in the master's --history-dir. When the master
stops, every worker stops its users and ships the rest, then says how many lines it sent
("history_done"); the master waits for that and writes what each worker sent and what arrived
(workers.json), from which the harness tells a complete history from a shorter one.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from pathlib import Path
from typing import Any, TextIO

import gevent
import gevent.lock
from locust import User, constant_throughput, events, task
from locust.runners import STATE_MISSING, STATE_STOPPED, MasterRunner, WorkerRunner
from locust.stats import CSV_STATS_INTERVAL_SEC

from harness.load.client import KV, LIBRARIES, ClientTls, KVError
from harness.load.history import tag
from harness.load.runner import WORKERS_ACCOUNT
from harness.files import replace_text

PROFILES = ("put", "write", "range", "mixed")
RANGE_KEYS = 1000
SHIP_EVERY_S = 0.5  # a worker's history lines leave in batches this often
GATHER_WAIT_S = 10.0  # beyond --stop-timeout, how long the master waits for a worker's last lines
HISTORY_FILE = re.compile(r"ops-[\w.-]+\.jsonl")


@events.init_command_line_parser.add_listener
def _(parser: Any) -> None:
    parser.add_argument("--load-profile", choices=PROFILES, default="put", help="what the users do")
    parser.add_argument("--rate", type=float, default=100.0, help="total operations per second the run aims for")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per written value")
    parser.add_argument("--key-prefix", default="/load/", help="keys are written under this prefix")
    parser.add_argument("--history-dir", default="", help="record every operation and watch event here")
    parser.add_argument("--etcd-client", choices=LIBRARIES, default="pyetcd", help="client library (comparison only)")
    parser.add_argument("--etcd-ca", default="", help="https:// hosts: the CA of the members' serving certificates")
    parser.add_argument("--etcd-cert", default="", help="https:// hosts: the client certificate")
    parser.add_argument("--etcd-key", default="", help="https:// hosts: the client certificate's key")
    parser.add_argument("--etcd-server-name", default="",
                        help="https:// hosts: the name to check in the serving certificates (default: the host's)")
    parser.add_argument("--shared-keys", type=int, default=0,
                        help="mixed: every user reads and writes these many keys in common (0: keys of its own)")
    parser.add_argument("--watch-host", default="",
                        help="with WatchUser: the endpoints the watchers use, comma-separated, one watcher each "
                             "(default: the first host)")
    parser.add_argument("--rate-users", type=int, default=0,
                        help="users --rate is shared by (default: -u; the master passes it on to its workers)")


def _origin(environment: Any) -> tuple[int, str]:
    """This process among all of the run's: a number for client ids, a tag for file and watcher
    names. A worker's pid may repeat on another machine; its index, given by the master, does not."""
    runner, pid = environment.runner, os.getpid()
    if isinstance(runner, WorkerRunner) and runner.worker_index >= 0:
        return (runner.worker_index + 1) * 10**7 + pid, f"w{runner.worker_index}-{pid}"
    return pid, str(pid)


class _History:
    """One JSONL file per process; lines are written whole, so readers never see half a record.
    A worker's lines go to its master instead (`ship`)."""

    file: TextIO | None = None
    name = ""  # ops-<origin>.jsonl
    worker: WorkerRunner | None = None
    lock: Any = None
    pending: list[str] = []
    sent = 0

    @classmethod
    def write(cls, directory: str, record: dict[str, Any]) -> None:
        if not directory:
            return
        if not cls.name:  # a worker's index comes with the master's first answer
            cls.name = f"ops-{_origin(cls.worker.environment)[1] if cls.worker else os.getpid()}.jsonl"
        if cls.worker is not None:
            cls.pending.append(json.dumps(record))
            return
        if cls.file is None:
            Path(directory).mkdir(parents=True, exist_ok=True)
            cls.file = open(Path(directory) / cls.name, "a", buffering=1)
        cls.file.write(json.dumps(record) + "\n")

    @classmethod
    def ship(cls, last: bool = False) -> None:
        """A worker's pending lines to the master; `last`: then its own statistics and how many
        lines it sent in all, so that once the master has that, it has everything before it
        (one connection keeps the order; the lock keeps two greenlets' sends from interleaving)."""
        assert cls.worker is not None
        with cls.lock:
            lines, cls.pending = cls.pending, []
            if lines:
                cls.sent += len(lines)
                cls.worker.send_message("history", {"file": cls.name, "lines": lines})
            if last:
                cls.worker._send_stats()  # locust sends its last ones only when quitting, its master maybe gone
                cls.worker.send_message("history_done", {"file": cls.name, "sent": cls.sent})

    @classmethod
    def shipping(cls, worker: WorkerRunner) -> None:
        cls.worker, cls.lock = worker, gevent.lock.Semaphore()

        def every() -> None:
            while True:
                gevent.sleep(SHIP_EVERY_S)
                cls.ship()

        def stop_and_ship(**_: Any) -> None:
            if worker.state == STATE_STOPPED:
                cls.ship(last=True)
            else:  # its users first (test_stop then ships the rest): what they record while stopping goes too
                worker.stop()

        gevent.spawn(every)
        # Sent by the master when it stops (_Gather); test_stop also ends a worker stopped another way.
        worker.register_message("history_stop", stop_and_ship, concurrent=True)
        worker.environment.events.test_stop.add_listener(lambda **_: cls.ship(last=True))


class _Gather:
    """The master's side: each worker's lines appended to its file in --history-dir, and an account
    of what every worker that connected sent and what arrived (WORKERS_ACCOUNT), for the harness to check."""

    def __init__(self, runner: MasterRunner, directory: Path) -> None:
        self.runner, self.directory = runner, directory
        self.workers: dict[str, dict[str, Any]] = {}
        self.files: dict[str, TextIO] = {}
        directory.mkdir(parents=True, exist_ok=True)
        runner.register_message("history", self.lines)
        runner.register_message("history_done", self.done)
        events.worker_connect.add_listener(self.connected)
        events.test_stopping.add_listener(self.gather)

    def _worker(self, node: str) -> dict[str, Any]:
        return self.workers.setdefault(node, {"index": self.runner.get_worker_index(node), "file": None,
                                              "received": 0, "sent": None})

    def connected(self, client_id: str, **_: Any) -> None:
        self._worker(client_id)
        self._account(final=False)

    def lines(self, msg: Any, **_: Any) -> None:
        name, lines = msg.data["file"], msg.data["lines"]
        if not HISTORY_FILE.fullmatch(name):
            raise ValueError(f"worker {msg.node_id} named a history file {name!r}")
        if name not in self.files:
            self.files[name] = open(self.directory / name, "a", buffering=1)
        self.files[name].write("".join(line + "\n" for line in lines))
        worker = self._worker(msg.node_id)
        worker["file"], worker["received"] = name, worker["received"] + len(lines)

    def done(self, msg: Any, **_: Any) -> None:
        worker = self._worker(msg.node_id)
        worker["file"], worker["sent"] = msg.data["file"] or worker["file"], msg.data["sent"]

    def _awaited(self, node: str) -> bool:
        """Not yet done, and not gone silent (a killed worker is not waited for)."""
        client = self.runner.clients.get(node)
        return self.workers[node]["sent"] is None and not (client is not None and client.state == STATE_MISSING)

    def gather(self, **_: Any) -> None:
        """The master is stopping, its workers still run: they stop and ship the rest, and
        the master waits for each one's end before it quits (quitting gives them 0.5 s)."""
        self.runner.send_message("history_stop")
        deadline = time.monotonic() + (self.runner.environment.stop_timeout or 0) + GATHER_WAIT_S
        while any(self._awaited(n) for n in self.workers) and time.monotonic() < deadline:
            gevent.sleep(0.1)
        gevent.sleep(CSV_STATS_INTERVAL_SEC)  # a turn of locust's CSV writer with the workers' last statistics
        for f in self.files.values():
            f.close()
        self.files.clear()
        self._account(final=True)

    def _account(self, final: bool) -> None:
        path = self.directory / WORKERS_ACCOUNT
        replace_text(path, json.dumps({"final": final, "workers": self.workers}), 0o644)  # whole, for a reader polling it


def _tls(opts: Any) -> ClientTls | None:
    return ClientTls(opts.etcd_ca, opts.etcd_cert, opts.etcd_key, opts.etcd_server_name or None) if opts.etcd_ca else None


class EtcdUser(User):
    """One client of etcd; its task is the profile's next operation."""

    abstract = False
    _next_id = 0

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        opts = environment.parsed_options
        self.opts = opts
        hosts = [h for h in (environment.host or "http://127.0.0.1:2379").split(",") if h]
        EtcdUser._next_id += 1
        self.client_id = _origin(environment)[0] * 1000 + EtcdUser._next_id
        self.kv = KV(hosts[EtcdUser._next_id % len(hosts)], library=opts.etcd_client, tls=_tls(opts))
        self.seq = 0
        self.ops = 0
        self.pad = "x" * max(0, opts.value_size - 32)
        self.written: list[str] = []

    def wait_time(self) -> float:  # type: ignore[override]
        # -u is the run's total: each worker runs a share of the users, and dividing by a
        # worker's own count would aim every worker at the whole rate.
        users = max(1, self.opts.rate_users or int(getattr(self.opts, "num_users", 0) or 1))
        return constant_throughput(self.opts.rate / users)(self)

    def on_stop(self) -> None:
        self.kv.close()

    # -- one operation, timed, fired as a locust request and recorded ---------------------------
    def _op(self, kind: str, key: str, call: Any, value: str | None = None, serializable: bool = False) -> Any:
        self.ops += 1
        invoke = time.monotonic()
        record: dict[str, Any] = {"op": f"{self.client_id}-{self.ops}", "client": self.client_id, "kind": kind, "key": key,
                                  "value": tag(value), "invoke": invoke}
        if serializable:
            record["serializable"] = True
        # The invocation first: a process stopped while the request is in flight (which etcd may
        # still apply) leaves it in the history as an operation that never returned.
        _History.write(self.opts.history_dir, record)
        record = {"op": record["op"]}
        try:
            result = call()
        except KVError as e:
            ret = time.monotonic()
            self.environment.events.request.fire(request_type="etcd", name=kind, response_time=(ret - invoke) * 1000,
                                                 response_length=0, exception=e)
            record |= {"ret": None if e.indeterminate else ret, "ok": None if e.indeterminate else False,
                       "error": str(e)[:200]}
            _History.write(self.opts.history_dir, record)
            return None
        ret = time.monotonic()
        self.environment.events.request.fire(request_type="etcd", name=kind, response_time=(ret - invoke) * 1000,
                                             response_length=len(value or ""), exception=None)
        revision, read = result
        record |= {"ret": ret, "ok": True, "revision": revision}
        if kind == "txn":  # a create-if-absent: compare "key absent", then put
            record |= {"expect": None, "succeeded": read}
        elif kind == "delete":
            deleted, prev = read
            record |= {"deleted": deleted, "result": tag(prev)}
        else:
            record["result"] = tag(read) if isinstance(read, str) else read
        _History.write(self.opts.history_dir, record)
        return result

    def _value(self) -> str:
        self.seq += 1
        return f"{self.client_id}-{self.seq}-{self.pad}"

    def _put(self, key: str) -> None:
        value = self._value()
        if self._op("put", key, lambda: self.kv.put(key, value), value) is not None:
            self.written.append(key)

    @task
    def step(self) -> None:
        p, prefix = self.opts.load_profile, self.opts.key_prefix
        if p in ("put", "write") and self.opts.shared_keys:
            # etcd's robustness suite's put traffic: overwrites of a few shared keys, some read back.
            key = f"{prefix}shared/{random.randrange(self.opts.shared_keys):04d}"
            if p == "write" or random.random() < 0.8:
                self._put(key)
            else:
                self._op("get", key, lambda: self.kv.get(key))
        elif p in ("put", "write"):
            self._put(f"{prefix}{self.client_id}/{self.seq:08d}")
        elif p == "range":
            self._op("range", prefix, lambda: self.kv.range_prefix(prefix))
        else:
            self._mixed(prefix)

    def _mixed(self, prefix: str) -> None:
        """A Kubernetes-like mix: reads dominate, creates are transactions, some objects lease-bound.
        Keys are the client's own, or with --shared-keys the ones every client shares."""
        shared = self.opts.shared_keys
        key = f"{prefix}shared/{random.randrange(shared):04d}" if shared else f"{prefix}{self.client_id}/{random.randrange(200):04d}"
        roll = random.random()
        if roll < 0.25:
            self._put(key)
        elif roll < 0.50:
            self._op("get", key, lambda: self.kv.get(key))
        elif roll < 0.65:
            self._op("get", key, lambda: self.kv.get(key, serializable=True), serializable=True)
        elif roll < 0.70:
            mine = f"{prefix}shared/" if shared else f"{prefix}{self.client_id}/"
            self._op("range", mine, lambda: self.kv.range_prefix(mine))
        elif roll < 0.85:
            self._op("delete", key, lambda: self.kv.delete(key))
        elif roll < 0.95:
            value = self._value()
            self._op("txn", key, lambda: self.kv.put_if_absent(key, value), value)
        else:  # keys of their own: they expire with their lease, which no history records
            value, lease_key = self._value(), f"{prefix}{self.client_id}/lease-{self.seq}"
            self._op("lease", lease_key, lambda: self.kv.put_with_lease(lease_key, value), value)


class WatchUser(User):
    """Watches the load's prefix and records every response (`locust ... WatchUser`), with progress
    notifications and each event's previous value and create revision. The first watch starts
    at the revision after a read of the prefix (so the history knows where it began); a broken
    stream resumes from the revision after the last event seen. With several `--watch-host`
    endpoints, one watcher per endpoint."""

    wait_time = constant_throughput(1)
    _next = 0

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.opts = environment.parsed_options
        hosts = [h for h in (self.opts.watch_host or (environment.host or "").split(",")[0]).split(",") if h]
        WatchUser._next += 1
        self.host = hosts[(WatchUser._next - 1) % len(hosts)]
        self.watcher = f"{_origin(environment)[1]}-watch-{WatchUser._next}"
        self.next_revision = 0
        self.responses = 0

    @task
    def watch(self) -> None:
        kv = KV(self.host, timeout=None, library=self.opts.etcd_client, tls=_tls(self.opts))
        write = lambda record: _History.write(self.opts.history_dir, {"watch": self.watcher, **record,  # noqa: E731
                                                                       "at": time.monotonic()})
        try:
            if not self.next_revision:
                revision, _ = kv.get(self.opts.key_prefix)
                self.next_revision = revision + 1
                write({"prefix": self.opts.key_prefix, "start": self.next_revision, "host": self.host})
            else:
                write({"prefix": self.opts.key_prefix, "resume": self.next_revision})
            stream, cancel = kv.watch(self.opts.key_prefix, self.next_revision)
            for response in stream:
                self.responses += 1
                if not response.events:
                    write({"progress": response.revision, "response": self.responses})
                for event in response.events:
                    self.next_revision = event.revision + 1
                    write({"revision": event.revision, "key": event.key, "type": event.kind, "value": tag(event.value),
                           "created": event.create_revision, "prev": tag(event.prev_value), "response": self.responses})
        except Exception as e:  # a broken stream (a cut member, a timeout) is resumed on the next task
            write({"error": str(e)[:200]})
        finally:
            kv.close()


@events.init.add_listener
def _(environment: Any, **_: Any) -> None:
    # gRPC's own threads must cooperate with gevent's loop (locust monkey-patches everything).
    import grpc.experimental.gevent as grpc_gevent

    grpc_gevent.init_gevent()
    runner, opts = environment.runner, environment.parsed_options
    if isinstance(runner, WorkerRunner):
        _History.shipping(runner)
        return
    if not opts.rate_users:  # a custom option: the master's goes to its workers with their users
        opts.rate_users = opts.num_users or 1
    if isinstance(runner, MasterRunner) and opts.history_dir:
        _Gather(runner, Path(opts.history_dir))
