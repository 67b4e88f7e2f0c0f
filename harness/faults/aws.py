"""AWS faults through the fault runner: GEP-20's zone outage (network ACL swap), the machine
controller's credentials revoked, and an EC2 node stopped, terminated or rebooted.

Each is a thin class over `harness.aws` (the boto3 code) on the environment's `AwsAccess`: real
AWS for the cluster provider, the local region's own cloud otherwise. The run id and every
step's heal data go to the ledger before AWS is touched, so `harness heal` and the fault's
watchdog undo it from the ledger, or from the run's tags when inject died before recording.
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.aws import credentials, instances, nacl
from harness.aws.access import AwsAccess
from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import Cloud, Environment, NodeFailures, NodeInstances, RoutedCloud


def _access(env: Environment) -> AwsAccess:
    assert isinstance(env, Cloud)
    access = env.aws()
    if access is None:
        raise ConfigError(f"the {env.provider} environment has no AWS account configured")
    return access


def _unavailable(env: Environment) -> str | None:
    reason = lacks(env, Cloud, "reach an AWS account")
    if reason is None and env.aws() is None:  # type: ignore[attr-defined]
        hint = "start its local cloud (`harness up --cloud`)" if env.provider == "local" else "configure [aws] (region, vpc_id, zones)"
        return f"the {env.provider} environment has no AWS account: {hint}"
    return reason


class AwsZoneOutage:
    """Every opted-in subnet of the zone moved onto a deny-all network ACL (scope `all`), or one
    denying only the other zones' subnets (`availability-zone`, as AWS FIS)."""

    kind: ClassVar[str] = "aws-zone-outage"
    # Looked at through AWS's eventually consistent API: a swapped ACL dropped the zone's packets
    # at once, its association read back 0.8-1.2 s later.
    effect_reads_late: ClassVar[bool] = True

    def __init__(self, scope: str = "all", subnet_tags: dict[str, str] | None = None) -> None:
        if scope not in nacl.SCOPES:
            raise ConfigError(f"unknown zone outage scope {scope!r}; accepted: {', '.join(nacl.SCOPES)}")
        self.scope = scope
        self.subnet_tags = subnet_tags or None  # only the zone's subnets carrying these tags

    def available(self, env: Environment) -> str | None:
        return _unavailable(env)

    def validate(self, env: Environment, target: str) -> str:
        return env.zone(target)

    def _plan(self, env: Environment, target: str) -> tuple[Any, nacl.ZoneOutagePlan]:
        access = _access(env)
        ec2 = access.client("ec2")
        return ec2, nacl.plan_zone_outage(ec2, access.vpc_id, access.az(target), self.scope,  # type: ignore[arg-type]
                                          subnet_filters=self.subnet_tags, opted_in=access.opted_in)

    def plan(self, env: Environment, target: str) -> str:
        return nacl.describe(self._plan(env, target)[1])

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        ec2, plan = self._plan(env, target)
        return nacl.apply_zone_outage(ec2, plan, ctx.run_id, ctx.record)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Where a router enforces the cloud's ACLs (the local cloud), packets dropped under the
        harness ACL; on AWS itself, every target subnet associated with its harness ACL."""
        acls = dict(data.get("acls") or {})
        if not acls:
            return None
        if isinstance(env, RoutedCloud):
            return env.acl_effect(target, set(acls.values()))
        return nacl.associations_in_place(_access(env).client("ec2"), acls)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        nacl.heal_zone_outage(_access(env).client("ec2"), data)


class AwsRevokeCredentials:
    """The machine controller's credentials revoked: machines can be neither created nor deleted.
    Target: the principal (user or role name, or ARN), or `machine-controller` for the one configured."""

    kind: ClassVar[str] = "aws-revoke-credentials"
    effect_reads_late: ClassVar[bool] = True  # looked at through AWS's eventually consistent API

    def __init__(self, method: str = "deny-policy") -> None:
        if method not in credentials.METHODS:
            raise ConfigError(f"unknown revocation method {method!r}; accepted: {', '.join(credentials.METHODS)}")
        self.method = method

    def available(self, env: Environment) -> str | None:
        return _unavailable(env)

    def validate(self, env: Environment, target: str) -> str:
        if target in ("", "machine-controller"):
            principal = _access(env).machine_principal
            if not principal:
                raise ConfigError("no machine controller principal is configured; name the user or role to revoke")
            return principal
        return target

    def plan(self, env: Environment, target: str) -> str:
        access = _access(env)
        who = credentials.resolve_principal(access.client("iam"), target)
        own = credentials.caller_is(access.client("sts"), who)
        refusal = f"\nIt would be refused: the harness itself calls AWS as {own}." if own else ""
        how = ("an inline policy denying every action" if self.method == "deny-policy"
               else "its Active access keys set Inactive")
        return (f"Revoke the credentials of {who.arn} ({self.method}): {how}; restore undoes exactly that.{refusal}\n"
                "Dry run: nothing was changed.")

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        access = _access(env)
        return credentials.revoke(access.client("iam"), access.client("sts"), target, self.method,  # type: ignore[arg-type]
                                  ctx.run_id, ctx.record, opted_in=access.opted_in)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """The revoked principal is refused, seen by calling EC2 with its own credentials (IAM
        changes take a moment to apply on AWS); without them, IAM's record of the change."""
        access = _access(env)
        if access.machine_credentials is None or target != access.machine_principal:
            return {"revoked_in_iam": data.get("method", self.method),
                    "note": "no credentials of this principal to try; IAM's record of the change is the evidence"}
        return credentials.refused(access.client("ec2", access.machine_credentials, attempts=1))

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        credentials.restore(_access(env).client("iam"), data)


