"""Grey link faults on kind: iptables rules inside the node containers of the source zone, on
the packets they send (their own, OUTPUT, and their pods', FORWARD) to the destination zone's
nodes and to those nodes' pod CIDRs (kindnet's routes say which CIDR lives on which node). A
chain of the fault's own per node, so heal and sweep remove exactly it; its DROP rules count
what they dropped, the fault's evidence.

kind nodes carry iptables (kube-proxy needs it); the delay has no iptables form (it needs netem,
which a Docker host usually has but the harness does not use there): zone-link-delay is refused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from harness.errors import ConfigError
from harness.providers.base import PORTS, LinkImpairment

CHAIN_PREFIX = "HARNESS-"
HOOKS = ("OUTPUT", "FORWARD")
_ROUTE = re.compile(r"^(?P<cidr>\d+\.\d+\.\d+\.\d+/\d+) via (?P<via>\d+\.\d+\.\d+\.\d+)\b")


def chain(run_id: str) -> str:
    """The fault's chain, from its run id alone (iptables allows 28 characters)."""
    return CHAIN_PREFIX + hashlib.sha1(run_id.encode()).hexdigest()[:16]


def pod_cidrs(routes: str, addresses: Sequence[str]) -> list[str]:
    """The CIDRs `ip -o -4 route show` routes via one of `addresses` (kindnet: a node's pod CIDR)."""
    out = []
    for line in routes.splitlines():
        m = _ROUTE.match(line.strip())
        if m and m["via"] in addresses:
            out.append(m["cidr"])
    return out


def match(impairment: LinkImpairment) -> list[str]:
    """iptables match arguments for what the impairment drops (nothing extra: every packet)."""
    if impairment.delay_ms is not None:
        raise ConfigError("zone-link-delay cannot be applied on kind: iptables cannot hold packets; accepted there: "
                          "zone-link-cut, zone-link-loss, zone-link-mtu, zone-link-rate")
    args: list[str] = []
    if impairment.port != "all":
        args += ["-p", "tcp", "-m", "multiport", "--ports", ",".join(map(str, PORTS[impairment.port]))]
    if impairment.loss_percent is not None:
        args += ["-m", "statistic", "--mode", "random", "--probability", f"{impairment.loss_percent / 100:.4f}"]
    if impairment.larger_than is not None:
        args += ["-m", "length", "--length", f"{impairment.larger_than + 1}:65535"]
    if impairment.rate_kbytes is not None:
        args += ["-m", "hashlimit", "--hashlimit-above", f"{impairment.rate_kbytes}kb/s", "--hashlimit-mode",
                 "dstip", "--hashlimit-name", "harness"]
    return args


def apply_commands(name: str, destinations: dict[str, list[str]], impairment: LinkImpairment) -> list[list[str]]:
    """iptables argv (to run inside one node) for its chain: a DROP rule per destination zone and
    address or CIDR, each commented with the zone it is for (the effect counts per path)."""
    argv = [["iptables", "-N", name]]
    for zone, targets in sorted(destinations.items()):
        argv += [["iptables", "-A", name, "-d", t, *match(impairment), "-m", "comment", "--comment", f"to {zone}",
                  "-j", "DROP"] for t in targets]
    return argv + [["iptables", "-I", hook, "1", "-j", name] for hook in HOOKS]


def remove_commands(name: str) -> list[list[str]]:
    """Unhook, flush and delete the chain; each may fail when already gone (heal is idempotent)."""
    return [*(["iptables", "-D", hook, "-j", name] for hook in HOOKS), ["iptables", "-F", name],
            ["iptables", "-X", name]]


def dropped(listing: str) -> dict[str, int]:
    """Packets dropped per destination zone, from `iptables -L CHAIN -v -x -n`."""
    out: dict[str, int] = {}
    for line in listing.splitlines():
        parts = line.split()
        m = re.search(r"/\* to (\S+) \*/", line)
        if m and parts and parts[0].isdigit():
            out[m[1]] = out.get(m[1], 0) + int(parts[0])
    return out


def chains_in(rules: str) -> list[str]:
    """The harness's chains in `iptables -S` output (what a sweep removes)."""
    return [line.split()[1] for line in rules.splitlines() if line.startswith(f"-N {CHAIN_PREFIX}")]
