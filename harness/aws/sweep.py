"""Find and undo AWS fault effects that no heal ledger tracks any more (after a crash, or a ledger
left on another machine), from the harness's own tags alone.

Every AWS change the harness makes is marked before it is made, so the marks are the whole truth:

- zone outage: network ACLs of the configured VPC tagged ``ha-harness/fault=zone-outage`` and
  ``ha-harness/run``; each subnet on one goes back to the ACL its ``ha-harness/original-acl`` tag
  names (never a guess: when that ACL is not recorded or gone, the subnet stays and the sweep says
  so), then the ACL is deleted;
- credential revocation: IAM users and roles tagged ``ha-harness/run/<run id>`` (value: the method
  and the policy name or the key ids); exactly that policy is deleted or those keys re-activated;
- instance failure: instances of the VPC tagged ``ha-harness/run`` and ``ha-harness/fault=instance-*``;
  a stopped one is started again, the tags of the others removed (a termination cannot be undone).

Nothing else is touched: not a resource without those tags, not one that has not opted in
(``ha-harness/chaos=allowed`` or the allow-list), never the principal the harness calls AWS as.
"""

from __future__ import annotations

from typing import Any, Collection, Mapping

from harness.aws import credentials, instances, nacl
from harness.aws.access import AwsAccess
from harness.aws.errors import aws_call
from harness.aws.tags import TAG_FAULT, TAG_RUN, check_run_id, not_opted_in, tag_map
from harness.errors import ConfigError, FaultError, HarnessError


def sweep(access: AwsAccess, *, dry_run: bool = False, skip_runs: Collection[str] = ()) -> list[str]:
    """Undo every AWS fault effect of the harness still in place in `access`'s account and VPC; one
    line per thing undone (with `dry_run`: per thing it would undo, changing nothing). Runs in
    `skip_runs` (those a heal ledger still tracks) are left to their ledger entries.

    Raises FaultError after trying everything when an effect could not be undone, naming it and
    what was done.
    """
    skip = set(skip_runs)
    said: list[str] = []
    left: list[str] = []
    for part in (_network_acls, _principals, _instances):
        try:
            part(access, dry_run, skip, said, left)
        except HarnessError as exc:
            left.append(str(exc))
    if left:
        raise FaultError(f"the AWS sweep left fault effects in place: {'; '.join(left)}; "
                         f"done: {'; '.join(said) or 'nothing'}")
    return said


def _run_of(tags: Mapping[str, str]) -> str | None:
    """The run id the tags name, if it is one the harness could have written."""
    try:
        return check_run_id(tags.get(TAG_RUN, ""))
    except ConfigError:
        return None


def _paginate(client: Any, operation: str, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    return [item for page in client.get_paginator(operation).paginate(**kwargs) for item in page.get(key, [])]


# ---------------------------------------------------------------- network ACLs


def _network_acls(access: AwsAccess, dry_run: bool, skip: set[str], said: list[str], left: list[str]) -> None:
    ec2 = access.client("ec2")
    with aws_call(f"listing the network ACLs of {access.vpc_id}", "nothing was swept"):
        acls = _paginate(ec2, "describe_network_acls", "NetworkAcls",
                         Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]}])
    ours = [a for a in acls if tag_map(a.get("Tags")).get(TAG_FAULT) == nacl.FAULT and _run_of(tag_map(a.get("Tags")))]
    ours = [a for a in ours if _run_of(tag_map(a.get("Tags"))) not in skip]
    if not ours:
        return
    ours_ids = {a["NetworkAclId"] for a in ours}
    others = {a["NetworkAclId"] for a in acls} - ours_ids
    subnet_ids = sorted({s["SubnetId"] for a in ours for s in a.get("Associations") or ()})
    subnet_tags: dict[str, dict[str, str]] = {}
    if subnet_ids:
        with aws_call(f"reading the subnets on the harness's network ACLs in {access.vpc_id}", "nothing was swept"):
            for s in _paginate(ec2, "describe_subnets", "Subnets", SubnetIds=subnet_ids):
                subnet_tags[s["SubnetId"]] = tag_map(s.get("Tags"))
    for acl in ours:
        acl_id = acl["NetworkAclId"]
        tags = tag_map(acl.get("Tags"))
        run = _run_of(tags)
        original = tags.get(nacl.TAG_ORIGINAL)
        stuck = False
        for assoc in acl.get("Associations") or ():
            subnet = assoc["SubnetId"]
            why = not_opted_in(subnet, subnet_tags.get(subnet, {}), access.opted_in)
            if why is None and not original:
                why = f"{acl_id} does not record its original network ACL (no tag {nacl.TAG_ORIGINAL})"
            elif why is None and original not in others:
                why = f"its original network ACL {original} is gone (or is the harness's)"
            if why:
                stuck = True
                left.append(f"{subnet} stays on the zone outage network ACL {acl_id} of run {run}: {why}; "
                            f"move it onto the network ACL it should have and delete {acl_id}")
                continue
            if dry_run:
                said.append(f"would move {subnet} from network ACL {acl_id} back to {original} (zone outage of run {run})")
                continue
            try:
                with aws_call(f"putting {subnet} back on network ACL {original}"):
                    ec2.replace_network_acl_association(AssociationId=assoc["NetworkAclAssociationId"],
                                                        NetworkAclId=original)
                said.append(f"{subnet}: network ACL {acl_id} -> {original} (restored; zone outage of run {run})")
            except HarnessError as exc:
                stuck = True
                left.append(str(exc))
        if stuck:
            continue
        if dry_run:
            said.append(f"would delete network ACL {acl_id} (zone outage of run {run})")
            continue
        try:
            with aws_call(f"deleting network ACL {acl_id}"):
                ec2.delete_network_acl(NetworkAclId=acl_id)
            said.append(f"deleted network ACL {acl_id} (zone outage of run {run})")
        except HarnessError as exc:
            left.append(str(exc))


