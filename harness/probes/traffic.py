"""Cross-zone traffic, observed two ways.

- Ground truth: the bytes forwarded on the wire per ordered pair of zones, where the environment
  counts them (ZoneTrafficCounters: on the local region, nftables counters in its router).
- An estimate from etcd's own peer metrics (`etcd_network_peer_sent_bytes_total{To}`), mapped to
  the members' zones: the only source on a real cluster. They count raft message bytes, not wire
  bytes, and only member-to-member traffic (not clients): the two differ by design.

A sample keeps each member's scrape apart, a failed one with its error, so the rates
(harness.validate.traffic) can tell a member that sent nothing from one that was not read.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable

from harness.errors import HarnessError
from harness.etcd_gateway import Status
from harness.providers.base import EtcdCluster, Environment, ZoneTrafficCounters, zone_pair
from harness.topology import Member

_SENT = re.compile(r'^etcd_network_peer_sent_bytes_total\{To="([0-9a-f]+)"\} ([0-9.e+]+)$', re.M)
_STARTED = re.compile(r"^process_start_time_seconds ([0-9.e+]+)$", re.M)


@dataclass(frozen=True)
class Scrape:
    """One member's peer metrics at one sample, or why they could not be read."""

    zone: str
    sent: dict[str, int] | None = None  # "zone-a->zone-b" -> bytes this member sent so far; None: not read
    started: float | None = None  # process_start_time_seconds: another value later means it restarted
    error: str | None = None


@dataclass(frozen=True)
class TrafficSample:
    at: float  # time.monotonic()
    wire: dict[str, int] | None  # "zone-a->zone-b" -> bytes forwarded so far; None: not counted here
    metrics: dict[str, Scrape] = field(default_factory=dict)  # member -> its peer metrics
    wire_unavailable: str | None = None  # why `wire` is None: this environment has no counters there


def parse_metrics(text: str, zone: str, zone_of_id: dict[str, str]) -> Scrape:
    """A member's /metrics text as bytes sent per pair of zones (peers in its own zone left out)."""
    started = _STARTED.search(text)
    pairs: dict[str, int] = {}
    for peer, value in _SENT.findall(text):
        dst = zone_of_id.get(peer)
        if dst is None:  # its bytes cannot be put in a pair: the scrape is as good as failed
            return Scrape(zone, error=f"sent bytes to peer {peer}, whose zone no member status has named")
        if dst != zone:
            key = zone_pair(zone, dst)
            pairs[key] = pairs.get(key, 0) + int(float(value))
    return Scrape(zone, pairs, float(started.group(1)) if started else None)


def scrape(etcd: EtcdCluster, member: Member, zone_of_id: dict[str, str]) -> Scrape:
    """One member's peer metrics; a failure is kept, not skipped."""
    try:
        text = etcd.metrics(member.name)
    except HarnessError as e:
        return Scrape(member.zone, error=str(e))
    return parse_metrics(text, member.zone, zone_of_id)


def metric_scrapes(etcd: EtcdCluster, zone_of_id: dict[str, str]) -> dict[str, Scrape]:
    """Every member's scrape. `zone_of_id` (member id in hex -> zone) is kept up to date from the
    statuses that answer: ids do not change, so one a member's status named earlier still holds."""
    zone_of_id.update({format(s.member_id, "x"): etcd.member(name).zone
                       for name, s in etcd.status().items() if isinstance(s, Status)})
    return {m.name: scrape(etcd, m, zone_of_id) for m in etcd.members}


class TrafficProbe:
    """Samples both sources; `harness.validate.traffic.rates` between two samples gives KiB/s per
    zone pair and in total, and what it could not count."""

    def __init__(self, env: Environment, etcd: EtcdCluster | None = None) -> None:
        # Without counters on the wire (a real cluster) the peer metrics are the only source.
        self.counters = env if isinstance(env, ZoneTrafficCounters) else None
        self.wire_unavailable = None if self.counters else f"not available on the {env.provider} provider"
        self.etcd: EtcdCluster = etcd if etcd is not None else env  # type: ignore[assignment]
        self._zone_of_id: dict[str, str] = {}
        if self.counters is not None:
            self.counters.zone_pair_bytes()  # counting starts here

    def sample(self) -> TrafficSample:
        wire = self.counters.zone_pair_bytes() if self.counters is not None else None
        return TrafficSample(time.monotonic(), wire, metric_scrapes(self.etcd, self._zone_of_id), self.wire_unavailable)

    def window(self, seconds: float, during: Callable[[], object] | None = None) -> tuple[TrafficSample, TrafficSample]:
        """A sample now and one `seconds` later (harness.validate.traffic.rates between them gives
        the figures). `during()` runs at the window's start, inside it; the window is never shorter
        than `seconds`, and lasts as long as `during` if that is longer."""
        first = self.sample()
        if during is not None:
            during()
        time.sleep(max(0.0, seconds - (time.monotonic() - first.at)))
        return first, self.sample()
