"""Network ACLs as nftables rules in the local region's router: a pure translation.

AWS network ACL semantics, reproduced where the local region's traffic crosses zones (the router):
stateless; per direction, rules by ascending rule number, the first match wins, and anything no
rule matches is denied. Egress entries judge packets leaving a subnet (source in the subnet, the
entry's CIDR is the destination), ingress entries packets entering it (destination in the subnet,
the entry's CIDR is the source). A packet between two zones must pass the egress rules of its
source subnet and the ingress rules of its destination subnet. Traffic inside a subnet never
crosses the router, as in AWS, where NACLs do not filter it either.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.aws.nacl import DEFAULT_RULE, AclEntry
from harness.errors import ConfigError

# Not a harness_* table: `harness heal` sweeps those, and this one is the cloud's, not a fault's.
TABLE = "cloud_acl"
PROTOCOLS = {"-1": None, "all": None, "tcp": 6, "udp": 17, "icmp": 1}
_L4 = {6: "tcp", 17: "udp"}
_ACL_ID = re.compile(r"acl-[0-9a-zA-Z]+")  # it goes into an nft comment: nothing that could end it


@dataclass(frozen=True)
class SubnetAcl:
    """A zone's subnet and the network ACL associated with it now (None: no association known)."""

    zone: str
    cidr: str
    acl_id: str | None
    entries: tuple[AclEntry, ...] = ()


def chain_name(zone: str, egress: bool) -> str:
    # Zone names are alphanumeric with dashes (RegionSpec): underscores cannot collide.
    return f"{'egress' if egress else 'ingress'}_{zone.replace('-', '_')}"


def _protocol(entry: AclEntry) -> int | None:
    raw = str(entry.protocol).strip().lower()
    if raw in PROTOCOLS:
        return PROTOCOLS[raw]
    try:
        number = int(raw)
    except ValueError:
        number = -2
    if not 0 <= number <= 255:
        raise ConfigError(f"network ACL {entry.words()}: protocol {entry.protocol!r} is not -1, a name "
                          f"({', '.join(p for p in PROTOCOLS if p != '-1')}) or a number 0-255")
    return number


def _ports(entry: AclEntry) -> str | None:
    if entry.port_from is None and entry.port_to is None:
        return None
    low = entry.port_from if entry.port_from is not None else entry.port_to
    high = entry.port_to if entry.port_to is not None else entry.port_from
    assert low is not None and high is not None
    if not (0 <= low <= high <= 65535):
        raise ConfigError(f"network ACL {entry.words()}: port range {low}-{high} is not within 0-65535, low to high")
    return str(low) if low == high else f"{low}-{high}"


def entry_rule(entry: AclEntry) -> str | None:
    """The nft rule for one entry inside its zone's chain; None for what never matches IPv4 traffic
    (an IPv6 CIDR). Allow returns to the forward chain (the other subnet's rules still judge the
    packet); deny drops. Ports, like AWS's, are destination ports."""
    if entry.action not in ("allow", "deny"):
        raise ConfigError(f"network ACL {entry.words()}: action {entry.action!r} is not allow or deny")
    try:
        net = ipaddress.ip_network(entry.cidr, strict=False)
    except ValueError:
        raise ConfigError(f"network ACL {entry.words()}: {entry.cidr!r} is not a CIDR block") from None
    if net.version == 6:
        return None
    parts = [] if net.prefixlen == 0 else [f"ip {'daddr' if entry.egress else 'saddr'} {net}"]
    protocol = _protocol(entry)
    if protocol in _L4:
        ports = _ports(entry)
        parts.append(f"{_L4[protocol]} dport {ports}" if ports else f"ip protocol {_L4[protocol]}")
    elif protocol == 1:
        parts.append("ip protocol icmp")
        if entry.icmp_type is not None and entry.icmp_type != -1:
            parts.append(f"icmp type {entry.icmp_type}")
            if entry.icmp_code is not None and entry.icmp_code != -1:
                parts.append(f"icmp code {entry.icmp_code}")
    elif protocol is not None:
        parts.append(f"ip protocol {protocol}")
    verdict = "return" if entry.action == "allow" else "drop"
    return " ".join([*parts, "counter", verdict, "comment", f'"rule {entry.rule_number}"'])


