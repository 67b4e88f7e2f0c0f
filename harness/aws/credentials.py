"""Revoke the machine controller's cloud credentials: GEP-20's "machines can be neither created nor deleted".

Two methods:

- ``deny-policy``: an inline policy ``ha-harness-deny-<run id>`` denying every action on every
  resource, put on the user or role (explicit Deny wins over any Allow; takes effect for existing
  sessions too). Restore deletes exactly that policy.
- ``deactivate-keys``: the user's Active access keys set Inactive. Restore re-activates exactly
  those keys (never one that was already Inactive).

The principal is tagged ``ha-harness/run/<run id>`` (value: the method and the policy name or key
ids) before the change, so restore finds it from the run id alone. The harness refuses to revoke
the credentials it calls AWS with, and touches only principals that opted in. Secrets never pass
through here: only key ids, which AWS does not treat as secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Collection, Literal, Mapping, NoReturn

from harness.aws.errors import aws_call, is_not_found
from harness.aws.tags import Record, check_run_id, no_record, not_opted_in, snapshot, tag_map
from harness.errors import ConfigError, FaultError, HarnessError

Method = Literal["deny-policy", "deactivate-keys"]
METHODS: tuple[str, ...] = ("deny-policy", "deactivate-keys")
KIND = "aws-credentials"
POLICY_PREFIX = "ha-harness-deny-"
RUN_TAG_PREFIX = "ha-harness/run/"
DENY_ALL = json.dumps({"Version": "2012-10-17", "Statement": [
    {"Sid": "HaHarnessCredentialRevocation", "Effect": "Deny", "Action": "*", "Resource": "*"}]})


@dataclass(frozen=True)
class Principal:
    kind: Literal["user", "role"]
    name: str
    arn: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "arn": self.arn}

    @classmethod
    def from_dict(cls, data: Mapping[str, str]) -> Principal:
        return cls(data["kind"], data["name"], data.get("arn", ""))  # type: ignore[arg-type]


def policy_name(run_id: str) -> str:
    return f"{POLICY_PREFIX}{check_run_id(run_id)}"


def resolve_principal(iam: Any, principal: str) -> Principal:
    """A user or role from its name, `user/NAME`, `role/NAME` or ARN. ConfigError when unknown or ambiguous."""
    kind: str | None = None
    name = principal
    if principal.startswith("arn:"):
        resource = principal.split(":", 5)[-1]
        kind, _, rest = resource.partition("/")
        name = rest.rsplit("/", 1)[-1]
        if kind not in ("user", "role") or not name:
            raise ConfigError(f"{principal!r} is not the ARN of an IAM user or role")
    elif principal.startswith(("user/", "role/")):
        kind, _, name = principal.partition("/")
    found: list[Principal] = []
    for candidate in ([kind] if kind else ["user", "role"]):
        try:
            with aws_call(f"looking up IAM {candidate} {name}", "nothing was changed"):
                if candidate == "user":
                    user = iam.get_user(UserName=name)["User"]
                    found.append(Principal("user", user["UserName"], user["Arn"]))
                else:
                    role = iam.get_role(RoleName=name)["Role"]
                    found.append(Principal("role", role["RoleName"], role["Arn"]))
        except HarnessError as exc:
            if not is_not_found(exc.__cause__ or exc):
                raise
    if not found:
        raise ConfigError(f"no IAM user or role {principal!r} in this account")
    if len(found) > 1:
        raise ConfigError(f"{principal!r} names both a user and a role: say user/{name} or role/{name}")
    return found[0]


def caller_is(sts: Any, principal: Principal) -> str | None:
    """The caller's ARN when the harness calls AWS as `principal` (itself, or a session of the role)."""
    with aws_call("asking STS who the harness calls AWS as", "nothing was changed"):
        arn = sts.get_caller_identity()["Arn"]
    resource = arn.split(":", 5)[-1]
    kind, _, rest = resource.partition("/")
    if kind == "user" and principal.kind == "user" and rest.rsplit("/", 1)[-1] == principal.name:
        return arn
    if kind == "assumed-role" and principal.kind == "role" and rest.split("/", 1)[0] == principal.name:
        return arn
    if kind == "role" and principal.kind == "role" and rest.rsplit("/", 1)[-1] == principal.name:
        return arn
    return arn if arn == principal.arn else None


