"""Zone outage by network ACL swap, against moto's EC2 API over HTTP with IAM enforced."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.aws import nacl
from harness.aws.nacl import AclEntry, ZoneOutagePlan, apply_zone_outage, describe, heal_zone_outage, plan_zone_outage
from harness.errors import ConfigError, FaultError

from aws_support import Aws, Keys, World, acl_ids, associations, deny, policy, unique


class Crash(BaseException):
    """Stands for the process dying (kill -9) right after a ledger write: no rollback runs."""


@pytest.fixture
def ec2(aws: Aws, operator: Keys) -> Any:
    return aws.client("ec2", operator)


def harness_acls(ec2: Any, vpc_id: str, run_id: str) -> list[dict[str, Any]]:
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [vpc_id]},
                                              {"Name": "tag:ha-harness/run", "Values": [run_id]}])["NetworkAcls"]
    return acls


def test_plan_targets_the_opted_in_subnets_of_the_zone_and_says_why_others_are_skipped(ec2: Any, world: World) -> None:
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")

    assert {t.subnet_id: t.network_acl_id for t in plan.targets} == {
        world.subnets["a1"]: world.custom_acl, world.subnets["a2"]: world.default_acl}
    now = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["NetworkAcls"]
    live = {a["SubnetId"]: a["NetworkAclAssociationId"] for acl in now for a in acl["Associations"]}
    assert all(t.association_id == live[t.subnet_id] for t in plan.targets)
    assert [(s.subnet_id, s.reason) for s in plan.skipped] == [
        (world.subnets["a3"], "not opted in: no tag ha-harness/chaos=allowed")]
    assert plan.denied_cidrs == () and all(t.entries == () for t in plan.targets)
    assert ZoneOutagePlan.from_dict(plan.to_dict()) == plan

    listed = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a", opted_in=[world.subnets["a3"]])
    assert {t.subnet_id for t in listed.targets} == set(world.zone_subnets("a1", "a2", "a3"))

    zone_id = ec2.describe_subnets(SubnetIds=[world.subnets["a1"]])["Subnets"][0]["AvailabilityZoneId"]
    assert plan_zone_outage(ec2, world.vpc_id, zone_id) == plan  # a zone id names the same zone

    named = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a", subnet_filters={"Name": ["world-a2", "world-a3"]})
    assert [t.subnet_id for t in named.targets] == [world.subnets["a2"]]
    assert "does not match the subnet filter Name=world-a2|world-a3" in {s.reason for s in named.skipped}


def test_plan_refuses_an_unknown_zone_or_scope(ec2: Any, world: World) -> None:
    with pytest.raises(ConfigError, match=r"no subnet of .* is in zone 'eu-west-1z'; its subnets are in eu-west-1a, "):
        plan_zone_outage(ec2, world.vpc_id, "eu-west-1z")
    with pytest.raises(ConfigError, match="unknown zone outage scope 'everything'"):
        plan_zone_outage(ec2, world.vpc_id, "eu-west-1a", scope="everything")  # type: ignore[arg-type]


def test_dry_run_describes_the_plan_and_changes_nothing(aws: Aws, ec2: Any, world: World) -> None:
    admin = aws.client("ec2")
    before = admin.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["NetworkAcls"]

    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a", scope="availability-zone")
    text = describe(plan)

    assert admin.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["NetworkAcls"] == before
    for t in plan.targets:
        assert f"{t.subnet_id} world-{'a1' if t.network_acl_id == world.custom_acl else 'a2'}" in text
        assert f"network ACL {t.network_acl_id} (association {t.association_id}) -> a new network ACL holding" in text
    assert f"skipped {world.subnets['a3']}: not opted in" in text
    assert "(10.0.2.0/24, 10.0.3.0/24)" in text
    assert "    inbound rule 100: deny all traffic from 10.0.2.0/24\n    inbound rule 110: deny all traffic from 10.0.3.0/24\n" \
           "    inbound rule 120: allow all traffic from 0.0.0.0/0\n" in text
    assert "    outbound rule 120: allow all traffic to 0.0.0.0/0\n" in text
    assert "2 network ACL(s) would be created" in text
    assert text.endswith("Dry run: nothing was changed.")


def test_scope_all_moves_exactly_the_opted_in_subnets_of_the_zone_onto_deny_all_acls(ec2: Any, world: World) -> None:
    run_id = unique("all")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")
    ledger: list[dict[str, Any]] = []

    def record(data: dict[str, Any]) -> None:
        # The ledger is written before each change: the subnet about to move has not moved yet.
        pending = data.get("pending", {})
        if "swap" in pending:
            assert associations(ec2, world.vpc_id)[pending["swap"]] == pending["from"]
        ledger.append(data)

    data = apply_zone_outage(ec2, plan, run_id, record)

    assert ledger[0]["state"] == "planned" and ledger[0]["plan"] == plan.to_dict() and not ledger[0]["acls"]
    assert ledger[-1] == data and data["state"] == "applied"
    assert json.loads(json.dumps(data)) == data  # JSON-able, for the heal ledger
    after = associations(ec2, world.vpc_id)
    moved = {s for s in after if after[s] != before[s]}
    assert moved == set(world.zone_subnets("a1", "a2"))
    created = harness_acls(ec2, world.vpc_id, run_id)
    assert {a["NetworkAclId"] for a in created} == {after[s] for s in moved} == set(data["acls"].values())
    for acl in created:
        tags = {t["Key"]: t["Value"] for t in acl["Tags"]}
        subnet = tags["ha-harness/subnet"]
        assert [a["SubnetId"] for a in acl["Associations"]] == [subnet]
        assert tags["ha-harness/fault"] == "zone-outage" and tags["ha-harness/original-acl"] == before[subnet]
        assert tags["Name"] == f"ha-harness-zone-outage-{run_id}-{subnet}"
        assert [e for e in acl["Entries"] if e["RuleAction"] == "allow"] == []

    said = heal_zone_outage(ec2, data)

    assert associations(ec2, world.vpc_id) == before
    assert acl_ids(ec2, world.vpc_id) == {world.default_acl, world.custom_acl}
    assert f"{world.subnets['a1']}: network ACL {data['acls'][world.subnets['a1']]} -> {world.custom_acl} (restored)" in said
    assert f"deleted network ACL {data['acls'][world.subnets['a2']]}" in said
    assert heal_zone_outage(ec2, data) == [
        f"zone outage of run {run_id}: nothing to heal (no network ACL tagged ha-harness/run={run_id})"]


def test_scope_availability_zone_denies_only_the_other_zones_subnets(ec2: Any, world: World) -> None:
    run_id = unique("az")
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1b", scope="availability-zone")
    others = [world.cidrs[n] for n in ("a1", "a2", "a3", "c")]  # every subnet outside zone b, opted in or not

    data = apply_zone_outage(ec2, plan, run_id)

    assert plan.denied_cidrs == tuple(others)
    (acl,) = harness_acls(ec2, world.vpc_id, run_id)
    for egress in (False, True):
        entries = sorted((e["RuleNumber"], e["RuleAction"], e["CidrBlock"]) for e in acl["Entries"] if e["Egress"] == egress)
        # then the default ACL's own rule, allow all: the zone still reaches itself and the internet
        assert entries == [(100, "deny", others[0]), (110, "deny", others[1]), (120, "deny", others[2]),
                           (130, "deny", others[3]), (140, "allow", "0.0.0.0/0")]
    assert [a["SubnetId"] for a in acl["Associations"]] == [world.subnets["b"]]

    heal_zone_outage(ec2, data)
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_scope_availability_zone_keeps_what_the_original_acl_denied(aws: Aws, ec2: Any, world: World) -> None:
    """Like FIS's clone: a rule of the subnet's own ACL (no SSH from anywhere) still holds during the outage."""
    aws.client("ec2").create_network_acl_entry(
        NetworkAclId=world.custom_acl, RuleNumber=50, Protocol="6", RuleAction="deny", Egress=False,
        CidrBlock="0.0.0.0/0", PortRange={"From": 22, "To": 22})
    run_id = unique("keep")
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a", scope="availability-zone")

    data = apply_zone_outage(ec2, plan, run_id)

    acl = next(a for a in harness_acls(ec2, world.vpc_id, run_id)
               if a["Associations"][0]["SubnetId"] == world.subnets["a1"])
    inbound = sorted((e["RuleNumber"], e["Protocol"], e["RuleAction"], e["CidrBlock"], e.get("PortRange"))
                     for e in acl["Entries"] if not e["Egress"])
    assert inbound == [(100, "-1", "deny", world.cidrs["b"], None), (110, "-1", "deny", world.cidrs["c"], None),
                       (120, "6", "deny", "0.0.0.0/0", {"From": 22, "To": 22}), (130, "-1", "allow", "0.0.0.0/0", None)]
    assert "inbound rule 120: deny protocol 6 ports 22-22 from 0.0.0.0/0" in describe(plan)
    heal_zone_outage(ec2, data)
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_availability_zone_scope_refuses_more_entries_than_an_acl_holds(ec2: Any, world: World) -> None:
    with pytest.raises(FaultError, match=r"needs 5 inbound entries \(4 other-zone subnet CIDRs and 1 rules of its "
                                         r"network ACL acl-\w+\), more than the 4 a network ACL holds"):
        plan_zone_outage(ec2, world.vpc_id, "eu-west-1b", scope="availability-zone", max_entries=4)


def test_applying_the_same_plan_twice_creates_one_acl_per_subnet(ec2: Any, world: World) -> None:
    run_id = unique("twice")
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")

    first = apply_zone_outage(ec2, plan, run_id)
    second = apply_zone_outage(ec2, plan, run_id)

    assert second["acls"] == first["acls"] and second["swapped"] == first["swapped"]
    assert len(harness_acls(ec2, world.vpc_id, run_id)) == 2
    heal_zone_outage(ec2, second)
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_a_subnet_already_under_an_outage_is_skipped_by_a_new_plan(ec2: Any, world: World) -> None:
    run_id = unique("busy")
    data = apply_zone_outage(ec2, plan_zone_outage(ec2, world.vpc_id, "eu-west-1c"), run_id)

    again = plan_zone_outage(ec2, world.vpc_id, "eu-west-1c")

    assert again.targets == ()
    assert again.skipped[0].reason.startswith(f"already under a zone outage of run {run_id}")
    with pytest.raises(FaultError, match="no subnet to move .* nothing was changed"):
        apply_zone_outage(ec2, again, unique("second"))
    heal_zone_outage(ec2, data)


def test_a_stale_plan_is_refused_before_anything_changes(aws: Aws, ec2: Any, world: World) -> None:
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")
    admin = aws.client("ec2")
    moved = next(t for t in plan.targets if t.subnet_id == world.subnets["a2"])
    admin.replace_network_acl_association(AssociationId=moved.association_id, NetworkAclId=world.custom_acl)
    before = associations(ec2, world.vpc_id)
    run_id = unique("stale")

    with pytest.raises(FaultError, match=rf"plan is stale: {world.subnets['a2']} is now on network ACL "
                                         rf"{world.custom_acl}.*; nothing was changed$"):
        apply_zone_outage(ec2, plan, run_id)

    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []


# ------------------------------------------------------------------ heal after a crash


@pytest.mark.parametrize("crash_at", ["planned", "acl-created", "first-swapped", "applied"])
@pytest.mark.parametrize("heal_from", ["last-record", "run-id"])
def test_heal_after_a_crash_from_the_ledger_or_the_run_id_alone(ec2: Any, world: World, crash_at: str,
                                                                 heal_from: str) -> None:
    run_id = unique("crash")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")
    ledger: list[dict[str, Any]] = []

    def record(data: dict[str, Any]) -> None:
        ledger.append(data)
        reached = {"planned": data["state"] == "planned",
                   "acl-created": len(data["acls"]) == 1 and "pending" not in data,
                   "first-swapped": len(data["swapped"]) == 1 and "pending" not in data,
                   "applied": data["state"] == "applied"}[crash_at]
        if reached:
            raise Crash(crash_at)

    with pytest.raises(Crash):
        apply_zone_outage(ec2, plan, run_id, record)

    last = ledger[-1]
    if crash_at == "first-swapped":
        assert associations(ec2, world.vpc_id) != before  # a real half-done outage is left behind
    said = heal_zone_outage(ec2, last if heal_from == "last-record" else run_id)

    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []
    assert acl_ids(ec2, world.vpc_id) == {world.default_acl, world.custom_acl}
    assert said
    assert heal_zone_outage(ec2, run_id)[0].endswith("nothing to heal (no network ACL tagged "
                                                      f"ha-harness/run={run_id})")


def test_heal_from_a_record_written_before_the_acl_was_created_finds_it_by_tags(ec2: Any, world: World) -> None:
    """The crash falls between CreateNetworkAcl and the record naming the new ACL."""
    run_id = unique("between")
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1b")
    ledger: list[dict[str, Any]] = []

    def record(data: dict[str, Any]) -> None:
        if data["acls"]:
            raise Crash("ACL created, not yet recorded")
        ledger.append(data)

    with pytest.raises(Crash):
        apply_zone_outage(ec2, plan, run_id, record)

    assert ledger[-1]["pending"] == {"create_acl_for": world.subnets["b"]} and not ledger[-1]["acls"]
    (orphan,) = harness_acls(ec2, world.vpc_id, run_id)

    assert heal_zone_outage(ec2, ledger[-1]) == [f"deleted network ACL {orphan['NetworkAclId']}"]
    assert harness_acls(ec2, world.vpc_id, run_id) == []


# ------------------------------------------------------------------ failure halfway: real AccessDenied


def _operator_with_rights(aws: Aws) -> tuple[str, Any]:
    """A harness principal of this test's own, allowed EC2, so its policy can change mid-apply."""
    name = unique("operator")
    return name, aws.client("ec2", aws.user(name, {"Effect": "Allow", "Action": "ec2:*", "Resource": "*"}))