# ---------------------------------------------------------------- IAM principals


def _principals(access: AwsAccess, dry_run: bool, skip: set[str], said: list[str], left: list[str]) -> None:
    iam = access.client("iam")
    found: list[credentials.Principal] = []
    with aws_call("listing the IAM users and roles", "nothing was swept"):
        for user in _paginate(iam, "list_users", "Users"):
            found.append(credentials.Principal("user", user["UserName"], user["Arn"]))
        for role in _paginate(iam, "list_roles", "Roles"):
            found.append(credentials.Principal("role", role["RoleName"], role["Arn"]))
    for who in found:
        tags = credentials.principal_tags(iam, who)
        runs = sorted(r for k in tags if k.startswith(credentials.RUN_TAG_PREFIX)
                      and (r := _run_of({TAG_RUN: k[len(credentials.RUN_TAG_PREFIX):]})) and r not in skip)
        if not runs:
            continue
        allowed = None if access.opted_in is None else set(access.opted_in)
        why = None if allowed is not None and who.arn in allowed else not_opted_in(who.name, tags, allowed)
        if why is None:
            own = credentials.caller_is(access.client("sts"), who)
            if own:
                why = f"the harness itself calls AWS as {own}"
        for run in runs:
            value = tags[credentials.RUN_TAG_PREFIX + run]
            if why:
                left.append(f"{who.arn} carries {credentials.RUN_TAG_PREFIX}{run} ({value}) but is left alone: {why}")
                continue
            if dry_run:
                method, *rest = value.split() or [""]
                what = (f"delete inline policy {credentials.policy_name(run)}" if method == "deny-policy" else
                        f"re-activate access key(s) {' '.join(rest)}" if method == "deactivate-keys" else
                        "remove the tag (no change recorded)")
                said.append(f"would {what} of {who.arn} (credential revocation of run {run})")
                continue
            try:
                done = credentials.restore(iam, {"run_id": run, "principal": who.to_dict()})
                said += [f"{line} (credential revocation of run {run})" for line in done]
            except HarnessError as exc:
                left.append(str(exc))


# ---------------------------------------------------------------- EC2 instances


def _instances(access: AwsAccess, dry_run: bool, skip: set[str], said: list[str], left: list[str]) -> None:
    ec2 = access.client("ec2")
    faults = [instances.FAULT_PREFIX + m for m in instances.MODES]
    with aws_call(f"finding the instances the harness failed in {access.vpc_id}", "nothing was swept"):
        reservations = _paginate(ec2, "describe_instances", "Reservations", Filters=[
            {"Name": "vpc-id", "Values": [access.vpc_id]}, {"Name": f"tag:{TAG_FAULT}", "Values": faults}])
    for inst in (i for r in reservations for i in r.get("Instances", [])):
        instance_id = inst["InstanceId"]
        tags = tag_map(inst.get("Tags"))
        run = _run_of(tags)
        if run is None or run in skip:
            continue
        mode = tags[TAG_FAULT][len(instances.FAULT_PREFIX):]
        state = inst["State"]["Name"]
        why = not_opted_in(instance_id, tags, access.opted_in)
        if why:
            left.append(f"{instance_id} carries the tags of run {run} ({mode}) but is left alone: {why}")
            continue
        if state in ("terminated", "shutting-down"):
            said.append(f"{instance_id}: {state} (instance-{mode} of run {run}); that cannot be undone (replacing "
                        "the machine is the machine controller's job)")
            continue
        if mode == "terminate":  # tagged, but the termination never happened
            if dry_run:
                said.append(f"would remove the harness's tags of {instance_id} ({state}; instance-terminate of run "
                            f"{run} never happened)")
                continue
            try:
                instances.untag(ec2, instance_id)
                said.append(f"{instance_id}: {state}; the termination of run {run} never happened; its tags removed")
            except HarnessError as exc:
                left.append(str(exc))
            continue
        if dry_run:
            what = "start" if mode == "stop" and state in ("stopping", "stopped") else "remove the harness's tags of"
            said.append(f"would {what} {instance_id} ({state}; instance-{mode} of run {run})")
            continue
        try:
            done = instances.heal_instance(ec2, {"run_id": run, "instance_id": instance_id, "mode": mode})
            said += [f"{line} (instance-{mode} of run {run})" for line in done]
        except HarnessError as exc:
            left.append(str(exc))
