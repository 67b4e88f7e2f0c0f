"""Cross-zone traffic, observed two ways.

- Ground truth: nftables counters in the region's router, one per ordered pair of zone subnets,
  counting every forwarded IP packet's length (headers included: the bytes a provider bills).
  They sit after the fault tables' chains, so what a zone outage drops is not counted.
- An estimate from etcd's own peer metrics (`etcd_network_peer_sent_bytes_total{To}`), mapped to
  the members' zones: the only source on a real cluster. They count raft message bytes, not wire
  bytes, and only member-to-member traffic (not clients): the two differ by design.

A sample keeps each member's scrape apart, a failed one with its error, so the rates
(harness.validate.traffic) can tell a member that sent nothing from one that was not read.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

from harness.etcd_gateway import Status
from harness.providers.local import netns

TABLE = "region_traffic"  # not harness_*: `harness heal` leaves it alone
_SENT = re.compile(r'^etcd_network_peer_sent_bytes_total\{To="([0-9a-f]+)"\} ([0-9.e+]+)$', re.M)
_STARTED = re.compile(r"^process_start_time_seconds ([0-9.e+]+)$", re.M)


def pair_name(src: str, dst: str) -> str:
    return f"{src}->{dst}"


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
    wire: dict[str, int]  # "zone-a->zone-b" -> bytes forwarded so far
    metrics: dict[str, Scrape] = field(default_factory=dict)  # member -> its peer metrics


def _rules(env: Any) -> str:
    lines = [f"add table ip {TABLE}", f"flush table ip {TABLE}",
             f"add chain ip {TABLE} forward {{ type filter hook forward priority 10; policy accept; }}"]
    for a, b in permutations(env.zones, 2):
        lines.append(f"add rule ip {TABLE} forward ip saddr {env.names.subnet(a)} ip daddr {env.names.subnet(b)} "
                     f'counter comment "{pair_name(a, b)}"')
    return "\n".join(lines) + "\n"


def ensure_counters(env: Any) -> None:
    """Install the per-pair counters in the router once (idempotent: an existing table is kept)."""
    present = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
    if f"table ip {TABLE}" not in present:
        netns.nft(env.names.router, _rules(env), env.config.timeouts.command)


def wire_bytes(env: Any) -> dict[str, int]:
    out = json.loads(netns.ns_run(env.names.router, ["nft", "-j", "list", "table", "ip", TABLE]))
    counts: dict[str, int] = {}
    for item in out.get("nftables", []):
        rule = item.get("rule")
        if rule and rule.get("comment"):
            counter = next((e["counter"] for e in rule["expr"] if "counter" in e), None)
            if counter is not None:
                counts[rule["comment"]] = int(counter["bytes"])
    return counts


def parse_metrics(text: str, zone: str, zone_of_id: dict[str, str]) -> Scrape:
    """A member's /metrics text as bytes sent per pair of zones (peers in its own zone left out)."""
    started = _STARTED.search(text)
    pairs: dict[str, int] = {}
    for peer, value in _SENT.findall(text):
        dst = zone_of_id.get(peer)
        if dst is None:  # its bytes cannot be put in a pair: the scrape is as good as failed
            return Scrape(zone, error=f"sent bytes to peer {peer}, whose zone no member status has named")
        if dst != zone:
            key = pair_name(zone, dst)
            pairs[key] = pairs.get(key, 0) + int(float(value))
    return Scrape(zone, pairs, float(started.group(1)) if started else None)


def scrape(etcd: Any, member: Any, zone_of_id: dict[str, str]) -> Scrape:
    """One member's peer metrics, from a client namespace of its zone; a failure is kept, not skipped."""
    host = member.client_url.split("//")[1].split(":")[0]
    conn = netns.NsHTTPConnection(host, 2381, etcd.config.timeouts.status_request * 4, etcd.names.client_ns(member.zone))
    try:
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        text = resp.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return Scrape(member.zone, error=f"{type(e).__name__}: {e}")
    finally:
        conn.close()
    if resp.status != 200:
        return Scrape(member.zone, error=f"HTTP {resp.status} from /metrics")
    return parse_metrics(text, member.zone, zone_of_id)


def metric_scrapes(etcd: Any, zone_of_id: dict[str, str]) -> dict[str, Scrape]:
    """Every member's scrape. `zone_of_id` (member id in hex -> zone) is kept up to date from the
    statuses that answer: ids do not change, so one a member's status named earlier still holds."""
    zone_of_id.update({format(s.member_id, "x"): etcd.member(name).zone
                       for name, s in etcd.status().items() if isinstance(s, Status)})
    return {m.name: scrape(etcd, m, zone_of_id) for m in etcd.members}


class TrafficProbe:
    """Samples both sources; `harness.validate.traffic.rates` between two samples gives KiB/s per
    zone pair and in total, and what it could not count."""

    def __init__(self, env: Any, etcd: Any | None = None) -> None:
        self.env, self.etcd = env, etcd if etcd is not None else env
        self._zone_of_id: dict[str, str] = {}
        ensure_counters(env)

    def sample(self) -> TrafficSample:
        return TrafficSample(time.monotonic(), wire_bytes(self.env), metric_scrapes(self.etcd, self._zone_of_id))