def revoke(
    iam: Any,
    sts: Any,
    principal: str,
    method: Method,
    run_id: str,
    record: Record | None = None,
    *,
    opted_in: Collection[str] | None = None,
) -> dict[str, Any]:
    """Revoke `principal`'s credentials (user or role name, user/NAME, role/NAME or ARN); returns what
    `restore` needs. `record(data)` gets it before each change.

    Refuses (FaultError) to revoke the credentials the harness calls with, and principals that did
    not opt in (tag ha-harness/chaos=allowed, or name/ARN in `opted_in`). Idempotent per run id.
    """
    run_id = check_run_id(run_id)
    record = record or no_record
    if method not in METHODS:
        raise ConfigError(f"unknown credential revocation method {method!r}: use one of {', '.join(METHODS)}")
    who = resolve_principal(iam, principal)
    own = caller_is(sts, who)
    if own:
        raise FaultError(f"refusing to revoke the credentials of {who.arn}: the harness itself calls AWS as {own}; "
                         "give the harness credentials of its own")
    tags = principal_tags(iam, who)
    allowed = None if opted_in is None else set(opted_in)
    reason = None if allowed is not None and who.arn in allowed else not_opted_in(who.name, tags, allowed)
    if reason:
        raise FaultError(f"refusing to revoke the credentials of {who.arn}: {reason}; nothing was changed")
    if method == "deactivate-keys" and who.kind != "user":
        raise ConfigError(f"{who.arn} is a role: roles have no access keys to deactivate; use method deny-policy")

    data: dict[str, Any] = {"kind": KIND, "run_id": run_id, "method": method, "principal": who.to_dict(),
                            "state": "planned"}
    if method == "deny-policy":
        data["policy_name"] = policy_name(run_id)
        record(snapshot(data))
        _tag(iam, who, run_id, f"deny-policy {data['policy_name']}")
        try:
            with aws_call(f"putting the deny-all inline policy {data['policy_name']} on {who.arn}"):
                if who.kind == "user":
                    iam.put_user_policy(UserName=who.name, PolicyName=data["policy_name"], PolicyDocument=DENY_ALL)
                else:
                    iam.put_role_policy(RoleName=who.name, PolicyName=data["policy_name"], PolicyDocument=DENY_ALL)
        except HarnessError as exc:
            _roll_back(iam, data, exc)
    else:
        earlier = tags.get(RUN_TAG_PREFIX + run_id, "")
        already = earlier.split()[1:] if earlier.startswith("deactivate-keys") else []
        with aws_call(f"listing the access keys of {who.arn}", "nothing was changed"):
            keys = iam.list_access_keys(UserName=who.name)["AccessKeyMetadata"]
        active = [k["AccessKeyId"] for k in keys if k.get("Status") == "Active"]
        key_ids = sorted(set(already) | set(active))
        if not key_ids:
            raise FaultError(f"{who.arn} has no Active access key to deactivate; nothing was changed")
        data["key_ids"] = key_ids
        record(snapshot(data))
        _tag(iam, who, run_id, "deactivate-keys " + " ".join(key_ids))
        try:
            for key_id in active:
                with aws_call(f"deactivating access key {key_id} of {who.arn}"):
                    iam.update_access_key(UserName=who.name, AccessKeyId=key_id, Status="Inactive")
        except HarnessError as exc:
            _roll_back(iam, data, exc)
    data["state"] = "applied"
    record(snapshot(data))
    return snapshot(data)


DENIED = ("AccessDenied", "UnauthorizedOperation", "AuthFailure", "InvalidClientTokenId")


def refused(ec2: Any) -> dict[str, Any] | None:
    """{"refused": error code} when a harmless call with these credentials is denied; None while
    it still succeeds (or fails for another reason)."""
    from botocore.exceptions import ClientError

    try:
        ec2.describe_availability_zones()
    except ClientError as e:
        code = e.response.get("Error", {}).get("Code", "")
        return {"refused": code} if code in DENIED else None
    return None


