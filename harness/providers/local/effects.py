"""Fault effects on the local region: nftables in the router, signals and links in node namespaces.

The fault classes in harness/faults choose targets and go through the shared runner; these
functions are what a zone outage or a node failure *is* locally.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import sys
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import netns
from harness.errors import ConfigError, EnvironmentStateError, HarnessError
from harness.processes import cmdline, log_tail, process_state, signal_pid, spawn
from harness.providers.base import PORTS, LinkImpairment
from harness.providers.local import members
from harness.providers.local.host import disks
from harness.providers.local.seed.kubernetes import restart_node_agents
from harness.providers.local.network.fault_tables import (DELAY_DEV_PREFIX, FAULT_TABLE_PREFIX, dropped_packets,
                                                          outage_rules, outage_table, remove_table)
from harness.wait import first_within, wait_serving

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

# Delay lines: TUN devices named with this prefix, routing tables (and rule preferences) in this range.
DELAY_TABLES = (1000, 9000)
NODE_FAILURE_MODES = ("kill", "freeze", "link-down")
# A frozen node's processes: stopped, or already dead (a zombie not yet reaped runs no more either).
FROZEN = ("T", "t", "Z", "X", "")


def cut_zone(env: RegionRecord, zone: str) -> dict[str, Any]:
    table = outage_table(zone)
    netns.nft(env.names.router, outage_rules(table, env.names.subnet(zone)), env.config.timeouts.command)
    return {"table": table}


def zone_cut_effect(env: RegionRecord, zone: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """The cut is in effect once the router has dropped a packet of the zone (the members'
    heartbeats cross it every 100 ms)."""
    table = data.get("table") or outage_table(zone)
    dropped = dropped_packets(env.names.router, table)
    return {"router_dropped_packets": dropped, "table": table} if dropped else None


_CHAIN = re.compile(r"chain (\S+) \{(.*?)\n\s*\}", re.S)
_ACL_COMMENT = re.compile(r'^\s*comment "([^"]+)"', re.M)
_DROPPED = re.compile(r"counter packets (\d+) bytes \d+ drop")
_PATH_COMMENT = re.compile(r'^\s*comment "([^"]+>[^"]+)"', re.M)


def acl_effect(env: RegionRecord, zone: str, acl_ids: Collection[str]) -> dict[str, Any] | None:
    """The local cloud's reconciler has put one of `acl_ids` on the zone's subnet at the router
    (the chain's comment names the ACL; nft's JSON leaves chain comments out, its text has them)
    and the chain's rules have dropped a packet."""
    from harness.providers.local.cloud.acl import TABLE, chain_name

    try:
        listed = netns.ns_run(env.names.router, ["nft", "list", "table", "ip", TABLE])
    except HarnessError:
        return None
    mine = {chain_name(zone, egress) for egress in (True, False)}
    chains = {name: body for name, body in _CHAIN.findall(listed) if name in mine}
    acls = {name: (m.group(1) if (m := _ACL_COMMENT.search(body)) else None) for name, body in chains.items()}
    if len(acls) != len(mine) or not all(a in acl_ids for a in acls.values()):
        return None
    dropped = sum(int(n) for body in chains.values() for n in _DROPPED.findall(body))
    return {"router_acl": sorted({a for a in acls.values() if a}), "router_dropped_packets": dropped} if dropped else None


def peer_table(member: str) -> str:
    return f"{FAULT_TABLE_PREFIX}peer_{member.replace('-', '_')}"


def cut_peer_traffic(env: RegionRecord, member: str) -> dict[str, Any]:
    """Drop the member's peer traffic (TCP 2380, both ways, both directions of connection) where it
    crosses the router; its clients (2379) still reach it. Peers in its own zone do not cross the
    router: with one member per zone, that is every peer."""
    address = env.member(member).peer_url.split("//")[1].split(":")[0]
    port = env.member(member).peer_url.rsplit(":", 1)[1]
    table = peer_table(member)
    rules = [f"ip {side} {address} tcp {p} {port} counter drop" for side in ("saddr", "daddr") for p in ("sport", "dport")]
    script = (f"add table inet {table}\nflush table inet {table}\n"
              f"add chain inet {table} forward {{ type filter hook forward priority -10; policy accept; }}\n"
              + "".join(f"add rule inet {table} forward {r}\n" for r in rules))
    netns.nft(env.names.router, script, env.config.timeouts.command)
    return {"table": table, "address": address}


def peer_cut_effect(env: RegionRecord, member: str, data: dict[str, Any]) -> dict[str, Any] | None:
    table = data.get("table") or peer_table(member)
    dropped = dropped_packets(env.names.router, table)
    return {"router_dropped_packets": dropped, "table": table} if dropped else None


