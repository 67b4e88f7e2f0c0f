"""The wire's side of cross-zone traffic on the local region: nftables counters in the router,
one per ordered pair of zone subnets, counting every forwarded IP packet's length (headers
included: the bytes a provider bills). They sit after the fault tables' chains, so what a zone
outage drops is not counted."""

from __future__ import annotations

import json
from itertools import permutations
from typing import TYPE_CHECKING

from harness import netns
from harness.providers.base import zone_pair
from harness.providers.local.network.fault_tables import DELAY_DEV_PREFIX

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

TABLE = "region_traffic"  # not harness_*: `harness heal` leaves it alone


def _rules(env: RegionRecord) -> str:
    lines = [f"add table ip {TABLE}", f"flush table ip {TABLE}",
             f"add chain ip {TABLE} forward {{ type filter hook forward priority 10; policy accept; }}"]
    for a, b in permutations(env.zones, 2):
        # A delayed packet passes twice, into its delay line and out: counted once, on its way out.
        lines.append(f"add rule ip {TABLE} forward ip saddr {env.names.subnet(a)} ip daddr {env.names.subnet(b)} "
                     f'oifname != "{DELAY_DEV_PREFIX}*" counter comment "{zone_pair(a, b)}"')
    return "\n".join(lines) + "\n"


def zone_pair_bytes(env: RegionRecord) -> dict[str, int]:
    """Bytes forwarded so far per pair; the counters are installed on first use (an existing
    table is kept, so every reader sees one running count)."""
    present = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
    if f"table ip {TABLE}" not in present:
        netns.nft(env.names.router, _rules(env), env.config.timeouts.command)
    out = json.loads(netns.ns_run(env.names.router, ["nft", "-j", "list", "table", "ip", TABLE]))
    counts: dict[str, int] = {}
    for item in out.get("nftables", []):
        rule = item.get("rule")
        if rule and rule.get("comment"):
            counter = next((e["counter"] for e in rule["expr"] if "counter" in e), None)
            if counter is not None:
                counts[rule["comment"]] = int(counter["bytes"])
    return counts
