"""A simulated linearizable key-value store, to produce histories the validators must accept.

Clients run closed loops of mixed operations (get, put, delete, compare-and-put txn) with
random latencies; each operation takes effect at a random instant inside its interval, in
one global order, on a store with etcd's revisions. Some writes time out: they are
recorded as indeterminate and applied or not, possibly after the client gave up. Watchers
get every event under their prefix in order, reconnecting now and then from the revision
after the last one they got. The result is a RecordedRun (operations, watchers, final
state): linearizable and clean by construction. The benchmark (benchmarks/porcupine_check.py)
and the test data generator (tests/testdata/make_validator_histories.py) use it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from harness.validate.oplog import Kind, Op
from harness.validate.recorded import RecordedRun
from harness.validate.watch import Reconnect, WatchEvent, WatchRecord


@dataclass(frozen=True)
class Profile:
    """Shares of each operation kind (they need not sum to 1)."""

    get: float = 0.6
    put: float = 0.3
    delete: float = 0.05
    txn: float = 0.05

    def pick(self, rng: random.Random) -> Kind:
        kinds: list[Kind] = ["get", "put", "delete", "txn"]
        return rng.choices(kinds, weights=[self.get, self.put, self.delete, self.txn])[0]


MIXED = Profile()


@dataclass(frozen=True)
class WatcherSpec:
    name: str
    prefix: str
    start: float  # seconds into the run
    reconnect_at: tuple[float, ...] = ()  # times its stream breaks and resumes


@dataclass
class _Pending:
    client: int
    kind: Kind
    key: str
    value: str | None
    invoke: float
    ret: float
    ok: bool | None
    applied_at: float | None  # None: never takes effect
    revision: int | None = None
    result: str | None = None
    expect: str | None = None
    succeeded: bool | None = None


def simulate(
    *,
    duration_s: float = 60.0,
    rate: float = 1500.0,
    clients: int = 20,
    keys: int = 1000,
    prefix: str = "/sim/",
    profile: Profile = MIXED,
    hot_keys: int = 10,
    hot_share: float = 0.2,
    latency_s: tuple[float, float] = (0.001, 0.008),
    indeterminate: float = 0.002,
    timeout_s: float = 0.5,
    failed_reads: float = 0.001,
    watchers: tuple[WatcherSpec, ...] = (),
    seed: int = 1,
) -> RecordedRun:
    rng = random.Random(seed)
    period = clients / rate
    mean_latency = sum(latency_s) / 2
    names = [f"{prefix}{i:04d}" for i in range(keys)]
    pending: list[_Pending] = []
    for client in range(clients):
        t = rng.uniform(0, period)
        seq = 0
        while t < duration_s:
            kind = profile.pick(rng)
            key = names[rng.randrange(min(hot_keys, keys))] if rng.random() < hot_share else rng.choice(names)
            value = None
            if kind in ("put", "txn"):
                seq += 1
                value = f"c{client}-{seq}"
            lat = rng.uniform(*latency_s)
            ok: bool | None = True
            ret = t + lat
            applied: float | None = rng.uniform(t, ret)
            if kind != "get" and rng.random() < indeterminate:
                ok, ret = None, t + timeout_s  # the client gives up; the write may land even later
                applied = rng.uniform(t, t + 2 * timeout_s) if rng.random() < 0.5 else None
            elif kind == "get" and rng.random() < failed_reads:
                ok, applied = None, None
            pending.append(_Pending(client, kind, key, value, round(t, 6), round(ret, 6), ok, applied))
            t = ret + rng.uniform(0, 2 * max(period - mean_latency, 0.0))

    # Apply in one global order: the store is linearizable by construction.
    store: dict[str, tuple[int, str]] = {}
    revision = 1
    log: list[tuple[float, WatchEvent]] = []
    for p in sorted((p for p in pending if p.applied_at is not None), key=lambda p: p.applied_at or 0.0):
        cur = store.get(p.key)
        if p.kind == "get":
            p.result = cur[1] if cur else None
        elif p.kind == "put":
            revision += 1
            store[p.key] = (revision, p.value or "")
            log.append((p.applied_at or 0.0, WatchEvent(revision, p.key, "put", p.value)))
        elif p.kind == "delete":
            p.result = cur[1] if cur else None
            if cur:
                revision += 1
                del store[p.key]
                log.append((p.applied_at or 0.0, WatchEvent(revision, p.key, "delete")))
        else:  # txn: half the time compare against the current value, so it succeeds
            p.expect = (cur[1] if cur else None) if rng.random() < 0.5 else f"not-{p.value}"
            p.succeeded = (cur[1] if cur else None) == p.expect
            if p.succeeded:
                revision += 1
                store[p.key] = (revision, p.value or "")
                log.append((p.applied_at or 0.0, WatchEvent(revision, p.key, "put", p.value)))
            else:
                p.result = cur[1] if cur else None
        p.revision = revision
    for p in pending:
        if p.kind == "txn" and p.expect is None and p.applied_at is None:
            p.expect = f"not-{p.value}"  # never applied: any comparison will do

    ops = [
        Op(
            client=p.client, kind=p.kind, key=p.key, value=p.value, invoke=p.invoke,
            ret=p.ret, ok=p.ok,
            revision=p.revision if p.ok else None, result=p.result if p.ok else None,
            expect=p.expect, succeeded=p.succeeded if p.ok else None,
        )
        for p in sorted(pending, key=lambda p: p.invoke)
    ]
    return RecordedRun(ops, [_watch(spec, log) for spec in watchers], dict(store))


def _watch(spec: WatcherSpec, log: list[tuple[float, WatchEvent]]) -> WatchRecord:
    before = [e.revision for t, e in log if t < spec.start]
    start = (before[-1] if before else 1) + 1
    timed = [(t, e) for t, e in log if e.revision >= start and e.key.startswith(spec.prefix)]
    events = tuple(e for _, e in timed)
    reconnects = []
    for at in spec.reconnect_at:
        index = sum(t < at for t, _ in timed)
        reconnects.append(Reconnect(index, events[index - 1].revision + 1 if index else start))
    return WatchRecord(spec.name, spec.prefix, start, events, tuple(reconnects))


def summary(run: RecordedRun) -> dict[str, Any]:
    ops = run.ops
    return {
        "operations": len(ops),
        "clients": len({o.client for o in ops}),
        "keys": len({o.key for o in ops}),
        "kinds": {k: sum(o.kind == k for o in ops) for k in ("get", "put", "delete", "txn")},
        "indeterminate": sum(o.indeterminate for o in ops),
        "span_s": round(max((o.ret or o.invoke) for o in ops) - min(o.invoke for o in ops), 3) if ops else 0.0,
    }
