"""Zone outage: deny all traffic into and out of the zone's subnet at the router.

The local equivalent of swapping the zone's subnet network ACLs for an empty (deny-all)
one: traffic inside the subnet still flows (NACLs do not filter it), everything
crossing the subnet boundary is dropped, established connections included.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.providers.local import netns
from harness.providers.local.region import FAULT_TABLE_PREFIX, LocalEnvironment


def table_name(zone: str) -> str:
    return f"{FAULT_TABLE_PREFIX}outage_{zone.replace('-', '_')}"


def outage_rules(table: str, subnet: str) -> str:
    # add+flush makes inject idempotent; the script is applied atomically by nft -f.
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


class ZoneOutage:
    kind: ClassVar[str] = "zone-outage"

    def available(self, env: LocalEnvironment) -> str | None:
        return None

    def validate(self, env: LocalEnvironment, target: str) -> str:
        return env.zone(target)

    def inject(self, env: LocalEnvironment, target: str) -> dict[str, Any]:
        table = table_name(target)
        netns.nft(env.names.router, outage_rules(table, env.names.subnet(target)), env.config.timeouts.command)
        return {"table": table}

    def heal(self, env: LocalEnvironment, target: str, data: dict[str, Any]) -> None:
        netns.nft(env.names.router, remove_table(data.get("table") or table_name(target)), env.config.timeouts.command)
