"""The local region's uplink: a veth pair from the harness's own network namespace into the region's router.

What serves the region from outside every zone listens on its harness-side end: the seed's
Kubernetes control plane (harness/providers/local/seed/kubernetes.py) and the local cloud's AWS API
(harness/providers/local/cloud/account.py, whose S3 holds etcd backups). Each zone reaches them through
the router, as a zone reaches a seed or a cloud service outside the VPC, so whatever cuts a zone
off at the router cuts it off from them too; the harness itself reaches them directly.

One uplink per region, made by whichever component asks first and recorded in the region state
(`uplink`: its /30); `down` deletes the router namespace, and the veth pair with it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness import netns
from harness.errors import EnvironmentStateError
from harness.locks import held

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

# /30 per region: .1 in the harness's namespace (the seed's API server, the cloud's API), .2 in the router.
UPLINK_POOL = ipaddress.ip_network("10.76.0.0/16")
ROUTER_UPLINK = "uplink"
# Masquerades the zones' traffic into the uplink. (Not a harness_* table: `harness heal` must not sweep it away.)
UPLINK_TABLE = "region_uplink"


def uplink_address(state: Mapping[str, Any]) -> str | None:
    """The harness-side address of the uplink the region state records (None: none recorded)."""
    recorded = state.get("uplink")
    return str(ipaddress.IPv4Network(recorded).network_address + 1) if recorded else None


def uplink_up(env: RegionRecord) -> str | None:
    """The harness-side address of the region's uplink if it is recorded and its veth carries it."""
    address = uplink_address(env.refresh())
    if address is None:
        return None
    shown = netns.run(["ip", "-o", "-4", "addr", "show", "dev", env.names.uplink], check=False,
                      timeout=env.config.timeouts.command)
    return address if f" {address}/30 " in shown else None


def ensure_uplink(env: RegionRecord) -> str:
    """The region's uplink, made if it is not there yet; returns its harness-side address (the .1).

    If making it fails, what was made is removed again and the state no longer records it."""
    env.config.state_dir.mkdir(parents=True, exist_ok=True)
    # Claiming a /30 is serialised on the state directory itself (no lock file to leave behind).
    with held(env.config.state_dir, "the seeds' uplink networks"):
        address = uplink_up(env)
        if address is not None:
            return address
        # Recorded but not there (a half-made one): start again.
        netns.run(["ip", "link", "del", env.names.uplink], check=False, timeout=env.config.timeouts.command)
        net = _claim_uplink()
        # Recorded before it exists; `down` deletes the router, and the veth pair with it.
        env.update(lambda st: st.update(uplink=str(net)))
        try:
            return _add_uplink(env, net)
        except BaseException:
            remove_uplink(env)
            raise


def remove_uplink(env: RegionRecord) -> None:
    """Delete the uplink's veth pair (its router end goes with it) and forget it in the state."""
    netns.run(["ip", "link", "del", env.names.uplink], check=False, timeout=env.config.timeouts.command)
    env.update(lambda st: st.pop("uplink", None))


def _claim_uplink() -> ipaddress.IPv4Network:
    """The first /30 of the pool that no interface here uses (regions share this namespace)."""
    used = netns.run(["ip", "-o", "-4", "addr", "show"], check=False)
    for net in UPLINK_POOL.subnets(new_prefix=30):
        if f" {net.network_address + 1}/" not in used and f" {net.network_address + 2}/" not in used:
            return net  # type: ignore[return-value]
    raise EnvironmentStateError(f"every /30 of {UPLINK_POOL} is in use by other regions; take some down")


def _add_uplink(env: RegionRecord, net: ipaddress.IPv4Network) -> str:
    n, t = env.names, env.config.timeouts.command
    harness_ip, router_ip = net.network_address + 1, net.network_address + 2
    netns.run(["ip", "link", "add", n.uplink, "type", "veth", "peer", "name", ROUTER_UPLINK, "netns", n.router], timeout=t)
    netns.run(["ip", "addr", "add", f"{harness_ip}/30", "dev", n.uplink], timeout=t)
    netns.run(["ip", "link", "set", n.uplink, "up"], timeout=t)
    netns.run(["ip", "-n", n.router, "addr", "add", f"{router_ip}/30", "dev", ROUTER_UPLINK], timeout=t)
    netns.run(["ip", "-n", n.router, "link", "set", ROUTER_UPLINK, "up"], timeout=t)
    # Zones reach the harness side as the router: no route back into the region is needed out
    # here, and regions with the same zone subnets can run side by side.
    netns.nft(n.router, f"""add table ip {UPLINK_TABLE}
flush table ip {UPLINK_TABLE}
add chain ip {UPLINK_TABLE} post {{ type nat hook postrouting priority 100; }}
add rule ip {UPLINK_TABLE} post oifname "{ROUTER_UPLINK}" masquerade
""", t)
    return str(harness_ip)
