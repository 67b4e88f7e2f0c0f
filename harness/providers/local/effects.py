"""Fault effects on the local region: nftables in the router, signals and links in node namespaces.

The fault classes in harness/faults choose targets and go through the shared runner; these
functions are what a zone outage or a node failure *is* locally.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError
from harness.providers.local import netns
from harness.providers.local.etcd import signal_pid

if TYPE_CHECKING:
    from harness.providers.local.region import LocalEnvironment

# Tables the harness adds for faults; `harness heal` drops every table with this prefix.
FAULT_TABLE_PREFIX = "harness_"
NODE_FAILURE_MODES = ("kill", "freeze", "link-down")


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


def cut_zone(env: LocalEnvironment, zone: str) -> dict[str, Any]:
    table = outage_table(zone)
    netns.nft(env.names.router, outage_rules(table, env.names.subnet(zone)), env.config.timeouts.command)
    return {"table": table}


def restore_zone(env: LocalEnvironment, zone: str, data: dict[str, Any]) -> None:
    netns.nft(env.names.router, remove_table(data.get("table") or outage_table(zone)), env.config.timeouts.command)


def fail_node(env: LocalEnvironment, node: str, mode: str) -> dict[str, Any]:
    """Kill (SIGKILL), freeze (SIGSTOP) every process of the node, or take its link down."""
    if mode not in NODE_FAILURE_MODES:
        raise ConfigError(f"unknown node failure mode {mode!r}; accepted: {', '.join(NODE_FAILURE_MODES)}")
    ns = env.names.node_ns(node)
    member = env.member_on(node)
    data: dict[str, Any] = {"mode": mode, "member": member.name if member else None}
    if mode == "kill":
        if member is not None:
            env.kill_member(member.name)
        for pid in netns.netns_pids(ns):
            signal_pid(pid, signal.SIGKILL)
        # A dead machine answers for none of its pods' addresses any more.
        netns.run(["ip", "-n", ns, "addr", "flush", "dev", "eth0", "secondary"], check=False,
                  timeout=env.config.timeouts.command)
    elif mode == "freeze":
        for pid in netns.netns_pids(ns):
            signal_pid(pid, signal.SIGSTOP)
    else:
        netns.run(["ip", "-n", ns, "link", "set", "eth0", "down"], timeout=env.config.timeouts.command)
    return data


def restore_node(env: LocalEnvironment, node: str, data: dict[str, Any]) -> None:
    ns = env.names.node_ns(node)
    mode = data.get("mode", "kill")
    if mode == "kill":
        # The node comes back: its member restarts with the data it had, its kubelet stand-in too.
        if data.get("member"):
            env.start_member(data["member"])
        env.restart_node_agents(node)
    elif mode == "freeze":
        for pid in netns.netns_pids(ns):
            signal_pid(pid, signal.SIGCONT)
    else:
        _link_up(env, node)


def _link_up(env: LocalEnvironment, node: str) -> None:
    ns = env.names.node_ns(node)
    t = env.config.timeouts.command
    netns.run(["ip", "-n", ns, "link", "set", "eth0", "up"], timeout=t)
    # The default route went away with the link.
    netns.run(["ip", "-n", ns, "route", "replace", "default", "via", env.names.gateway(env.node(node).zone)], timeout=t)


def sweep(env: LocalEnvironment) -> list[str]:
    """After a crash: remove every fault effect, whether or not the ledger knew of it."""
    done: list[str] = []
    tables = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
    for line in tables.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].startswith(FAULT_TABLE_PREFIX):
            netns.nft(env.names.router, remove_table(parts[2]))
            done.append(f"removed nft table {parts[2]}")
    for node in env.nodes:
        ns = env.names.node_ns(node.name)
        for pid in netns.netns_pids(ns):
            signal_pid(pid, signal.SIGCONT)
        link = netns.run(["ip", "-n", ns, "-o", "link", "show", "eth0"], check=False)
        if "state DOWN" in link or ",UP" not in link:
            _link_up(env, node.name)
            done.append(f"link up on {node.name}")
    for m in env.members:
        if not env.member_running(m.name):
            env.start_member(m.name)
            done.append(f"restarted {m.name}")
    for node in env.nodes:
        if env.restart_node_agents(node.name):
            done.append(f"restarted the node agents of {node.name}")
    return done
