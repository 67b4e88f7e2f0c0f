"""What etcd-druid reports of the etcds it runs (each `Etcd` resource's status: ready, ready
replicas, its conditions and each member's status), read every second in the background while a
scenario runs: the operator's vantage, beside the members' own answers and the pods. Each read is
an "etcd-status" event on the scenario's timeline; a read that failed is one too (a gap, never
skipped). Observes only: it never judges (harness.validate.etcd_status does) and never writes.

druid derives its view from the members' leases, which each member's etcd-backup-restore renews
while its etcd answers, and from their pods; its defaults take a member as NotReady only after
its lease is a minute old and its containers are not ready (etcd-druid's
etcd-member-unknown-threshold), so it sees a member's loss a minute or more after the members do.
It rewrites its conditions every 15 s (etcd-status-sync-period) while it runs: a status none of
whose conditions was updated for STALE_AFTER_S is what druid said before it stopped, not what it
reports now, and says nothing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from harness.probes.periodic import PeriodicSampler
from harness.timeline import Timeline

INTERVAL = 1.0  # s: druid updates the status every few seconds; more would only load the seed
EVENT = "etcd-status"
STALE_AFTER_S = 45.0  # three of druid's status syncs missed


@dataclass(frozen=True)
class StatusRead:
    """One read of an Etcd's status, at `t` on the timeline (when the read returned: the status is
    no older than that); `error` when it could not be read."""

    t: float
    etcd: str
    ready: bool = False
    ready_replicas: int = 0
    replicas: int = 0
    conditions: dict[str, str] = field(default_factory=dict)  # type -> "True" / "False" / "Unknown"
    members: dict[str, str] = field(default_factory=dict)  # member -> Ready / NotReady / Unknown
    error: str | None = None
    updated_ago: float | None = None  # s since druid last updated a condition, at the read (None: unknown)

    @property
    def stale(self) -> bool:
        """druid has not rewritten its conditions for STALE_AFTER_S: it is not reporting."""
        return self.updated_ago is not None and self.updated_ago > STALE_AFTER_S

    @property
    def quorate(self) -> bool:
        """druid says a majority of the members is ready (its Ready condition, reason Quorate)."""
        return self.error is None and not self.stale and self.conditions.get("Ready") == "True"

    @property
    def all_ready(self) -> bool:
        """druid says the etcd is ready with every member ready: its status, its StatefulSet's ready
        replicas and its AllMembersReady condition."""
        return (self.error is None and not self.stale and self.ready and self.replicas > 0
                and self.ready_replicas == self.replicas and self.conditions.get("AllMembersReady") == "True")

    def says(self) -> str:
        """What the read said, in a line."""
        if self.error is not None:
            return f"not read ({self.error})"
        members = ", ".join(f"{m} {s}" for m, s in sorted(self.members.items()))
        conditions = ", ".join(f"{c} {s}" for c, s in sorted(self.conditions.items()))
        stale = (f"; stale: druid last updated it {self.updated_ago:.0f}s before (not reporting)" if self.stale
                 else "")
        return (f"ready={self.ready}, {self.ready_replicas}/{self.replicas} replicas ready; "
                f"conditions: {conditions or 'none'}; members: {members or 'none'}{stale}")


def read_of(t: float, etcd: str, status: dict[str, Any], wall: float | None = None) -> StatusRead:
    """An Etcd's status, as etcd-druid writes it, made a StatusRead; `wall`: the unix time of the
    read, for how long ago druid last updated it."""
    conditions = status.get("conditions") or []
    updated = [datetime.fromisoformat(c["lastUpdateTime"]).timestamp() for c in conditions if c.get("lastUpdateTime")]
    return StatusRead(t, etcd, bool(status.get("ready")), int(status.get("readyReplicas") or 0),
                      int(status.get("replicas") or 0), {c["type"]: c.get("status", "") for c in conditions},
                      {m.get("name", "?"): m.get("status", "") for m in status.get("members") or []},
                      updated_ago=None if wall is None or not updated else round(wall - max(updated), 1))


class EtcdStatusSampler(PeriodicSampler):
    """Reads every named Etcd's status every `interval` s in a thread; `sample()` reads once more
    now (a step closing its window); `reads` keeps every read in order."""

    target = EVENT

    def __init__(self, read_status: Callable[[str], dict[str, Any]], etcds: tuple[str, ...], timeline: Timeline,
                 namespace: str, interval: float = INTERVAL) -> None:
        super().__init__(timeline, namespace, interval)
        self.read_status, self.etcds = read_status, etcds
        self.reads: list[StatusRead] = []
        self._lock = threading.Lock()

    @classmethod
    def of_seed(cls, kube: Any, namespace: str, etcds: tuple[str, ...], timeline: Timeline,
                interval: float = INTERVAL) -> EtcdStatusSampler:
        """Reading the Etcd resources of `namespace` through the seed's API (`kube`: its KubeAccess)."""
        from harness.kube import cluster, druid

        api = cluster.connect(kube)
        return cls(lambda name: druid.etcd_status(api, namespace, name), etcds, timeline, namespace, interval)

    def sample(self, *etcds: str) -> list[StatusRead]:
        """One read of each Etcd named (default: all), each also an event on the timeline."""
        got = []
        for name in etcds or self.etcds:
            try:
                status = self.read_status(name)
            except Exception as e:  # the client's errors come in many types: a gap, never a dead sampler
                read = StatusRead(self.timeline.now(), name, error=f"{type(e).__name__}: {e}"[-200:])
                self.timeline.mark(EVENT, name, error=read.error)
            else:
                read = read_of(self.timeline.now(), name, status, time.time())
                self.timeline.mark(EVENT, name, ready=read.ready, ready_replicas=read.ready_replicas,
                                   replicas=read.replicas, conditions=read.conditions, members=read.members,
                                   updated_ago=read.updated_ago)
            got.append(read)
        with self._lock:
            self.reads.extend(got)
        return got

    def of(self, etcd: str) -> list[StatusRead]:
        """Every read of that Etcd so far, in order."""
        with self._lock:
            return [r for r in self.reads if r.etcd == etcd]