def test_access_denied_halfway_through_the_swaps_rolls_everything_back(aws: Aws, world: World) -> None:
    """After the first subnet moved, the principal loses ReplaceNetworkAclAssociation (an IAM change
    made by the admin, enforced by moto on the next call); the permission comes back while rolling back."""
    iam = aws.client("iam")
    name, ec2 = _operator_with_rights(aws)
    run_id = unique("denied")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")
    states: list[str] = []

    def record(data: dict[str, Any]) -> None:
        states.append(data["state"])
        if data["state"] == "swapping" and len(data["swapped"]) == 1 and "pending" not in data:
            assert associations(ec2, world.vpc_id) != before  # one subnet really moved
            iam.put_user_policy(UserName=name, PolicyName="revoked",
                                PolicyDocument=policy(deny("ec2:ReplaceNetworkAclAssociation")))
        if data["state"] == "rolling-back":
            iam.delete_user_policy(UserName=name, PolicyName="revoked")

    with pytest.raises(FaultError) as caught:
        apply_zone_outage(ec2, plan, run_id, record)

    message = str(caught.value)
    second = plan.targets[1].subnet_id
    assert message.startswith(f"zone outage of eu-west-1a failed: AWS denied replacing the network ACL association "
                              f"of {second}")
    assert "AWS denied" in message and "AccessDenied" in message and "ec2:ReplaceNetworkAclAssociation" in message
    assert "rolled back: " in message and f"{plan.targets[0].subnet_id}: network ACL" in message
    assert states[-2:] == ["rolling-back", "rolled-back"]
    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_access_denied_halfway_with_rollback_denied_too_says_what_is_left_and_heal_finishes(aws: Aws,
                                                                                              world: World) -> None:
    iam = aws.client("iam")
    name, ec2 = _operator_with_rights(aws)
    run_id = unique("stuck")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")
    ledger: list[dict[str, Any]] = []

    def record(data: dict[str, Any]) -> None:
        ledger.append(data)
        if data["state"] == "swapping" and len(data["swapped"]) == 1 and "pending" not in data:
            iam.put_user_policy(UserName=name, PolicyName="revoked",
                                PolicyDocument=policy(deny("ec2:ReplaceNetworkAclAssociation")))

    with pytest.raises(FaultError) as caught:
        apply_zone_outage(ec2, plan, run_id, record)

    message = str(caught.value)
    assert "rolling back was incomplete" in message and f"run id {run_id}" in message
    assert f"putting {plan.targets[0].subnet_id} back on network ACL {plan.targets[0].network_acl_id}" in message
    assert ledger[-1]["state"] == "rollback-failed"
    assert associations(ec2, world.vpc_id) != before

    iam.delete_user_policy(UserName=name, PolicyName="revoked")
    heal_zone_outage(ec2, run_id)

    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_access_denied_creating_the_second_acl_deletes_the_first(aws: Aws, world: World) -> None:
    iam = aws.client("iam")
    name, ec2 = _operator_with_rights(aws)
    run_id = unique("nocreate")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")

    def record(data: dict[str, Any]) -> None:
        if len(data["acls"]) == 1 and "pending" not in data:
            iam.put_user_policy(UserName=name, PolicyName="revoked", PolicyDocument=policy(deny("ec2:CreateNetworkAcl")))

    with pytest.raises(FaultError, match=rf"failed: AWS denied creating a network ACL for {plan.targets[1].subnet_id} "
                                         r".*AccessDenied.*; rolled back: deleted network ACL acl-\w+$"):
        apply_zone_outage(ec2, plan, run_id, record)

    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_a_ledger_that_cannot_be_written_stops_the_outage_and_rolls_back(ec2: Any, world: World) -> None:
    run_id = unique("ledger")
    before = associations(ec2, world.vpc_id)
    plan = plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")

    def record(data: dict[str, Any]) -> None:
        if data["state"] != "planned" and data["state"] != "creating-acls":
            raise OSError("No space left on device")

    with pytest.raises(FaultError, match=r"rolled back: deleted network ACL acl-\w+; deleted network ACL acl-\w+ "
                                         r"\(the heal ledger could not be updated: OSError: No space left on device\)"):
        apply_zone_outage(ec2, plan, run_id, record)
    assert associations(ec2, world.vpc_id) == before
    assert harness_acls(ec2, world.vpc_id, run_id) == []


