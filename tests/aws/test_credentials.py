"""Revoking the machine controller's credentials, against moto's IAM with authentication enforced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_support import Aws, Keys, World, allow, deny, unique
from botocore.exceptions import ClientError

from harness.aws.credentials import policy_name, refused, resolve_principal, restore, revoke
from harness.errors import ConfigError, FaultError


@pytest.fixture
def iam(aws: Aws, operator: Keys) -> Any:
    return aws.client("iam", operator)


@pytest.fixture
def sts(aws: Aws, operator: Keys) -> Any:
    return aws.client("sts", operator)


def ec2_works(aws: Aws, keys: Keys) -> str:
    """'ok', or AWS's error code for the machine controller's DescribeInstances."""
    try:
        aws.client("ec2", keys).describe_instances()
        return "ok"
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])


def test_deny_policy_makes_the_controllers_ec2_calls_fail_and_restore_brings_them_back(
        aws: Aws, iam: Any, sts: Any, world: World) -> None:
    run_id = unique("deny")
    assert ec2_works(aws, world.controller_keys) == "ok"
    ledger: list[dict[str, Any]] = []

    data = revoke(iam, sts, world.controller, "deny-policy", run_id, ledger.append)

    assert ec2_works(aws, world.controller_keys) == "AccessDenied"
    with pytest.raises(ClientError, match="not authorized to perform: ec2:RunInstances"):
        aws.client("ec2", world.controller_keys).run_instances(
            ImageId=world.image_id, MinCount=1, MaxCount=1, SubnetId=world.subnets["a1"])
    assert ledger[0]["state"] == "planned" and ledger[0]["policy_name"] == f"ha-harness-deny-{run_id}"
    assert data == ledger[-1] and data["state"] == "applied"
    assert json.loads(json.dumps(data)) == data
    assert sorted(iam.list_user_policies(UserName=world.controller)["PolicyNames"]) == ["base", policy_name(run_id)]
    document = iam.get_user_policy(UserName=world.controller, PolicyName=policy_name(run_id))["PolicyDocument"]
    statement = (json.loads(document) if isinstance(document, str) else document)["Statement"][0]
    assert (statement["Effect"], statement["Action"], statement["Resource"]) == ("Deny", "*", "*")

    said = restore(iam, data)

    assert said == [f"{data['principal']['arn']}: deleted inline policy {policy_name(run_id)}"]
    assert ec2_works(aws, world.controller_keys) == "ok"
    assert iam.list_user_policies(UserName=world.controller)["PolicyNames"] == ["base"]  # exactly it, nothing else
    tags = iam.list_user_tags(UserName=world.controller)["Tags"]
    assert tags == [{"Key": "ha-harness/chaos", "Value": "allowed"}]
    assert restore(iam, data) == [f"{data['principal']['arn']}: inline policy {policy_name(run_id)} already gone"]


def test_revoke_is_idempotent_per_run(aws: Aws, iam: Any, sts: Any, world: World) -> None:
    run_id = unique("again")
    first = revoke(iam, sts, world.controller, "deny-policy", run_id)
    second = revoke(iam, sts, f"user/{world.controller}", "deny-policy", run_id)
    assert first == second
    assert sorted(iam.list_user_policies(UserName=world.controller)["PolicyNames"]) == ["base", policy_name(run_id)]
    restore(iam, second)
    assert ec2_works(aws, world.controller_keys) == "ok"


@pytest.mark.parametrize("record_kept", ["planned-record", "run-id-only"])
def test_restore_from_a_partial_record_or_the_run_id_alone(aws: Aws, iam: Any, sts: Any, world: World,
                                                           record_kept: str) -> None:
    run_id = unique("partial")
    ledger: list[dict[str, Any]] = []
    revoke(iam, sts, world.controller, "deny-policy", run_id, ledger.append)
    assert ec2_works(aws, world.controller_keys) == "AccessDenied"

    said = restore(iam, ledger[0] if record_kept == "planned-record" else run_id)

    assert any(f"deleted inline policy {policy_name(run_id)}" in line for line in said)
    assert ec2_works(aws, world.controller_keys) == "ok"
    assert restore(iam, run_id) == [f"credentials of run {run_id}: nothing to restore "
                                    f"(no principal tagged ha-harness/run/{run_id})"]


def test_deny_policy_on_a_role_cuts_off_its_live_sessions(aws: Aws, iam: Any, sts: Any, world: World) -> None:
    role = unique("mcm-role")
    admin = aws.client("iam")
    admin.create_role(RoleName=role, Tags=[{"Key": "ha-harness/chaos", "Value": "allowed"}],
                      AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                          {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}))
    admin.put_role_policy(RoleName=role, PolicyName="ec2", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [allow("ec2:*")]}))
    assumer = aws.user(unique("assumer"), allow("sts:AssumeRole"))
    creds = aws.client("sts", assumer).assume_role(RoleArn=f"arn:aws:iam::123456789012:role/{role}",
                                                   RoleSessionName="machine-controller")["Credentials"]
    session = Keys(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
    assert ec2_works(aws, session) == "ok"
    run_id = unique("role")

    data = revoke(iam, sts, f"arn:aws:iam::123456789012:role/{role}", "deny-policy", run_id)

    assert data["principal"]["kind"] == "role"
    assert ec2_works(aws, session) == "AccessDenied"
    restore(iam, run_id)
    assert ec2_works(aws, session) == "ok"
    with pytest.raises(ConfigError, match="roles have no access keys to deactivate; use method deny-policy"):
        revoke(iam, sts, f"role/{role}", "deactivate-keys", unique("keys"))


def test_deactivate_keys_bookkeeping_touches_exactly_the_active_keys(aws: Aws, iam: Any, sts: Any,
                                                                    world: World) -> None:
    admin = aws.client("iam")
    spare = admin.create_access_key(UserName=world.controller)["AccessKey"]["AccessKeyId"]
    admin.update_access_key(UserName=world.controller, AccessKeyId=spare, Status="Inactive")  # was off before
    run_id = unique("keys")

    data = revoke(iam, sts, world.controller, "deactivate-keys", run_id)

    assert data["key_ids"] == [world.controller_keys.access_key_id]
    status = {k["AccessKeyId"]: k["Status"] for k in admin.list_access_keys(UserName=world.controller)["AccessKeyMetadata"]}
    assert status == {world.controller_keys.access_key_id: "Inactive", spare: "Inactive"}
    tags = {t["Key"]: t["Value"] for t in admin.list_user_tags(UserName=world.controller)["Tags"]}
    assert tags[f"ha-harness/run/{run_id}"] == f"deactivate-keys {world.controller_keys.access_key_id}"
    assert revoke(iam, sts, world.controller, "deactivate-keys", run_id)["key_ids"] == data["key_ids"]  # idempotent

    said = restore(iam, run_id)  # from the tag alone

    assert said == [f"{data['principal']['arn']}: access key {world.controller_keys.access_key_id} Active again"]
    status = {k["AccessKeyId"]: k["Status"] for k in admin.list_access_keys(UserName=world.controller)["AccessKeyMetadata"]}
    assert status == {world.controller_keys.access_key_id: "Active", spare: "Inactive"}
    assert f"ha-harness/run/{run_id}" not in {t["Key"] for t in admin.list_user_tags(UserName=world.controller)["Tags"]}


def test_an_inactive_key_is_refused_as_aws_refuses_it_and_works_again_once_restored(
        aws: Aws, iam: Any, sts: Any, world: World) -> None:
    """moto 5.x alone does not look at a key's status; the local cloud's server refuses an Inactive
    key as AWS does (EC2: AuthFailure; IAM, STS: InvalidClientTokenId), so the revocation bites."""
    data = revoke(iam, sts, world.controller, "deactivate-keys", unique("inactive"))
    try:
        assert ec2_works(aws, world.controller_keys) == "AuthFailure"
        # What the fault awaits as its effect on the local cloud (which has the controller's keys).
        assert refused(aws.client("ec2", world.controller_keys)) == {"refused": "AuthFailure"}
        with pytest.raises(ClientError, match="InvalidClientTokenId"):
            aws.client("sts", world.controller_keys).get_caller_identity()
        assert ec2_works(aws, aws.admin) == "ok"  # only the deactivated key is refused
    finally:
        restore(iam, data)
    assert ec2_works(aws, world.controller_keys) == "ok"


def test_refuses_to_revoke_the_credentials_the_harness_calls_with(aws: Aws, iam: Any, sts: Any) -> None:
    admin = aws.client("iam")
    admin.tag_user(UserName="ha-harness-operator", Tags=[{"Key": "ha-harness/chaos", "Value": "allowed"}])
    try:
        for method in ("deny-policy", "deactivate-keys"):
            with pytest.raises(FaultError, match="refusing to revoke the credentials of arn:aws:iam::123456789012:"
                                                 "user/ha-harness-operator: the harness itself calls AWS as"):
                revoke(iam, sts, "ha-harness-operator", method, unique("self"))  # type: ignore[arg-type]
        assert admin.list_user_policies(UserName="ha-harness-operator")["PolicyNames"] == ["base"]
        keys = admin.list_access_keys(UserName="ha-harness-operator")["AccessKeyMetadata"]
        assert {k["Status"] for k in keys} == {"Active"}
    finally:
        admin.untag_user(UserName="ha-harness-operator", TagKeys=["ha-harness/chaos"])


def test_refuses_to_revoke_the_role_the_harness_has_assumed(aws: Aws) -> None:
    role = unique("harness-role")
    admin = aws.client("iam")
    admin.create_role(RoleName=role, Tags=[{"Key": "ha-harness/chaos", "Value": "allowed"}],
                      AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
                          {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}))
    admin.put_role_policy(RoleName=role, PolicyName="all", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [allow("iam:*", "sts:*")]}))
    creds = aws.client("sts").assume_role(RoleArn=f"arn:aws:iam::123456789012:role/{role}",
                                          RoleSessionName="harness")["Credentials"]
    session = Keys(creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])

    with pytest.raises(FaultError, match=rf"the harness itself calls AWS as arn:aws:sts::123456789012:assumed-role/{role}/harness"):
        revoke(aws.client("iam", session), aws.client("sts", session), role, "deny-policy", unique("self"))
    assert admin.list_role_policies(RoleName=role)["PolicyNames"] == ["all"]


def test_only_principals_that_opted_in_are_revoked(aws: Aws, iam: Any, sts: Any) -> None:
    name = unique("bystander")
    keys = aws.user(name, allow("ec2:*"), opted_in=False)

    with pytest.raises(FaultError, match=rf"refusing to revoke the credentials of .*user/{name}: not opted in: no tag "
                                         r"ha-harness/chaos=allowed; nothing was changed"):
        revoke(iam, sts, name, "deny-policy", unique("no"))
    assert ec2_works(aws, keys) == "ok"
    assert aws.client("iam").list_user_tags(UserName=name)["Tags"] == []

    data = revoke(iam, sts, name, "deny-policy", unique("listed"), opted_in=[name])
    assert ec2_works(aws, keys) == "AccessDenied"
    restore(iam, data)
    assert ec2_works(aws, keys) == "ok"


def test_unknown_principals_and_methods_are_config_errors(iam: Any, sts: Any, world: World) -> None:
    with pytest.raises(ConfigError, match="no IAM user or role 'nobody-at-all'"):
        resolve_principal(iam, "nobody-at-all")
    with pytest.raises(ConfigError, match="is not the ARN of an IAM user or role"):
        resolve_principal(iam, "arn:aws:s3:::bucket")
    with pytest.raises(ConfigError, match="unknown credential revocation method 'rotate'"):
        revoke(iam, sts, world.controller, "rotate", unique("x"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="run id 'bad id!' is not usable"):
        revoke(iam, sts, world.controller, "deny-policy", "bad id!")


def test_no_secret_appears_in_returned_data_messages_or_errors(aws: Aws, iam: Any, sts: Any, world: World,
                                                               operator: Keys) -> None:
    secrets = [world.controller_keys.secret, operator.secret, aws.admin.secret]
    texts: list[str] = []
    for method in ("deny-policy", "deactivate-keys"):
        ledger: list[dict[str, Any]] = []
        data = revoke(iam, sts, world.controller, method, unique("secret"), ledger.append)  # type: ignore[arg-type]
        texts += [repr(data), repr(ledger), repr(restore(iam, data)), repr(restore(iam, data["run_id"]))]
    for bad in (lambda: revoke(iam, sts, "ha-harness-operator", "deny-policy", unique("s")),
                lambda: revoke(aws.client("iam", world.controller_keys), aws.client("sts", world.controller_keys),
                               world.controller, "deny-policy", unique("s"))):
        with pytest.raises(FaultError) as caught:
            bad()
        texts.append(repr(caught.value) + str(caught.value))
    joined = "\n".join(texts)
    assert "AccessDenied" in joined  # the controller, allowed only EC2, may not read IAM: a real denial
    for secret in secrets:
        assert secret not in joined


def test_a_denied_revocation_is_rolled_back(aws: Aws, world: World) -> None:
    """The harness may tag the principal but not put policies on it: the tag is taken off again."""
    keys = aws.user(unique("half-operator"), allow("iam:*", "sts:*"), deny("iam:PutUserPolicy"), opted_in=False)
    run_id = unique("half")

    with pytest.raises(FaultError, match=rf"AWS denied putting the deny-all inline policy ha-harness-deny-{run_id} on "
                                         rf".*AccessDenied.*iam:PutUserPolicy.*; rolled back: .*inline policy "
                                         rf"ha-harness-deny-{run_id} already gone"):
        revoke(aws.client("iam", keys), aws.client("sts", keys), world.controller, "deny-policy", run_id)

    assert aws.client("iam").list_user_tags(UserName=world.controller)["Tags"] == [
        {"Key": "ha-harness/chaos", "Value": "allowed"}]
    assert ec2_works(aws, world.controller_keys) == "ok"


def test_sessions_keep_their_own_credentials_and_share_one_model_loader() -> None:
    from harness.aws.access import session

    first, second = session(), session()
    # boto3 keeps its botocore session private; the loader is what each client's models come from
    loaders = [s._session.get_component("data_loader") for s in (first, second)]
    assert loaders[0] is loaders[1]
    assert first._session is not second._session, "profiles and credentials are a session's own"