def chain_rules(subnet: SubnetAcl, egress: bool) -> list[str]:
    """The zone's rules for one direction, in AWS's order, ending in the implicit deny."""
    entries = sorted((e for e in subnet.entries if e.egress == egress and e.rule_number != DEFAULT_RULE),
                     key=lambda e: e.rule_number)
    rules = [r for r in map(entry_rule, entries) if r is not None]
    return [*rules, 'counter drop comment "implicit deny"']


def _subnet(subnet: SubnetAcl) -> str:
    try:
        return str(ipaddress.IPv4Network(subnet.cidr))
    except ValueError:
        raise ConfigError(f"zone {subnet.zone}: {subnet.cidr!r} is not an IPv4 subnet CIDR") from None


def acl_ruleset(subnets: Sequence[SubnetAcl], table: str = TABLE) -> str:
    """An nft script that replaces `table` with the subnets' ACLs, in one transaction.

    A subnet with no known ACL (acl_id None) is left unfiltered. Raises ConfigError naming the
    entry that cannot be translated (then nothing should be applied).
    """
    zones = [s.zone for s in subnets]
    if len(set(zones)) != len(zones):
        raise ConfigError(f"one ACL per zone, got zones {zones}")
    jumps_out: list[str] = []
    jumps_in: list[str] = []
    chains: list[str] = []
    for s in subnets:
        if s.acl_id is None:
            continue
        cidr = _subnet(s)
        if not _ACL_ID.fullmatch(s.acl_id):
            raise ConfigError(f"zone {s.zone}: {s.acl_id!r} is not a network ACL id (acl-<hex>)")
        jumps_out.append(f"ip saddr {cidr} ip daddr != {cidr} jump {chain_name(s.zone, True)}")
        jumps_in.append(f"ip daddr {cidr} ip saddr != {cidr} jump {chain_name(s.zone, False)}")
        for egress in (True, False):
            body = "".join(f"\t\t{rule}\n" for rule in chain_rules(s, egress))
            chains.append(f'\tchain {chain_name(s.zone, egress)} {{\n\t\tcomment "{s.acl_id}"\n{body}\t}}\n')
    # Every egress check before any ingress check: a packet leaves its subnet, then enters the other.
    forward = "".join(f"\t\t{j}\n" for j in jumps_out + jumps_in)
    # The router's own traffic comes from outside every subnet too (the seed's API server reaches
    # the kubelets through its egress proxy there): entering a subnet is judged by its ingress
    # rules, the answers leaving it by its egress rules, whatever router address they use.
    into = "".join(f"\t\tip daddr {_subnet(s)} jump {chain_name(s.zone, False)}\n" for s in subnets if s.acl_id)
    out_of = "".join(f"\t\tip saddr {_subnet(s)} jump {chain_name(s.zone, True)}\n" for s in subnets if s.acl_id)
    return (f"{remove_ruleset(table)}table ip {table} {{\n"
            f"\tchain forward {{\n\t\ttype filter hook forward priority filter; policy accept;\n{forward}\t}}\n"
            f"\tchain output {{\n\t\ttype filter hook output priority filter; policy accept;\n{into}\t}}\n"
            f"\tchain input {{\n\t\ttype filter hook input priority filter; policy accept;\n{out_of}\t}}\n"
            f"{''.join(chains)}}}\n")


def remove_ruleset(table: str = TABLE) -> str:
    # "add" first, so that "delete" never fails on a table that is already gone.
    return f"add table ip {table}\ndelete table ip {table}\n"