def test_a_principal_without_ec2_rights_gets_a_fault_error_naming_the_denied_call(aws: Aws, world: World) -> None:
    ec2 = aws.client("ec2", aws.user(unique("nobody"), {"Effect": "Allow", "Action": "iam:GetUser", "Resource": "*"}))
    with pytest.raises(FaultError, match=rf"AWS denied listing the subnets of {world.vpc_id} \(AccessDenied: .*"
                                         r"ec2:DescribeSubnets\).*; nothing was changed"):
        plan_zone_outage(ec2, world.vpc_id, "eu-west-1a")


def test_entries_round_trip_through_aws_shapes() -> None:
    entry = AclEntry(100, True, "deny", "10.0.2.0/24")
    assert AclEntry.from_aws({**entry.params(), "RuleAction": "deny"}) == entry
    assert AclEntry(32001, False, "allow", "::/0").params()["Ipv6CidrBlock"] == "::/0"
    tcp = AclEntry(120, False, "deny", "0.0.0.0/0", "6", 22, 22)
    assert AclEntry.from_aws(tcp.params()) == tcp and tcp.params()["PortRange"] == {"From": 22, "To": 22}
    plan = ZoneOutagePlan("vpc-1", "z", "availability-zone", (nacl.SubnetTarget("s", "c", "a", "acl", "n", (tcp,)),),
                          (nacl.SkippedSubnet("t", "why"),), ("10.0.0.0/24",))
    assert ZoneOutagePlan.from_dict(plan.to_dict()) == plan
    assert nacl.SCOPES == ("all", "availability-zone")