class AwsInstanceFailure:
    """The EC2 instance behind a node stopped, terminated or rebooted. Target: a node name (its
    instance tagged `ha-harness/node` or Name) or an instance id."""

    kind: ClassVar[str] = "aws-instance"
    effect_reads_late: ClassVar[bool] = True  # looked at through AWS's eventually consistent API

    def __init__(self, mode: str) -> None:
        if mode not in instances.MODES:
            raise ConfigError(f"unknown instance failure mode {mode!r}; accepted: {', '.join(instances.MODES)}")
        self.mode = mode

    def available(self, env: Environment) -> str | None:
        return _unavailable(env)

    def validate(self, env: Environment, target: str) -> str:
        if target.startswith("i-"):
            return target
        instance_of(_access(env), target)  # a node without an instance is a clear error now
        return target

    def plan(self, env: Environment, target: str) -> str:
        instance = target if target.startswith("i-") else f"{instance_of(_access(env), target)} (node {target})"
        return f"{self.mode.capitalize()} EC2 instance {instance}.\nDry run: nothing was changed."

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        access = _access(env)
        instance = target if target.startswith("i-") else instance_of(access, target)
        return instances.fail_instance(access.client("ec2"), instance, self.mode, ctx.run_id, ctx.record,  # type: ignore[arg-type]
                                       opted_in=access.opted_in)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """A node whose instance stopped is down where the environment can tell (the local cloud's
        reconciler kills it); otherwise EC2's own state of the instance."""
        if self.mode != "reboot" and not target.startswith("i-") and isinstance(env, NodeFailures):
            return env.node_failure_effect(target, {"mode": "kill"})
        return instances.state_reached(_access(env).client("ec2"), data, self.mode)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        """A stopped instance started again; a terminated one replaced where the environment stands
        in for the machine controller (the local cloud), else left to the machine controller."""
        instances.heal_instance(_access(env).client("ec2"), data)
        if self.mode == "terminate" and data.get("instance_id") and isinstance(env, NodeInstances):
            env.replace_terminated_instance(str(data["instance_id"]))


def instance_of(access: AwsAccess, node: str) -> str:
    """The id of the running or stopped instance behind `node`; ConfigError naming the nodes known."""
    ec2 = access.client("ec2")
    found: dict[str, str] = {}
    for page in ec2.get_paginator("describe_instances").paginate(
            Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]},
                     {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}]):
        for reservation in page["Reservations"]:
            for inst in reservation["Instances"]:
                tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                name = tags.get("ha-harness/node") or tags.get("Name")
                if name:
                    found[name] = inst["InstanceId"]
    if node not in found:
        raise ConfigError(f"no instance for node {node!r} in {access.vpc_id}; nodes with instances: "
                          f"{', '.join(sorted(found)) or 'none'}")
    return found[node]
