"""A member's catch-up after it was cut off (GEP-20's appendix: a member that rejoined 5.1 GB
behind was sent about 120 MiB/s by the leader for about 40 s).

Observed through the environment's protocols only: the bytes that crossed each pair of zones
from just before the member's return until it reached the revision the leader had when it
returned (harness/probes/traffic.py), how long that took, whether the leader sent it a snapshot
(the leader's `etcd_network_snapshot_send_success{To=<member>}`), the leader's CPU seconds
per second (`process_cpu_seconds_total`) while the member was away and during the catch-up, and where
the wire's bytes come from: what the leader itself counts as sent to the member
(`etcd_network_peer_sent_bytes_total{To}`: raft messages on its streams and pipeline, and a
snapshot's whole size) and its database's size (`etcd_mvcc_db_total_size_in_bytes`: what a
snapshot sends, every revision not yet compacted, not only the missing ones). A reading that
fails raises: a catch-up measured without one of them is not measured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from harness.errors import HarnessError
from harness.etcd_gateway import Status
from harness.probes.traffic import TrafficProbe, TrafficSample
from harness.providers.base import EtcdCluster, Environment
from harness.wait import wait_for

REQUIRED = ("process_cpu_seconds_total", "etcd_mvcc_db_total_size_in_bytes")  # a leader without them is refused


@dataclass(frozen=True)
class LeaderReading:
    at: float  # time.monotonic()
    snapshots_sent: float  # to the member catching up
    cpu_seconds: float
    sent_bytes: float  # to the member catching up, as the leader counts them
    db_bytes: float


def leader_reading(etcd: EtcdCluster, leader: str, member_id: str) -> LeaderReading:
    from prometheus_client.parser import text_string_to_metric_families

    text = etcd.metrics(leader)
    at = time.monotonic()
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            # The parser gives a counter's samples a "_total" suffix, also where etcd's lack one.
            name = sample.name.removesuffix("_total")
            if name == "etcd_network_snapshot_send_success" and sample.labels.get("To") == member_id:
                values["sent"] = sample.value
            elif name == "etcd_network_peer_sent_bytes" and sample.labels.get("To") == member_id:
                values["bytes"] = sample.value
            elif sample.name in REQUIRED:
                values[sample.name] = sample.value
    missing = [n for n in REQUIRED if n not in values]
    if missing:
        raise HarnessError(f"{leader}'s metrics have no {' and no '.join(missing)}")
    # No series yet for the member: nothing sent to it.
    return LeaderReading(at, values.get("sent", 0.0), values[REQUIRED[0]], values.get("bytes", 0.0), values[REQUIRED[1]])


def _status(etcd: EtcdCluster, member: str) -> Status:
    status = etcd.status()[member]
    if isinstance(status, str):
        raise HarnessError(f"{member} does not answer: {status}")
    return status


@dataclass(frozen=True)
class CatchUpReadings:
    """What a catch-up observed: the leader's readings as the member went (`away`), just before its
    return (`returned`) and once it had caught up (`reached`); the revisions; the traffic samples
    around the catch-up; the monotonic times of the return and of the catch-up."""

    leader: str
    revision_before: int  # the member's own as it went
    target: int  # the leader's at the return
    away: LeaderReading
    returned: LeaderReading
    reached: LeaderReading
    back_at: float
    caught_up_at: float
    traffic_first: TrafficSample
    traffic_last: TrafficSample


class CatchUp:
    """Begun as the member's zone goes (`begin`, with the member's revision then), ended once it
    has caught up (`end`): the leader's CPU before the return is read over the time away, so that
    nothing waits between the others getting far enough ahead and the member's return."""

    def __init__(self, env: Environment, etcd: EtcdCluster, member: str) -> None:
        self.etcd, self.member = etcd, member
        self.traffic = TrafficProbe(env, etcd)
        statuses = etcd.status()
        leader = etcd.leader(statuses)
        mine = statuses.get(member)
        if leader is None or leader == member:
            raise HarnessError(f"a catch-up of {member} needs another member leading; leader: {leader}")
        self.leader = leader
        self.member_id = format(mine.member_id, "x") if isinstance(mine, Status) else self._id_from_leader()
        self.away: tuple[LeaderReading, int] | None = None

    def _id_from_leader(self) -> str:
        # A cut-off member cannot say its own id; the leader's member list names it.
        client = self.etcd.client(self.leader)
        try:
            return next(format(m["ID"], "x") for m in client.members() if m["name"] == self.member)
        finally:
            client.close()

    def begin(self, revision: int) -> None:
        """As the member is cut off; `revision` is the member's own just before."""
        self.away = (leader_reading(self.etcd, self.leader, self.member_id), revision)

    def end(self, returned: Callable[[], object], timeout: float) -> CatchUpReadings:
        """`returned()` brings the member's zone back; then until the member has the revision the
        leader had right after. The readings before, at and after the return
        (harness.validate.catch_up.figures makes the figures of them)."""
        assert self.away is not None, "begin() first"
        before, revision_before = self.away
        last = leader_reading(self.etcd, self.leader, self.member_id)
        first = self.traffic.sample()
        returned()
        back = time.monotonic()
        target = _status(self.etcd, self.leader).revision
        wait_for(lambda: self._revision(), lambda r: r is not None and r >= target,
                 f"{self.member} to reach revision {target}, the leader's at its return", timeout, interval=0.1)
        caught_up = time.monotonic()
        reached = leader_reading(self.etcd, self.leader, self.member_id)
        return CatchUpReadings(self.leader, revision_before, target, before, last, reached, back, caught_up,
                               first, self.traffic.sample())

    def _revision(self) -> int | None:
        status = self.etcd.status()[self.member]
        return None if isinstance(status, str) else status.revision
