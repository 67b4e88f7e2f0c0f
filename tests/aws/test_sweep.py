"""`harness heal` after a crash that lost the ledger entry: each AWS fault is injected through the
runner, its ledger entry deleted, and heal finds the effect by the harness's tags alone (a dry run
lists it and changes nothing); what the harness did not tag, or what did not opt in, stays."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from aws_support import AccountEnv, Aws, World, acl_ids, allow, associations, unique

from harness.aws.access import Credentials
from harness.aws.credentials import DENY_ALL, RUN_TAG_PREFIX
from harness.aws.sweep import sweep
from harness.errors import FaultError
from harness.faults import watchdog
from harness.faults.runner import FaultRunner, heal_everything
from harness.timeline import Timeline


def _inject_and_lose_the_ledger(account: AccountEnv, kind: str, target: str,
                                options: dict[str, Any] | None = None) -> str:
    """Inject, then lose the ledger entry as a crash between the AWS change and the ledger would."""
    active = FaultRunner(account, Timeline()).inject(kind, target, options, max_duration=60)
    watchdog.disarm(active.data.get("watchdog"))
    account.forget_fault(active.id)
    assert account.faults() == []
    return str(active.data["run_id"])


def _state(ec2: Any, instance_id: str) -> str:
    return str(ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]["Name"])


def test_a_zone_outage_without_ledger_is_found_by_its_tags_and_undone(aws: Aws, account: AccountEnv,
                                                                       world: World) -> None:
    ec2 = aws.client("ec2")
    # Not the harness's: an ACL named like one of its own but untagged, holding the subnet that did not opt in.
    bystander = ec2.create_network_acl(VpcId=world.vpc_id, TagSpecifications=[{"ResourceType": "network-acl", "Tags": [
        {"Key": "Name", "Value": "ha-harness-zone-outage-someone-else"}]}])["NetworkAcl"]["NetworkAclId"]
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [world.vpc_id]}])["NetworkAcls"]
    a3 = next(a["NetworkAclAssociationId"] for acl in acls for a in acl["Associations"]
              if a["SubnetId"] == world.subnets["a3"])
    ec2.replace_network_acl_association(AssociationId=a3, NetworkAclId=bystander)
    before, acls_before = associations(ec2, world.vpc_id), acl_ids(ec2, world.vpc_id)

    run_id = _inject_and_lose_the_ledger(account, "aws-zone-outage", "zone-a")
    during, acls_during = associations(ec2, world.vpc_id), acl_ids(ec2, world.vpc_id)
    assert during != before

    planned = heal_everything(account, dry_run=True)
    assert f"would move {world.subnets['a1']} from network ACL {during[world.subnets['a1']]} back to " \
           f"{world.custom_acl} (zone outage of run {run_id})" in planned
    assert f"would move {world.subnets['a2']} from network ACL {during[world.subnets['a2']]} back to " \
           f"{world.default_acl} (zone outage of run {run_id})" in planned
    assert sum(line.startswith("would delete network ACL") for line in planned) == 2
    assert bystander not in "\n".join(planned)
    assert associations(ec2, world.vpc_id) == during and acl_ids(ec2, world.vpc_id) == acls_during

    done = heal_everything(account)
    assert f"{world.subnets['a1']}: network ACL {during[world.subnets['a1']]} -> {world.custom_acl} " \
           f"(restored; zone outage of run {run_id})" in done
    assert associations(ec2, world.vpc_id) == before and acl_ids(ec2, world.vpc_id) == acls_before
    assert before[world.subnets["a3"]] == bystander  # untouched
    assert [line for line in heal_everything(account) if world.vpc_id in line or "network ACL" in line] == []


def test_a_zone_outage_acl_without_its_original_is_reported_not_guessed(aws: Aws, account: AccountEnv,
                                                                         world: World) -> None:
    ec2 = aws.client("ec2")
    run_id = _inject_and_lose_the_ledger(account, "aws-zone-outage", "zone-a")
    during = associations(ec2, world.vpc_id)
    harness_acl = during[world.subnets["a1"]]
    ec2.delete_tags(Resources=[harness_acl], Tags=[{"Key": "ha-harness/original-acl"}])
    with pytest.raises(FaultError, match=rf"{world.subnets['a1']} stays on the zone outage network ACL {harness_acl} "
                                         rf"of run {run_id}: .*does not record its original network ACL"):
        heal_everything(account)
    after = associations(ec2, world.vpc_id)
    assert after[world.subnets["a1"]] == harness_acl  # not moved to a guess
    assert after[world.subnets["a2"]] == world.default_acl  # the other subnet was restored all the same
    ec2.replace_network_acl_association(  # leave the shared server clean
        AssociationId=next(a["NetworkAclAssociationId"] for acl in ec2.describe_network_acls(
            NetworkAclIds=[harness_acl])["NetworkAcls"] for a in acl["Associations"]), NetworkAclId=world.custom_acl)
    ec2.delete_network_acl(NetworkAclId=harness_acl)


@pytest.mark.parametrize("method", ["deny-policy", "deactivate-keys"])
def test_revoked_credentials_without_ledger_are_restored_and_others_left_alone(
        aws: Aws, account: AccountEnv, world: World, method: str) -> None:
    iam = aws.client("iam")
    # Not the harness's: an opted-in user with a deny-all inline policy and an Inactive key of its own.
    other = unique("bystander")
    aws.user(other, allow("ec2:*"))
    iam.put_user_policy(UserName=other, PolicyName="ha-harness-deny-not-tagged", PolicyDocument=DENY_ALL)
    other_key = iam.list_access_keys(UserName=other)["AccessKeyMetadata"][0]["AccessKeyId"]
    iam.update_access_key(UserName=other, AccessKeyId=other_key, Status="Inactive")

    run_id = _inject_and_lose_the_ledger(account, "aws-revoke-credentials", "machine-controller", {"method": method})
    key = world.controller_keys.access_key_id

    def revoked() -> tuple[list[str], str]:
        keys = iam.list_access_keys(UserName=world.controller)["AccessKeyMetadata"]
        return iam.list_user_policies(UserName=world.controller)["PolicyNames"], keys[0]["Status"]

    during = revoked()
    assert during != (["base"], "Active")
    planned = heal_everything(account, dry_run=True)
    what = f"delete inline policy ha-harness-deny-{run_id}" if method == "deny-policy" else f"re-activate access key(s) {key}"
    assert f"would {what} of {iam.get_user(UserName=world.controller)['User']['Arn']} " \
           f"(credential revocation of run {run_id})" in planned
    assert not any(other in line for line in planned)
    assert revoked() == during

    done = heal_everything(account)
    assert any(f"(credential revocation of run {run_id})" in line for line in done)
    assert revoked() == (["base"], "Active")
    tags = iam.list_user_tags(UserName=world.controller)["Tags"]
    assert not [t for t in tags if t["Key"].startswith(RUN_TAG_PREFIX)]
    assert sorted(iam.list_user_policies(UserName=other)["PolicyNames"]) == ["base", "ha-harness-deny-not-tagged"]
    assert iam.list_access_keys(UserName=other)["AccessKeyMetadata"][0]["Status"] == "Inactive"


def test_the_sweep_never_touches_the_credentials_it_calls_with(aws: Aws, account: AccountEnv) -> None:
    iam = aws.client("iam")
    name = unique("operator-too")
    keys = aws.user(name, allow("ec2:*", "iam:*", "sts:*"))  # opted in, and the harness calls as it
    spare = iam.create_access_key(UserName=name)["AccessKey"]["AccessKeyId"]
    iam.update_access_key(UserName=name, AccessKeyId=spare, Status="Inactive")
    tag = RUN_TAG_PREFIX + unique("self")
    iam.tag_user(UserName=name, Tags=[{"Key": tag, "Value": f"deactivate-keys {spare}"}])
    access = account.aws()
    assert access is not None
    as_itself = replace(access, credentials=Credentials(keys.access_key_id, keys.secret))  # the harness calls as it
    try:
        with pytest.raises(FaultError, match=rf"carries {tag} .* left alone: the harness itself calls AWS as "):
            sweep(as_itself)
        statuses = {k["AccessKeyId"]: k["Status"] for k in iam.list_access_keys(UserName=name)["AccessKeyMetadata"]}
        assert statuses[spare] == "Inactive"
    finally:
        iam.untag_user(UserName=name, TagKeys=[tag])  # the server is shared by the later tests


def test_a_stopped_instance_without_ledger_is_started_and_untagged_ones_stay_stopped(
        aws: Aws, account: AccountEnv, world: World) -> None:
    ec2 = aws.client("ec2")
    node = world.instances["b"]
    ec2.stop_instances(InstanceIds=[world.instances["c"]])  # stopped by someone else: no harness tag
    run_id = _inject_and_lose_the_ledger(account, "aws-instance-stop", node)
    assert _state(ec2, node) in ("stopping", "stopped")

    planned = heal_everything(account, dry_run=True)
    assert any(line.startswith(f"would start {node} (") and f"instance-stop of run {run_id}" in line
               for line in planned)
    assert not any(world.instances["c"] in line for line in planned)
    assert _state(ec2, node) in ("stopping", "stopped")

    done = heal_everything(account)
    assert any(line.startswith(f"{node}: started again") for line in done)
    assert _state(ec2, node) in ("pending", "running")
    assert _state(ec2, world.instances["c"]) in ("stopping", "stopped")
    tags = {t["Key"] for t in ec2.describe_instances(InstanceIds=[node])["Reservations"][0]["Instances"][0]["Tags"]}
    assert "ha-harness/run" not in tags


def test_a_tagged_instance_that_did_not_opt_in_is_reported_and_left_stopped(
        aws: Aws, account: AccountEnv, world: World) -> None:
    ec2 = aws.client("ec2")
    bystander = world.instances["a3"]  # not opted in
    ec2.create_tags(Resources=[bystander], Tags=[{"Key": "ha-harness/run", "Value": "hh-forged"},
                                                 {"Key": "ha-harness/fault", "Value": "instance-stop"}])
    ec2.stop_instances(InstanceIds=[bystander])
    with pytest.raises(FaultError, match=rf"{bystander} carries the tags of run hh-forged \(stop\) but is left alone: "
                                         "not opted in"):
        heal_everything(account)
    assert _state(ec2, bystander) in ("stopping", "stopped")


def test_an_environment_without_aws_sweeps_nothing(account: AccountEnv) -> None:
    class NoCloud(AccountEnv):
        def aws(self) -> None:
            return None

    env = NoCloud(account.path, account.settings)
    assert heal_everything(env) == []
    assert heal_everything(env, dry_run=True) == ["would run the cluster environment's own sweep (not listed here)"]

