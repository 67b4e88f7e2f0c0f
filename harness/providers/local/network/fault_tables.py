"""The router's fault tables: what they are named, the rules that cut a zone off, how one is
removed, and what its counters dropped. Each fault adds a table of its own, so that healing one
never touches another's."""

from __future__ import annotations

import json

from harness import netns
from harness.errors import HarnessError

FAULT_TABLE_PREFIX = "harness_"  # `harness heal` drops every table with this prefix
DELAY_DEV_PREFIX = "hd-"  # the delay line's TUN devices (traffic through them is counted once)


def outage_table(zone: str) -> str:
    return f"{FAULT_TABLE_PREFIX}outage_{zone.replace('-', '_')}"


def outage_rules(table: str, subnet: str) -> str:
    """Deny everything crossing the zone's subnet boundary, like an empty network ACL:
    traffic inside the subnet still flows (NACLs do not filter it), established
    connections are cut too. add+flush makes inject idempotent; nft -f applies atomically."""
    return f"""add table inet {table}
flush table inet {table}
add chain inet {table} forward {{ type filter hook forward priority -10; policy accept; }}
add chain inet {table} input {{ type filter hook input priority -10; policy accept; }}
add chain inet {table} output {{ type filter hook output priority -10; policy accept; }}
add rule inet {table} forward ip saddr {subnet} ip daddr != {subnet} counter drop
add rule inet {table} forward ip daddr {subnet} ip saddr != {subnet} counter drop
add rule inet {table} input ip saddr {subnet} counter drop
add rule inet {table} output ip daddr {subnet} counter drop
"""


def remove_table(table: str) -> str:
    # "add" first so that "delete" never fails on a table that is already gone.
    return f"add table inet {table}\ndelete table inet {table}\n"


def dropped_packets(ns: str, table: str) -> int | None:
    """Packets the counters of an nft table in `ns` dropped so far; None when the table is not there."""
    try:
        listed = json.loads(netns.ns_run(ns, ["nft", "-j", "list", "table", "inet", table]))
    except (HarnessError, ValueError):
        return None
    return sum(int(e["counter"]["packets"]) for item in listed.get("nftables", []) if "rule" in item
               for e in item["rule"]["expr"] if "counter" in e)
