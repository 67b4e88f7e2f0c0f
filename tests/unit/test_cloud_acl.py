"""Network ACLs -> nftables: the local cloud's translation, rule by rule."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from harness.aws.nacl import DEFAULT_RULE, AclEntry, _zone_entries
from harness.errors import ConfigError
from harness.providers.local.cloud.acl import SubnetAcl, acl_ruleset, chain_rules, entry_rule, remove_ruleset

A, B, C = "10.77.1.0/24", "10.77.2.0/24", "10.77.3.0/24"
IMPLICIT = 'counter drop comment "implicit deny"'
# What describe_network_acls says of a VPC's default ACL: allow all, then AWS's own "*" deny.
DEFAULT_ACL = tuple(AclEntry(n, egress, action, "0.0.0.0/0")  # type: ignore[arg-type]
                    for egress in (False, True) for n, action in ((100, "allow"), (DEFAULT_RULE, "deny")))


def chains(subnet: SubnetAcl) -> tuple[list[str], list[str]]:
    return chain_rules(subnet, egress=True), chain_rules(subnet, egress=False)


def test_default_acl_allows_everything_then_denies_the_rest() -> None:
    out, into = chains(SubnetAcl("zone-a", A, "acl-1", DEFAULT_ACL))
    assert out == into == ['counter return comment "rule 100"', IMPLICIT]
    script = acl_ruleset([SubnetAcl("zone-a", A, "acl-1", DEFAULT_ACL), SubnetAcl("zone-b", B, "acl-1", DEFAULT_ACL)])
    # Leaving a subnet is judged by its egress rules, entering one by its ingress rules; traffic
    # inside a subnet is never judged. Every egress check comes before any ingress check.
    # The router's own packets (the seed's egress proxy) enter and leave a subnet from outside it.
    jumps = [line.strip() for line in script.splitlines() if "jump" in line]
    assert jumps == [f"ip saddr {A} ip daddr != {A} jump egress_zone_a", f"ip saddr {B} ip daddr != {B} jump egress_zone_b",
                     f"ip daddr {A} ip saddr != {A} jump ingress_zone_a", f"ip daddr {B} ip saddr != {B} jump ingress_zone_b",
                     f"ip daddr {A} jump ingress_zone_a", f"ip daddr {B} jump ingress_zone_b",
                     f"ip saddr {A} jump egress_zone_a", f"ip saddr {B} jump egress_zone_b"]
    assert script.startswith(remove_ruleset()) and "table ip cloud_acl {" in script  # one transaction replaces it
    assert "type filter hook forward priority filter; policy accept;" in script
    assert "type filter hook output priority filter; policy accept;" in script
    assert "type filter hook input priority filter; policy accept;" in script


def test_deny_all_acl_drops_everything_crossing_the_subnet_boundary() -> None:
    only_default = tuple(e for e in DEFAULT_ACL if e.rule_number == DEFAULT_RULE)
    for entries in ((), only_default):  # a new ACL: no entry but AWS's own "*" deny
        assert chains(SubnetAcl("zone-a", A, "acl-2", entries)) == ([IMPLICIT], [IMPLICIT])


def test_availability_zone_scope_denies_the_other_zones_then_keeps_the_original_rules() -> None:
    # The entries harness.aws.nacl writes for scope availability-zone (AWS FIS's clone).
    original = {"NetworkAclId": "acl-1", "Entries": [
        {"RuleNumber": 100, "Egress": e, "RuleAction": "allow", "CidrBlock": "0.0.0.0/0", "Protocol": "-1"}
        for e in (False, True)]}
    entries = _zone_entries([B, C], original, 20, "subnet-a")
    out, into = chains(SubnetAcl("zone-a", A, "acl-fis", entries))
    assert out == [f'ip daddr {B} counter drop comment "rule 100"', f'ip daddr {C} counter drop comment "rule 110"',
                   'counter return comment "rule 120"', IMPLICIT]
    assert into == [f'ip saddr {B} counter drop comment "rule 100"', f'ip saddr {C} counter drop comment "rule 110"',
                    'counter return comment "rule 120"', IMPLICIT]


def test_rules_are_judged_by_ascending_rule_number_first_match_wins() -> None:
    entries = (AclEntry(200, True, "allow", "0.0.0.0/0"), AclEntry(50, True, "deny", "10.77.2.7/32"),
               AclEntry(100, True, "deny", B, "6", 2379, 2380))
    out, _ = chains(SubnetAcl("zone-a", A, "acl-3", entries))
    assert out == ['ip daddr 10.77.2.7/32 counter drop comment "rule 50"',
                   f'ip daddr {B} tcp dport 2379-2380 counter drop comment "rule 100"',
                   'counter return comment "rule 200"', IMPLICIT]


@pytest.mark.parametrize("entry, rule", [
    (AclEntry(100, False, "allow", "0.0.0.0/0", "6", 80, 443), "tcp dport 80-443 counter return"),
    (AclEntry(100, False, "deny", "0.0.0.0/0", "17", 53, 53), "udp dport 53 counter drop"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "6"), "ip protocol tcp counter return"),
    (AclEntry(100, True, "allow", "10.0.0.0/8", "tcp", 0, 65535), "ip daddr 10.0.0.0/8 tcp dport 0-65535 counter return"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "-1", 80, 80), "counter return"),  # ports mean nothing for "all"
    (AclEntry(100, False, "deny", "0.0.0.0/0", "1", icmp_type=-1, icmp_code=-1), "ip protocol icmp counter drop"),
    (AclEntry(100, False, "deny", "10.1.2.3/16", "1", icmp_type=8, icmp_code=0),
     "ip saddr 10.1.0.0/16 ip protocol icmp icmp type 8 icmp code 0 counter drop"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "47"), "ip protocol 47 counter return"),
])
def test_protocols_and_port_ranges(entry: AclEntry, rule: str) -> None:
    assert entry_rule(entry) == f'{rule} comment "rule 100"'


def test_ipv6_entries_never_match_the_regions_ipv4_traffic() -> None:
    assert entry_rule(AclEntry(100, False, "deny", "::/0")) is None


def test_a_subnet_without_an_acl_is_not_filtered() -> None:
    script = acl_ruleset([SubnetAcl("zone-a", A, None), SubnetAcl("zone-b", B, "acl-1", DEFAULT_ACL)])
    assert "zone_a" not in script and "jump egress_zone_b" in script


@pytest.mark.parametrize("entry, message", [
    (AclEntry(100, False, "allow", "0.0.0.0/0", "6", 443, 80), "port range 443-80 is not within 0-65535, low to high"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "17", 0, 70000), "port range 0-70000"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "sctp"), "protocol 'sctp' is not -1, a name"),
    (AclEntry(100, False, "allow", "0.0.0.0/0", "300"), "protocol '300'"),
    (AclEntry(100, False, "allow", "10.0.0.0/33"), "'10.0.0.0/33' is not a CIDR block"),
    (AclEntry(100, False, "block", "0.0.0.0/0"), "action 'block' is not allow or deny"),  # type: ignore[arg-type]
])
def test_bad_entries_are_clear_errors_naming_the_rule(entry: AclEntry, message: str) -> None:
    with pytest.raises(ConfigError, match="rule 100: .*" + message.replace("(", r"\(")):
        acl_ruleset([SubnetAcl("zone-a", A, "acl-1", (entry,))])


def test_bad_subnets_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="zone zone-a: '10.77.1.1/24' is not an IPv4 subnet CIDR"):
        acl_ruleset([SubnetAcl("zone-a", "10.77.1.1/24", "acl-1")])
    with pytest.raises(ConfigError, match="one ACL per zone"):
        acl_ruleset([SubnetAcl("zone-a", A, "acl-1"), SubnetAcl("zone-a", B, "acl-1")])
    with pytest.raises(ConfigError, match="network ACL id"):
        acl_ruleset([SubnetAcl("zone-a", A, 'acl-1" drop')])


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("nft") is None, reason="nft -c needs root and nft")
def test_nft_accepts_the_translation() -> None:
    entries = (*DEFAULT_ACL, AclEntry(90, True, "deny", B, "6", 2379, 2380), AclEntry(80, False, "deny", C, "1", None,
               None, 3, 1), AclEntry(70, False, "deny", "::/0"), AclEntry(60, True, "allow", "0.0.0.0/0", "17", 53, 53))
    script = acl_ruleset([SubnetAcl("zone-a", A, "acl-1", entries), SubnetAcl("zone-b", B, "acl-2", ()),
                          SubnetAcl("zone-c", C, None)])
    check = subprocess.run(["nft", "-c", "-f", "-"], check=False, input=script, capture_output=True, text=True, timeout=10)
    assert check.returncode == 0, check.stderr