def restore_peer_traffic(env: RegionRecord, member: str, data: dict[str, Any]) -> None:
    netns.nft(env.names.router, remove_table(data.get("table") or peer_table(member)), env.config.timeouts.command)


def link_table(run_id: str) -> str:
    return f"{FAULT_TABLE_PREFIX}link_{re.sub(r'[^0-9a-zA-Z]', '_', run_id)}"


def link_rules(table: str, paths: Sequence[tuple[str, str, str]], impairment: LinkImpairment) -> str:
    """One chain per ordered path (source subnet, destination subnet, its name) in the router's
    forward hook, before the traffic counters; its counters are the fault's evidence, per path."""
    i = impairment
    if i.loss_percent is not None:  # nftables' random numbers, in hundredths of a percent
        what = f"numgen random mod 10000 < {round(i.loss_percent * 100)} "
    elif i.larger_than is not None:
        what = f"ip length > {i.larger_than} "
    elif i.rate_kbytes is not None:
        what = f"limit rate over {i.rate_kbytes} kbytes/second "
    else:
        what = ""
    ports = PORTS[i.port]
    script = [f"add table inet {table}", f"flush table inet {table}",
              f"add chain inet {table} forward {{ type filter hook forward priority -10; policy accept; }}"]
    for k, (src, dst, name) in enumerate(paths):
        chain = f"p{k}"
        script += [f"add chain inet {table} {chain} {{ comment \"{name}\"; }}",
                   f"add rule inet {table} forward ip saddr {src} ip daddr {dst} jump {chain}"]
        matches = [f"tcp {side} {port} " for port in ports for side in ("sport", "dport")] or [""]
        script += [f"add rule inet {table} {chain} {m}{what}counter drop" for m in matches]
    return "\n".join(script) + "\n"


def impair_links(env: RegionRecord, zones: Sequence[tuple[str, str]], impairment: LinkImpairment,
                 run_id: str) -> dict[str, Any]:
    if impairment.delay_ms is not None:
        return delay_links(env, zones, impairment.delay_ms, impairment.jitter_ms, run_id)
    table = link_table(run_id)
    paths = [(env.names.subnet(a), env.names.subnet(b), f"{a}>{b}") for a, b in zones]
    netns.nft(env.names.router, link_rules(table, paths, impairment), env.config.timeouts.command)
    return {"table": table, "paths": [f"{a}>{b}" for a, b in zones]}


def links_effect(env: RegionRecord, data: dict[str, Any]) -> dict[str, Any] | None:
    """In effect once the router dropped a packet on every path (nft's text names each chain's
    path in its comment; its JSON leaves chain comments out), or for a delay, once the delay line
    has handed packets back."""
    if data.get("delay_dev"):
        return delay_effect(env, data)
    try:
        listed = netns.ns_run(env.names.router, ["nft", "list", "table", "inet", data["table"]])
    except HarnessError:
        return None
    dropped = {}
    for _, body in _CHAIN.findall(listed):
        path = _PATH_COMMENT.search(body)
        if path:
            dropped[path.group(1)] = sum(int(n) for n in _DROPPED.findall(body))
    return {"router_dropped_packets": dropped} if dropped and all(dropped.values()) else None


def restore_links(env: RegionRecord, data: dict[str, Any]) -> None:
    """Whatever the fault made, from its run id alone if need be (a crash before it said more)."""
    netns.nft(env.names.router, remove_table(data.get("table") or link_table(data["run_id"])), env.config.timeouts.command)
    remove_delay_line(env, *delay_names(data["run_id"]))


def delay_names(run_id: str) -> tuple[str, int]:
    """The delay line's TUN device and its routing table (also its rules' preference), from the run id."""
    digest = hashlib.sha1(run_id.encode()).hexdigest()
    return f"{DELAY_DEV_PREFIX}{digest[:8]}", DELAY_TABLES[0] + int(digest[8:16], 16) % (DELAY_TABLES[1] - DELAY_TABLES[0])