def restore(iam: Any, data_or_run_id: Mapping[str, Any] | str) -> list[str]:
    """Undo `revoke`: delete exactly its policy, or re-activate exactly the keys it deactivated; untag.

    Works from revoke's data, a partial record of it (principal known), or the run id alone (the
    principal is found by its ha-harness/run/<run id> tag). Idempotent; returns what it did.
    """
    data: Mapping[str, Any] = {"run_id": data_or_run_id} if isinstance(data_or_run_id, str) else data_or_run_id
    if not data.get("run_id"):
        raise ConfigError("credential restore data has no run_id")
    run_id = check_run_id(str(data["run_id"]))
    tag_key = RUN_TAG_PREFIX + run_id
    if data.get("principal"):
        principals = [(Principal.from_dict(data["principal"]), None)]
    else:
        principals = _tagged_principals(iam, tag_key)
    said: list[str] = []
    failed: list[str] = []
    for who, tag_value in principals:
        try:
            if tag_value is None:
                tag_value = principal_tags(iam, who).get(tag_key, "")
        except HarnessError as exc:
            if not is_not_found(exc.__cause__ or exc):
                failed.append(str(exc))
                continue
            said.append(f"{who.arn}: no longer exists; nothing to restore")
            continue
        method, *rest = (tag_value.split() or [str(data.get("method", ""))])
        method = str(data.get("method") or method)
        try:
            if method == "deny-policy":
                said.append(_delete_policy(iam, who, str(data.get("policy_name") or policy_name(run_id))))
            elif method == "deactivate-keys":
                key_ids = sorted(set(data.get("key_ids") or ()) | set(rest if tag_value.startswith(method) else ()))
                said += _reactivate(iam, who, key_ids)
            if tag_value:
                with aws_call(f"removing tag {tag_key} from {who.arn}"):
                    if who.kind == "user":
                        iam.untag_user(UserName=who.name, TagKeys=[tag_key])
                    else:
                        iam.untag_role(RoleName=who.name, TagKeys=[tag_key])
        except HarnessError as exc:
            failed.append(str(exc))
    if failed:
        raise FaultError(f"credential restore of run {run_id} is incomplete: {'; '.join(failed)}; "
                         f"done: {'; '.join(said) or 'nothing'}")
    return said or [f"credentials of run {run_id}: nothing to restore (no principal tagged {tag_key})"]


def _roll_back(iam: Any, data: dict[str, Any], exc: HarnessError) -> NoReturn:
    try:
        said = restore(iam, data)
    except HarnessError as again:
        raise FaultError(f"{exc}; rolling back was incomplete: {again}; restore it with run id {data['run_id']}") from exc
    raise FaultError(f"{exc}; rolled back: {'; '.join(said)}") from exc


def _delete_policy(iam: Any, who: Principal, name: str) -> str:
    try:
        with aws_call(f"deleting inline policy {name} of {who.arn}"):
            if who.kind == "user":
                iam.delete_user_policy(UserName=who.name, PolicyName=name)
            else:
                iam.delete_role_policy(RoleName=who.name, PolicyName=name)
    except HarnessError as exc:
        if is_not_found(exc.__cause__ or exc):
            return f"{who.arn}: inline policy {name} already gone"
        raise
    return f"{who.arn}: deleted inline policy {name}"


def _reactivate(iam: Any, who: Principal, key_ids: list[str]) -> list[str]:
    said = []
    for key_id in key_ids:
        try:
            with aws_call(f"re-activating access key {key_id} of {who.arn}"):
                iam.update_access_key(UserName=who.name, AccessKeyId=key_id, Status="Active")
            said.append(f"{who.arn}: access key {key_id} Active again")
        except HarnessError as exc:
            if not is_not_found(exc.__cause__ or exc):
                raise
            said.append(f"{who.arn}: access key {key_id} no longer exists")
    return said


def _tag(iam: Any, who: Principal, run_id: str, value: str) -> None:
    tag = [{"Key": RUN_TAG_PREFIX + run_id, "Value": value}]
    with aws_call(f"tagging {who.arn} with {RUN_TAG_PREFIX}{run_id}", "nothing was changed"):
        if who.kind == "user":
            iam.tag_user(UserName=who.name, Tags=tag)
        else:
            iam.tag_role(RoleName=who.name, Tags=tag)


def principal_tags(iam: Any, who: Principal) -> dict[str, str]:
    with aws_call(f"reading the tags of {who.arn}", "nothing was changed"):
        if who.kind == "user":
            pages = iam.get_paginator("list_user_tags").paginate(UserName=who.name)
        else:
            pages = iam.get_paginator("list_role_tags").paginate(RoleName=who.name)
        return {k: v for page in pages for k, v in tag_map(page.get("Tags")).items()}


def _tagged_principals(iam: Any, tag_key: str) -> list[tuple[Principal, str | None]]:
    """Every user and role carrying `tag_key` (one tag read per principal: for crash recovery only)."""
    found: list[tuple[Principal, str | None]] = []
    with aws_call(f"finding the IAM users and roles tagged {tag_key}", "nothing was restored"):
        for page in iam.get_paginator("list_users").paginate():
            for user in page.get("Users", []):
                who = Principal("user", user["UserName"], user["Arn"])
                value = principal_tags(iam, who).get(tag_key)
                if value is not None:
                    found.append((who, value))
        for page in iam.get_paginator("list_roles").paginate():
            for role in page.get("Roles", []):
                who = Principal("role", role["RoleName"], role["Arn"])
                value = principal_tags(iam, who).get(tag_key)
                if value is not None:
                    found.append((who, value))
    return found
