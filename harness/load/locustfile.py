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
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any, TextIO

from locust import User, constant_throughput, events, task

from harness.load.client import KV, LIBRARIES, KVError
from harness.load.history import tag

PROFILES = ("put", "write", "range", "mixed")
RANGE_KEYS = 1000


@events.init_command_line_parser.add_listener
def _(parser: Any) -> None:
    parser.add_argument("--load-profile", choices=PROFILES, default="put", help="what the users do")
    parser.add_argument("--rate", type=float, default=100.0, help="total operations per second the run aims for")
    parser.add_argument("--value-size", type=int, default=1024, help="bytes per written value")
    parser.add_argument("--key-prefix", default="/load/", help="keys are written under this prefix")
    parser.add_argument("--history-dir", default="", help="record every operation and watch event here")
    parser.add_argument("--etcd-client", choices=LIBRARIES, default="pyetcd", help="client library (comparison only)")
    parser.add_argument("--shared-keys", type=int, default=0,
                        help="mixed: every user reads and writes these many keys in common (0: keys of its own)")
    parser.add_argument("--watch-host", default="",
                        help="with WatchUser: the endpoints the watchers use, comma-separated, one watcher each "
                             "(default: the first host)")


class _History:
    """One JSONL file per process; lines are written whole, so readers never see half a record."""

    file: TextIO | None = None

    @classmethod
    def write(cls, directory: str, record: dict[str, Any]) -> None:
        if not directory:
            return
        if cls.file is None:
            Path(directory).mkdir(parents=True, exist_ok=True)
            cls.file = open(Path(directory) / f"ops-{os.getpid()}.jsonl", "a", buffering=1)
        cls.file.write(json.dumps(record) + "\n")


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
        self.client_id = os.getpid() * 1000 + EtcdUser._next_id
        self.kv = KV(hosts[EtcdUser._next_id % len(hosts)], library=opts.etcd_client)
        self.seq = 0
        self.ops = 0
        self.pad = "x" * max(0, opts.value_size - 32)
        self.written: list[str] = []

    def wait_time(self) -> float:  # type: ignore[override]
        # -u is the run's total: with --processes each worker runs a share of the users, and
        # dividing by a worker's own count would aim every worker at the whole rate.
        users = max(1, int(getattr(self.opts, "num_users", 0) or 1))
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
        self.watcher = f"{os.getpid()}-watch-{WatchUser._next}"
        self.next_revision = 0
        self.responses = 0

    @task
    def watch(self) -> None:
        kv = KV(self.host, timeout=None, library=self.opts.etcd_client)
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
