"""Cross-zone traffic, observed two ways.

- Ground truth: nftables counters in the region's router, one per ordered pair of zone subnets,
  counting every forwarded IP packet's length (headers included: the bytes a provider bills).
  They sit after the fault tables' chains, so what a zone outage drops is not counted.
- An estimate from etcd's own peer metrics (`etcd_network_peer_sent_bytes_total{To}`), mapped to
  the members' zones: the only source on a real cluster. They count raft message bytes, not wire
  bytes, and only member-to-member traffic (not clients): the two differ by design.
"""

from __future__ import annotations

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


def pair_name(src: str, dst: str) -> str:
    return f"{src}->{dst}"


@dataclass(frozen=True)
class TrafficSample:
    at: float  # time.monotonic()
    wire: dict[str, int]  # "zone-a->zone-b" -> bytes forwarded so far
    metrics: dict[str, int] = field(default_factory=dict)  # the same from the members' peer metrics


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


def metric_bytes(etcd: Any) -> dict[str, int]:
    """Bytes each member has sent to each peer, as pairs of zones (members in one zone add up)."""
    statuses = etcd.status()
    zone_of_id = {format(s.member_id, "x"): etcd.member(name).zone for name, s in statuses.items() if isinstance(s, Status)}
    pairs: dict[str, int] = {}
    for m in etcd.members:
        host = m.client_url.split("//")[1].split(":")[0]
        conn = netns.NsHTTPConnection(host, 2381, etcd.config.timeouts.status_request * 4, etcd.names.client_ns(m.zone))
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode(errors="replace")
        except OSError:
            continue  # a member cut off or down sends nothing we could count now
        finally:
            conn.close()
        for peer, value in _SENT.findall(text):
            dst = zone_of_id.get(peer)
            if dst is not None and dst != m.zone:
                key = pair_name(m.zone, dst)
                pairs[key] = pairs.get(key, 0) + int(float(value))
    return pairs


class TrafficProbe:
    """Samples both sources; `rates` between two samples gives KiB/s per zone pair and in total."""

    def __init__(self, env: Any, etcd: Any | None = None) -> None:
        self.env, self.etcd = env, etcd if etcd is not None else env
        ensure_counters(env)

    def sample(self) -> TrafficSample:
        return TrafficSample(time.monotonic(), wire_bytes(self.env), metric_bytes(self.etcd))