def delay_links(env: RegionRecord, zones: Sequence[tuple[str, str]], delay_ms: float, jitter_ms: float,
                run_id: str) -> dict[str, Any]:
    """A delay line (harness/providers/local/host/delay_line.py) in the router, and policy routing that
    sends each path's packets through it: by the bridge they come in on, their source and
    destination subnets."""
    dev, table = delay_names(run_id)
    router, t = env.names.router, env.config.timeouts.command
    log = env.config.state_dir / env.spec.name / "logs" / f"delay-line-{dev}.log"
    ready = log.with_suffix(".ready")
    ready.unlink(missing_ok=True)
    popen, _ = spawn(f"delay line {dev}", ["ip", "netns", "exec", router, sys.executable, "-m",
                                           "harness.providers.local.host.delay_line", "--dev", dev, "--delay-ms", str(delay_ms),
                                           "--jitter-ms", str(jitter_ms), "--ready", str(ready)], log)
    wait_serving(lambda: None if ready.exists() else "its device is not up yet",
                 lambda: None if popen.poll() is None else f"it exited ({popen.returncode}); its log {log}:\n{log_tail(log)}",
                 f"the delay line {dev}", t, interval=0.02)
    ready.unlink(missing_ok=True)
    for dst in dict.fromkeys(b for _, b in zones):
        netns.run(["ip", "-n", router, "route", "replace", env.names.subnet(dst), "dev", dev, "table", str(table)], timeout=t)
    for a, b in zones:
        netns.run(["ip", "-n", router, "rule", "add", "pref", str(table), "iif", env.names.bridge(a), "from",
                   env.names.subnet(a), "to", env.names.subnet(b), "lookup", str(table)], timeout=t)
    return {"delay_dev": dev, "route_table": table, "paths": [f"{a}>{b}" for a, b in zones],
            "delay_ms": delay_ms, "jitter_ms": jitter_ms}


def delay_effect(env: RegionRecord, data: dict[str, Any]) -> dict[str, Any] | None:
    """The device's counters: packets the kernel routed into the line (its TX) and the line gave back (RX)."""
    try:
        link = json.loads(netns.run(["ip", "-n", env.names.router, "-s", "-j", "link", "show", "dev", data["delay_dev"]]))
    except (HarnessError, ValueError):
        return None
    stats = link[0].get("stats64", {}) if link else {}
    into, back = int(stats.get("tx", {}).get("packets", 0)), int(stats.get("rx", {}).get("packets", 0))
    return {"delay_line": data["delay_dev"], "packets_delayed": back} if into and back else None


def remove_delay_line(env: RegionRecord, dev: str, table: int) -> None:
    router, t = env.names.router, env.config.timeouts.command
    while True:  # one rule per path, all at this preference, deleted until none is left
        try:
            netns.run(["ip", "-n", router, "rule", "del", "pref", str(table)], timeout=t)
        except HarnessError:
            break
    netns.run(["ip", "-n", router, "route", "flush", "table", str(table)], check=False, timeout=t)
    _stop_delay_lines(router, f"--dev {dev} ")  # processes.cmdline joins the arguments with spaces


def _stop_delay_lines(router: str, marker: str) -> list[int]:
    """Stop the delay line processes whose command line holds `marker`; their devices go with them."""
    pids = [pid for pid in netns.netns_pids(router) if marker in cmdline(pid)]
    for pid in pids:
        signal_pid(pid, signal.SIGTERM)
    for pid in pids:
        gone = lambda: True if not cmdline(pid) or process_state(pid) in ("Z", "") else None  # noqa: E731
        if not first_within(gone, f"delay line {pid} to exit", 2.0, interval=0.02):
            signal_pid(pid, signal.SIGKILL)
    return pids


def restore_zone(env: RegionRecord, zone: str, data: dict[str, Any]) -> None:
    netns.nft(env.names.router, remove_table(data.get("table") or outage_table(zone)), env.config.timeouts.command)


def fail_node(env: RegionRecord, node: str, mode: str) -> dict[str, Any]:
    """Kill (SIGKILL), freeze (SIGSTOP) every process of the node, or take its link down."""
    if mode not in NODE_FAILURE_MODES:
        raise ConfigError(f"unknown node failure mode {mode!r}; accepted: {', '.join(NODE_FAILURE_MODES)}")
    ns = env.names.node_ns(node)
    member = env.member_on(node)
    data: dict[str, Any] = {"mode": mode, "member": member.name if member else None}
    if mode == "kill":
        if member is not None:
            members.kill_member(env, member.name)
        for pid in netns.netns_pids(ns, with_pods=True):
            signal_pid(pid, signal.SIGKILL)
        # A dead machine answers for none of its pods' addresses any more.
        netns.run(["ip", "-n", ns, "addr", "flush", "dev", "eth0", "secondary"], check=False,
                  timeout=env.config.timeouts.command)
    elif mode == "freeze":
        # Again until none is left running: a process forked between the listing and the signal
        # would otherwise run on in a frozen node.
        deadline = time.monotonic() + 1.0
        while True:
            running = [pid for pid in netns.netns_pids(ns, with_pods=True) if process_state(pid) not in FROZEN]
            if not running or time.monotonic() > deadline:
                break
            for pid in running:
                signal_pid(pid, signal.SIGSTOP)
            time.sleep(0.01)
    else:
        netns.run(["ip", "-n", ns, "link", "set", "eth0", "down"], timeout=env.config.timeouts.command)
    return data


