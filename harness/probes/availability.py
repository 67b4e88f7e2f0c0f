"""Linearizable write and serializable read probes, sampling onto the timeline.

The writer puts a new key every `interval` (failing over between members, own zone
first, like a client with all endpoints); per member, a thread takes a serializable
read and a status sample every `interval`. All requests leave from the client
namespace of `via_zone`, so the probe sees the region the way a client in that zone does.
Beside them, each member is asked its raft state (its current term, which a status request does
not show, and the leader it follows) through the harness's own view of it (its own zone) every
WITNESS_INTERVAL: a client zone that is cut off sees nothing of the others, and a verdict about
the cluster's leader must not rest on what it alone saw.
Asked to (check_health), it also asks each member's /health, as a readiness probe does.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from harness.errors import ConfigError
from harness.etcd_gateway import EtcdRequestError
from harness.probes import heap
from harness.probes.samples import Sample
from harness.providers.base import EtcdCluster, MemberCpuWaits
from harness.timeline import Timeline

MAX_INTERVAL = 0.020
# The harness's own stalls, seen by a thread that asks to wake every CANARY_TICK: a wake-up at
# least STALL_MIN late is a stretch in which the probe's threads could not run either, and a
# latency or a gap measured across it may be the harness's, not etcd's ("stall" samples).
CANARY_TICK = 0.005
STALL_MIN = 0.002
# Where the members run on this machine (MemberCpuWaits), how long they waited for a CPU is read
# this often ("cpu-wait" samples): a write is excused at most the waits of the stretches it spans.
CPU_WAIT_INTERVAL = 0.010
# Each witness request costs the member about what a status request does (0.5 ms of etcd's CPU
# here): at 50 ms on top of the probe's own, the reference control plane on a 2-core seed missed
# its readiness bounds in 2 of 2 runs (0 of 2 at 200 ms).
WITNESS_INTERVAL = 0.200
# A member the witness cannot reach is asked at most this far apart (doubling from the interval):
# well inside the steps' 1 s grace for a report at a window's end once it answers again.
WITNESS_BACKOFF_MAX = 0.600
SAMPLE_FIELDS = [f.name for f in fields(Sample)]


@dataclass
class ProbeHistory:
    prefix: str
    via_zone: str
    member_ids: dict[int, str]
    samples: list[Sample] = field(default_factory=list)
    path: str = "etcd"  # what the writes go through ("etcd", "shoot-api"): one availability figure each
    members: list[str] = field(default_factory=list)  # every member of the cluster, answering or not

    @property
    def name(self) -> str:
        return f"{self.path} via {self.via_zone}"

    def writes(self) -> list[Sample]:
        return [s for s in self.samples if s.kind == "write"]

    def acked(self) -> list[int]:
        return [s.seq for s in self.samples if s.kind == "write" and s.ok and s.seq is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "via_zone": self.via_zone,
            "member_ids": {str(k): v for k, v in self.member_ids.items()},
            "path": self.path,
            "members": self.members,
            "fields": SAMPLE_FIELDS,
            "samples": [[getattr(s, f) for f in SAMPLE_FIELDS] for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ProbeHistory":
        fields_ = data["fields"]
        return cls(
            data["prefix"],
            data["via_zone"],
            {int(k): v for k, v in data["member_ids"].items()},
            [Sample(**dict(zip(fields_, row))) for row in data["samples"]],
            recorded_path(data),
            # Recorded before the members were: those that answered when the probe started.
            data.get("members") or sorted(data["member_ids"].values()),
        )


def canary(stop: threading.Event, record: Callable[[Sample], None], now: Callable[[], float]) -> None:
    """Until `stop`: ask to wake every CANARY_TICK and record each wake-up at least STALL_MIN late
    as a "stall" sample, a stretch in which no probe thread of the process could run either."""
    while not stop.is_set():
        due = now() + CANARY_TICK
        stop.wait(CANARY_TICK)
        woke = now()
        if woke - due >= STALL_MIN:
            record(Sample("stall", "harness", due, woke, False))


def recorded_path(data: dict[str, Any]) -> str:
    """A recorded history's path. Timelines written before it was recorded have none; there the shoot
    API probe is the one without etcd member ids, whose samples all name one member: its path."""
    if data.get("path"):
        return str(data["path"])
    fields_ = data.get("fields", [])
    members = {row[fields_.index("member")] for row in data.get("samples", [])} if "member" in fields_ else set()
    return members.pop() if len(members) == 1 and not data.get("member_ids") else "etcd"


class AvailabilityProbe:
    def __init__(self, env: EtcdCluster, timeline: Timeline, via_zone: str, interval: float = 0.010,
                 value_size: int = 0, timeout: float | None = None) -> None:
        if not 0 < interval <= MAX_INTERVAL:
            raise ConfigError(f"probe interval must be in (0, {MAX_INTERVAL}] s, got {interval}")
        self.env = env
        self.timeline = timeline
        self.via_zone = env.zone(via_zone)
        env.client_netns(self.via_zone)  # no vantage point there: said here, not in a probe thread
        self.interval = interval
        self.value_size = value_size  # bytes each write's value is padded to: large ones span many packets
        # Each request's patience ([timeouts] probe_request unless the scenario gives its own): a
        # request slower than this fails, and the writer moves on to another member.
        self.timeout = env.config.timeouts.probe_request if timeout is None else timeout
        if not 0 < self.timeout <= 30:
            raise ConfigError(f"probe request timeout must be in (0, 30] s, got {self.timeout}")
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._thaw: Callable[[], None] = lambda: None
        ids = {}
        for name, st in env.status(via_zone=None).items():
            if not isinstance(st, str):
                ids[st.member_id] = name
        self.history = ProbeHistory(f"/harness/probe/{uuid.uuid4().hex[:8]}/", self.via_zone, ids,
                                    members=[m.name for m in env.members])

    def start(self) -> "AvailabilityProbe":
        self._thaw = heap.hold()
        self._threads = [threading.Thread(target=self._write_loop, name="probe-write", daemon=True)]
        self._threads += [
            threading.Thread(target=self._member_loop, args=(m.name,), name=f"probe-{m.name}", daemon=True)
            for m in self.env.members
        ]
        self._threads += [
            threading.Thread(target=self._witness_loop, args=(m.name,), name=f"probe-witness-{m.name}", daemon=True)
            for m in self.env.members
        ]
        self._threads.append(threading.Thread(target=canary, args=(self._stop, self.history.samples.append,
                                                                   self.timeline.now), name="probe-canary", daemon=True))
        if isinstance(self.env, MemberCpuWaits):
            self._threads.append(threading.Thread(target=self._cpu_wait_loop, args=(self.env,), name="probe-cpu-wait",
                                                  daemon=True))
        for t in self._threads:
            t.start()
        self.timeline.mark("probe", "start", via_zone=self.via_zone, interval=self.interval, value_size=self.value_size)
        return self

    def check_health(self, interval: float) -> None:
        """Also ask each member's /health every `interval`, recorded as "health" samples: the
        question its readiness probe asks (a leader, and a linearizable read served), where the
        environment asks it (etcd's metrics listener, from the member's own zone), so a member
        slow to take client connections after a restart is not taken for one out of the quorum."""
        if not 0 < interval <= 1.0:
            raise ConfigError(f"health check interval must be in (0, 1] s, got {interval}")
        threads = [threading.Thread(target=self._health_loop, args=(m.name, interval), name=f"probe-health-{m.name}",
                                    daemon=True) for m in self.env.members]
        self._threads += threads
        for t in threads:
            t.start()
        self.timeline.mark("probe", "health checks", interval=interval)

    def stop(self) -> ProbeHistory:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=5)
        self._thaw()
        self.timeline.mark("probe", "stop", samples=len(self.history.samples))
        return self.history

    def _endpoint_order(self) -> list[str]:
        local = [m.name for m in self.env.members if m.zone == self.via_zone]
        return local + [m.name for m in self.env.members if m.zone != self.via_zone]

    def _tick(self, began: float) -> None:
        self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def _write_loop(self) -> None:
        order = self._endpoint_order()
        clients = {name: self.env.client(name, self.via_zone, self.timeout) for name in order}
        current, seq, record = 0, 0, self.history.samples.append
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                seq += 1
                name = order[current]
                t0 = self.timeline.now()
                try:
                    rev = clients[name].put(f"{self.history.prefix}{seq:08d}", f"{t0:.6f}".ljust(self.value_size, "."))
                    record(Sample("write", name, t0, self.timeline.now(), True, seq=seq, revision=rev))
                except EtcdRequestError as e:
                    record(Sample("write", name, t0, self.timeline.now(), False, seq=seq, error=str(e)[-160:]))
                    current = (current + 1) % len(order)
                self._tick(began)
        finally:
            for c in clients.values():
                c.close()

    def _health_loop(self, member: str, interval: float) -> None:
        record = self.history.samples.append
        while not self._stop.is_set():
            began = time.monotonic()
            t0 = self.timeline.now()
            try:
                healthy, said = self.env.member_health(member)
            except Exception as e:  # a check that could not be made is a failed one, never a silent thread
                healthy, said = False, f"{type(e).__name__}: {e}"
            record(Sample("health", member, t0, self.timeline.now(), healthy, error=None if healthy else said[-160:]))
            self._stop.wait(max(0.0, interval - (time.monotonic() - began)))

    def _cpu_wait_loop(self, env: MemberCpuWaits) -> None:
        """How long the members waited for a CPU in each stretch: a write slowed by no more than
        that may have been slowed by the machine, not by etcd."""
        record = self.history.samples.append
        before, since = env.members_cpu_waited(), self.timeline.now()
        if before is None:
            return  # the machine keeps no count: the writes are judged without it
        while not self._stop.wait(CPU_WAIT_INTERVAL):
            now, at = env.members_cpu_waited(), self.timeline.now()
            if now is None:
                return
            if now > before:
                record(Sample("cpu-wait", "members", since, at, True, waited=now - before))
            before, since = now, at

    def _witness_loop(self, member: str) -> None:
        """The member's raft state through the harness's own view of it ("witness" samples: the
        term is its current one, the leader the one it follows now)."""
        client = self.env.client(member, None, self.timeout)
        record = self.history.samples.append
        interval = WITNESS_INTERVAL
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                t0 = self.timeline.now()
                try:
                    raft = client.raft_status()
                    record(Sample("witness", member, t0, self.timeline.now(), True, leader=raft.leader, term=raft.term))
                    interval = WITNESS_INTERVAL
                except EtcdRequestError as e:
                    record(Sample("witness", member, t0, self.timeline.now(), False, error=str(e)[-160:]))
                    # A member out of reach is asked less often: each failed request is a new
                    # connection (a new port-forward on a cluster), and failures tell nothing more.
                    interval = min(WITNESS_BACKOFF_MAX, interval * 2)
                self._stop.wait(max(0.0, interval - (time.monotonic() - began)))
        finally:
            client.close()

    def _member_loop(self, member: str) -> None:
        client = self.env.client(member, self.via_zone, self.timeout)
        record = self.history.samples.append
        key = f"{self.history.prefix}read"
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                t0 = self.timeline.now()
                try:
                    client.get(key, serializable=True)
                    record(Sample("read", member, t0, self.timeline.now(), True))
                except EtcdRequestError as e:
                    record(Sample("read", member, t0, self.timeline.now(), False, error=str(e)[-160:]))
                t0 = self.timeline.now()
                try:
                    st = client.status()
                    record(Sample("status", member, t0, self.timeline.now(), True, revision=st.revision,
                                  leader=st.leader, term=st.raft_term))
                except EtcdRequestError as e:
                    record(Sample("status", member, t0, self.timeline.now(), False, error=str(e)[-160:]))
                self._tick(began)
        finally:
            client.close()