def node_failure_effect(env: RegionRecord, node: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """Killed: no process of the node runs; frozen: each is stopped; link down: the link says so."""
    ns = env.names.node_ns(node)
    mode = data.get("mode", "kill")
    if mode == "link-down":
        link = netns.run(["ip", "-n", ns, "-o", "link", "show", "eth0"], check=False)
        return {"link": "down"} if "state DOWN" in link or ",UP" not in link else None
    states = {pid: process_state(pid) for pid in netns.netns_pids(ns, with_pods=True)}
    if mode == "freeze":
        return {"stopped_processes": len(states)} if all(s in FROZEN for s in states.values()) else None
    running = [pid for pid, s in states.items() if s not in ("", "Z", "X")]
    member = data.get("member")
    if running or (member and members.member_running(env, member)):
        return None
    return {"processes_left": 0, "member_gone": member}


def restore_node(env: RegionRecord, node: str, data: dict[str, Any]) -> None:
    ns = env.names.node_ns(node)
    mode = data.get("mode", "kill")
    if mode == "kill":
        # The node comes back: its member restarts with the data it had, its kubelet stand-in too.
        if data.get("member"):
            members.start_member(env, data["member"])
        restart_node_agents(env, node)
    elif mode == "freeze":
        for pid in netns.netns_pids(ns, with_pods=True):
            signal_pid(pid, signal.SIGCONT)
    else:
        _link_up(env, node)


def _link_up(env: RegionRecord, node: str) -> None:
    ns = env.names.node_ns(node)
    t = env.config.timeouts.command
    netns.run(["ip", "-n", ns, "link", "set", "eth0", "up"], timeout=t)
    # The default route went away with the link.
    netns.run(["ip", "-n", ns, "route", "replace", "default", "via", env.names.gateway(env.node(node).zone)], timeout=t)


def sweep(env: RegionRecord) -> list[str]:
    """After a crash: remove every fault effect, whether or not the ledger knew of it."""
    done: list[str] = []
    rules = netns.run(["ip", "-n", env.names.router, "rule", "show"], check=False)
    for pref in sorted({int(line.split(":")[0]) for line in rules.splitlines() if line.split(":")[0].isdigit()}):
        if DELAY_TABLES[0] <= pref < DELAY_TABLES[1]:
            remove_delay_line(env, "", pref)
            done.append(f"removed the delay line routing of table {pref}")
    for pid in _stop_delay_lines(env.names.router, "harness.providers.local.host.delay_line"):
        done.append(f"stopped delay line process {pid}")
    tables = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
    for line in tables.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].startswith(FAULT_TABLE_PREFIX):
            netns.nft(env.names.router, remove_table(parts[2]))
            done.append(f"removed nft table {parts[2]}")
    for node in env.nodes:
        ns = env.names.node_ns(node.name)
        for pid in netns.netns_pids(ns, with_pods=True):
            signal_pid(pid, signal.SIGCONT)
        link = netns.run(["ip", "-n", ns, "-o", "link", "show", "eth0"], check=False)
        if "state DOWN" in link or ",UP" not in link:
            _link_up(env, node.name)
            done.append(f"link up on {node.name}")
    for ballast in disks.ballasts(Path(env.state["data_dir"])):
        ballast.unlink(missing_ok=True)
        done.append(f"removed {ballast}")
    for m in env.members:
        if members.member_running(env, m.name) and not members.disk_serving(env, m.name):  # its powerloss-fs died under it
            members.kill_member(env, m.name)
            done.append(f"stopped {m.name}, whose disk (powerloss-fs) was gone")
        if not members.member_running(env, m.name):
            try:
                members.start_member(env, m.name)
                done.append(f"restarted {m.name}")
            except EnvironmentStateError as e:  # its volume was lost: only a restore brings it back
                done.append(f"left {m.name} down: {e}")
        elif any(a.startswith("GOFAIL_HTTP=") for a in env.state["members"][m.name]["args"]):
            try:
                for name in members.failpoints(env, m.name):
                    members.clear_failpoint(env, m.name, name)
                    done.append(f"cleared failpoint {name} of {m.name}")
            except HarnessError as e:
                done.append(f"could not clear the failpoints of {m.name}: {e}")
    for node in env.nodes:
        if restart_node_agents(env, node.name):
            done.append(f"restarted the node agents of {node.name}")
    return done
