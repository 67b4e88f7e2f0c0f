"""Zone outage by network ACL swap: GEP-20's "empty network ACL on every subnet of a zone".

Each opted-in subnet of the zone gets a network ACL of its own, created by the harness and tagged
with the run, the subnet and the subnet's original ACL (so heal needs nothing but the run id), and
its association is replaced. All ACLs are prepared first and the associations swapped back to back,
so the zone goes dark at once. Scopes (as AWS FIS's network disruption):

- ``all``: no entry but the implicit deny-all: nothing in or out of the subnet;
- ``availability-zone``: deny to and from every other-zone subnet CIDR of the VPC, then the
  subnet's original rules (copied, like FIS's clone): traffic inside the zone and to the internet
  still flows as before, and nothing the original ACL denied is opened.

Heal moves every subnet on a harness ACL of the run back to its original ACL and deletes the
harness's ACLs; apply rolls back the same way when anything fails halfway.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Collection, Literal, Mapping, Sequence

from harness.aws.errors import AwsFaultError, aws_call, is_not_found, wrap
from harness.aws.tags import (
    TAG_FAULT,
    TAG_RUN,
    Record,
    check_run_id,
    no_record,
    not_opted_in,
    snapshot,
    tag_list,
    tag_map,
)
from harness.errors import ConfigError, FaultError, HarnessError

Scope = Literal["all", "availability-zone"]
SCOPES: tuple[str, ...] = ("all", "availability-zone")

FAULT = "zone-outage"
KIND = "aws-zone-outage"
TAG_SUBNET = "ha-harness/subnet"
TAG_ORIGINAL = "ha-harness/original-acl"
TAG_ZONE = "ha-harness/zone"

DEFAULT_RULE = 32767  # AWS's own "*" rule: deny everything not matched before
FIRST_RULE = 100
RULE_STEP = 10
MAX_ENTRIES = 20  # per direction, AWS's default quota


@dataclass(frozen=True)
class AclEntry:
    """One network ACL rule (protocol "-1": all)."""

    rule_number: int
    egress: bool
    action: Literal["allow", "deny"]
    cidr: str
    protocol: str = "-1"
    port_from: int | None = None
    port_to: int | None = None
    icmp_type: int | None = None
    icmp_code: int | None = None

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"RuleNumber": self.rule_number, "Protocol": self.protocol,
                                  "RuleAction": self.action, "Egress": self.egress,
                                  ("Ipv6CidrBlock" if ":" in self.cidr else "CidrBlock"): self.cidr}
        if self.port_from is not None or self.port_to is not None:
            params["PortRange"] = {"From": self.port_from, "To": self.port_to}
        if self.icmp_type is not None or self.icmp_code is not None:
            params["IcmpTypeCode"] = {"Type": self.icmp_type, "Code": self.icmp_code}
        return params

    def words(self) -> str:
        way = "to" if self.egress else "from"
        what = "all traffic" if self.protocol == "-1" else f"protocol {self.protocol}"
        if self.port_from is not None:
            what += f" ports {self.port_from}-{self.port_to}"
        return f"rule {self.rule_number}: {self.action} {what} {way} {self.cidr}"

    def renumbered(self, rule_number: int) -> AclEntry:
        return replace(self, rule_number=rule_number)

    @classmethod
    def from_aws(cls, entry: Mapping[str, Any]) -> AclEntry:
        ports = entry.get("PortRange") or {}
        icmp = entry.get("IcmpTypeCode") or {}
        return cls(int(entry["RuleNumber"]), bool(entry["Egress"]), entry["RuleAction"],
                   entry.get("CidrBlock") or entry.get("Ipv6CidrBlock") or "", str(entry.get("Protocol", "-1")),
                   ports.get("From"), ports.get("To"), icmp.get("Type"), icmp.get("Code"))


@dataclass(frozen=True)
class SubnetTarget:
    """A subnet the outage moves: its association now, and the entries of the ACL it moves to."""

    subnet_id: str
    cidr: str
    association_id: str
    network_acl_id: str
    name: str = ""
    entries: tuple[AclEntry, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in vars(self).items() if k != "entries"},
                "entries": [vars(e).copy() for e in self.entries]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SubnetTarget:
        return cls(**{**data, "entries": tuple(AclEntry(**e) for e in data.get("entries", ()))})


@dataclass(frozen=True)
class SkippedSubnet:
    subnet_id: str
    reason: str


@dataclass(frozen=True)
class ZoneOutagePlan:
    vpc_id: str
    availability_zone: str
    scope: Scope
    targets: tuple[SubnetTarget, ...]
    skipped: tuple[SkippedSubnet, ...] = ()
    denied_cidrs: tuple[str, ...] = ()  # scope availability-zone: the other zones' subnets

    def to_dict(self) -> dict[str, Any]:
        return {"vpc_id": self.vpc_id, "availability_zone": self.availability_zone, "scope": self.scope,
                "targets": [t.to_dict() for t in self.targets], "skipped": [vars(s).copy() for s in self.skipped],
                "denied_cidrs": list(self.denied_cidrs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ZoneOutagePlan:
        return cls(vpc_id=data["vpc_id"], availability_zone=data["availability_zone"], scope=data["scope"],
                   targets=tuple(SubnetTarget.from_dict(t) for t in data.get("targets", ())),
                   skipped=tuple(SkippedSubnet(**s) for s in data.get("skipped", ())),
                   denied_cidrs=tuple(data.get("denied_cidrs", ())))


# ---------------------------------------------------------------- plan


def plan_zone_outage(
    ec2: Any,
    vpc_id: str,
    availability_zone: str,
    scope: Scope = "all",
    subnet_filters: Mapping[str, str | Sequence[str]] | None = None,
    opted_in: Collection[str] | None = None,
    max_entries: int = MAX_ENTRIES,
) -> ZoneOutagePlan:
    """The subnets of `availability_zone` (name or zone id) in `vpc_id` that the outage would move.

    `subnet_filters` narrows them by tags ({"kubernetes.io/role/internal-elb": "1"}; a list of values
    matches any). Only subnets that opted in (tag ha-harness/chaos=allowed, or ids in `opted_in`)
    are targets; the others are listed as skipped with the reason. With scope availability-zone each
    target's new ACL denies the other zones' subnet CIDRs first, then holds a copy of the subnet's
    original rules (for AWS's default ACL: allow all), so nothing the original denied is opened.
    `max_entries` is the rules-per-direction quota. Changes nothing.
    """
    if scope not in SCOPES:
        raise ConfigError(f"unknown zone outage scope {scope!r}: use one of {', '.join(SCOPES)}")
    with aws_call(f"listing the subnets of {vpc_id}", "nothing was changed"):
        subnets = _paginate(ec2, "describe_subnets", "Subnets", Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    if not subnets:
        raise ConfigError(f"VPC {vpc_id} has no subnets (or does not exist in this account and region)")
    in_zone = [s for s in subnets if availability_zone in (s.get("AvailabilityZone"), s.get("AvailabilityZoneId"))]
    if not in_zone:
        zones = sorted({s.get("AvailabilityZone", "?") for s in subnets})
        raise ConfigError(f"no subnet of {vpc_id} is in zone {availability_zone!r}; its subnets are in {', '.join(zones)}")
    with aws_call(f"listing the network ACLs of {vpc_id}", "nothing was changed"):
        acls = _paginate(ec2, "describe_network_acls", "NetworkAcls", Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
    current = _associations(acls)
    by_id = {a["NetworkAclId"]: a for a in acls}
    harness_acls = {a["NetworkAclId"]: tag_map(a.get("Tags")) for a in acls if tag_map(a.get("Tags")).get(TAG_FAULT) == FAULT}
    zone_name = in_zone[0].get("AvailabilityZone", availability_zone)
    denied: tuple[str, ...] = ()
    if scope == "availability-zone":
        others = sorted((s for s in subnets if s.get("AvailabilityZone") != zone_name),
                        key=lambda s: (s.get("AvailabilityZone", ""), s.get("CidrBlock", ""), s["SubnetId"]))
        denied = tuple(dict.fromkeys(c for s in others for c in [s.get("CidrBlock", ""), *_ipv6_cidrs(s)] if c))

    targets: list[SubnetTarget] = []
    skipped: list[SkippedSubnet] = []
    for subnet in sorted(in_zone, key=lambda s: s["SubnetId"]):
        sid = subnet["SubnetId"]
        tags = tag_map(subnet.get("Tags"))
        reason = _filter_mismatch(tags, subnet_filters) or not_opted_in(sid, tags, opted_in)
        if reason is None and sid not in current:
            reason = "has no network ACL association"
        if reason is None and current[sid][1] in harness_acls:
            run = harness_acls[current[sid][1]].get(TAG_RUN, "?")
            reason = f"already under a zone outage of run {run} (network ACL {current[sid][1]})"
        if reason is not None:
            skipped.append(SkippedSubnet(sid, reason))
            continue
        association_id, acl_id = current[sid]
        entries = () if scope == "all" else _zone_entries(denied, by_id[acl_id], max_entries, sid)
        targets.append(SubnetTarget(sid, subnet.get("CidrBlock", ""), association_id, acl_id, tags.get("Name", ""),
                                    entries))
    return ZoneOutagePlan(vpc_id, zone_name, scope, tuple(targets), tuple(skipped), denied)


def _zone_entries(denied: Sequence[str], original: Mapping[str, Any], max_entries: int,
                  subnet: str) -> tuple[AclEntry, ...]:
    """Per direction: deny each of `denied`, then the original ACL's own rules in their order, renumbered."""
    kept = sorted((AclEntry.from_aws(e) for e in original.get("Entries") or () if int(e["RuleNumber"]) != DEFAULT_RULE),
                  key=lambda e: e.rule_number)
    entries: list[AclEntry] = []
    for egress in (False, True):
        ordered = [AclEntry(0, egress, "deny", c) for c in denied] + [e for e in kept if e.egress == egress]
        if len(ordered) > max_entries:
            raise FaultError(f"scope availability-zone for {subnet} needs {len(ordered)} "
                             f"{'outbound' if egress else 'inbound'} entries ({len(denied)} other-zone subnet CIDRs "
                             f"and {len(ordered) - len(denied)} rules of its network ACL {original['NetworkAclId']}), "
                             f"more than the {max_entries} a network ACL holds; raise the quota and pass max_entries, "
                             "or use scope all")
        entries += [e.renumbered(FIRST_RULE + RULE_STEP * i) for i, e in enumerate(ordered)]
    return tuple(entries)


def _ipv6_cidrs(subnet: Mapping[str, Any]) -> list[str]:
    return [a["Ipv6CidrBlock"] for a in subnet.get("Ipv6CidrBlockAssociationSet") or ()
            if a.get("Ipv6CidrBlock") and a.get("Ipv6CidrBlockState", {}).get("State", "associated") == "associated"]


def _filter_mismatch(tags: Mapping[str, str], filters: Mapping[str, str | Sequence[str]] | None) -> str | None:
    for key, wanted in (filters or {}).items():
        values = [wanted] if isinstance(wanted, str) else list(wanted)
        if tags.get(key) not in values:
            return f"does not match the subnet filter {key}={'|'.join(values)}"
    return None


def describe(plan: ZoneOutagePlan) -> str:
    """The plan in words, for --dry-run. Changes nothing."""
    effect = ("deny all traffic in and out of the zone's subnets" if plan.scope == "all" else
              "deny traffic between the zone's subnets and the other zones' subnets "
              f"({', '.join(plan.denied_cidrs) or 'none'}); the rest flows as the subnets' own ACLs allow")
    lines = [f"Zone outage of {plan.availability_zone} in {plan.vpc_id} (scope {plan.scope}: {effect})."]
    if not plan.targets:
        lines.append("No subnet would move: nothing to apply.")
    for t in plan.targets:
        name = f" {t.name}" if t.name else ""
        lines.append(f"  {t.subnet_id}{name} ({t.cidr}): network ACL {t.network_acl_id} "
                     f"(association {t.association_id}) -> a new network ACL holding")
        if t.entries:
            lines += [f"    {'outbound' if e.egress else 'inbound'} {e.words()}" for e in t.entries]
        else:
            lines.append("    no entry: AWS's default rule denies everything, in and out")
    for s in plan.skipped:
        lines.append(f"  skipped {s.subnet_id}: {s.reason}")
    if plan.targets:
        lines.append(f"{len(plan.targets)} network ACL(s) would be created, tagged {TAG_RUN}=<run id>, "
                     f"{TAG_FAULT}={FAULT}, {TAG_SUBNET} and {TAG_ORIGINAL}; heal puts every subnet back on its "
                     "original network ACL and deletes them.")
    lines.append("Dry run: nothing was changed.")
    return "\n".join(lines)


# ---------------------------------------------------------------- apply


def apply_zone_outage(ec2: Any, plan: ZoneOutagePlan, run_id: str, record: Record | None = None) -> dict[str, Any]:
    """Move every target subnet of `plan` onto a harness network ACL; returns what heal needs.

    `record(data)` gets the heal data so far before each change (plan first). Idempotent: applying
    the same plan again with the same run id reuses the run's ACLs and swaps nothing twice. When
    anything fails halfway, everything done is rolled back and FaultError says what failed.
    """
    run_id = check_run_id(run_id)
    record = record or no_record
    if not plan.targets:
        skipped = "; ".join(f"{s.subnet_id} {s.reason}" for s in plan.skipped) or "none"
        raise FaultError(f"zone outage of {plan.availability_zone} in {plan.vpc_id}: no subnet to move "
                         f"(skipped: {skipped}); nothing was changed")
    data: dict[str, Any] = {"kind": KIND, "run_id": run_id, "state": "planned", "plan": plan.to_dict(),
                            "acls": {}, "swapped": {}}
    record(snapshot(data))
    step = "checking the plan against the subnets' current network ACLs"
    try:
        with aws_call(f"listing the network ACLs of {plan.vpc_id}"):
            acls = _paginate(ec2, "describe_network_acls", "NetworkAcls",
                             Filters=[{"Name": "vpc-id", "Values": [plan.vpc_id]}])
        current = _associations(acls)
        ours = {tag_map(a.get("Tags")).get(TAG_SUBNET): a for a in acls if _is_ours(a, run_id)}
        for t in plan.targets:
            _check_fresh(t, current.get(t.subnet_id), ours.get(t.subnet_id))

        for t in plan.targets:
            acl = ours.get(t.subnet_id)
            if acl is None:
                step = f"creating the network ACL for {t.subnet_id}"
                data.update(state="creating-acls", pending={"create_acl_for": t.subnet_id})
                record(snapshot(data))
                acl = _create_acl(ec2, plan, t, run_id)
            data["acls"][t.subnet_id] = acl["NetworkAclId"]
            data.pop("pending", None)
            record(snapshot(data))
            step = f"writing the entries of network ACL {acl['NetworkAclId']} for {t.subnet_id}"
            _sync_entries(ec2, acl, t.entries)

        for t in plan.targets:
            acl_id = data["acls"][t.subnet_id]
            association_id, now_acl = current[t.subnet_id]
            if now_acl == acl_id:
                data["swapped"][t.subnet_id] = association_id
                continue
            step = f"replacing the network ACL association of {t.subnet_id} ({now_acl} -> {acl_id})"
            data.update(state="swapping", pending={"swap": t.subnet_id, "from": now_acl, "to": acl_id})
            record(snapshot(data))
            with aws_call(step):
                answer = ec2.replace_network_acl_association(AssociationId=association_id, NetworkAclId=acl_id)
            data["swapped"][t.subnet_id] = answer["NewAssociationId"]
            data.pop("pending", None)
            record(snapshot(data))
    except Exception as exc:
        failure = wrap(exc, step)
        what = f": {failure}" if isinstance(failure, AwsFaultError) else f" while {step}: {failure}"
        data.update(state="rolling-back")
        data.pop("pending", None)
        unrecorded = _try_record(record, data)
        try:
            said = _heal(ec2, data, run_id)
        except HarnessError as heal_exc:
            data.update(state="rollback-failed")
            unrecorded = _try_record(record, data) or unrecorded
            raise FaultError(f"zone outage of {plan.availability_zone} failed{what}; rolling back "
                             f"was incomplete: {heal_exc}; heal it with heal_zone_outage and run id {run_id}"
                             f"{unrecorded}") from exc
        data.update(state="rolled-back")
        unrecorded = _try_record(record, data) or unrecorded
        undone = f"rolled back: {'; '.join(said)}" if said else "nothing was changed"
        raise FaultError(f"zone outage of {plan.availability_zone} failed{what}; {undone}"
                         f"{unrecorded}") from exc
    data.update(state="applied")
    record(snapshot(data))
    return snapshot(data)


def _try_record(record: Record, data: dict[str, Any]) -> str:
    """Record while rolling back: a ledger that cannot be written must not stop the rollback."""
    try:
        record(snapshot(data))
    except Exception as exc:
        return f" (the heal ledger could not be updated: {type(exc).__name__}: {exc})"
    return ""


def _check_fresh(t: SubnetTarget, now: tuple[str, str] | None, ours: Mapping[str, Any] | None) -> None:
    if now is None:
        raise FaultError(f"{t.subnet_id} has no network ACL association any more (deleted?): plan again")
    if now[1] == t.network_acl_id or (ours is not None and now[1] == ours["NetworkAclId"]):
        return
    raise FaultError(f"the plan is stale: {t.subnet_id} is now on network ACL {now[1]}, planned from "
                     f"{t.network_acl_id}: plan again")


def _create_acl(ec2: Any, plan: ZoneOutagePlan, t: SubnetTarget, run_id: str) -> dict[str, Any]:
    tags = {TAG_RUN: run_id, TAG_FAULT: FAULT, TAG_SUBNET: t.subnet_id, TAG_ORIGINAL: t.network_acl_id,
            TAG_ZONE: plan.availability_zone, "Name": f"ha-harness-{FAULT}-{run_id}-{t.subnet_id}"}
    with aws_call(f"creating a network ACL for {t.subnet_id} in {plan.vpc_id}"):
        answer = ec2.create_network_acl(
            VpcId=plan.vpc_id, TagSpecifications=[{"ResourceType": "network-acl", "Tags": tag_list(tags)}])
    acl: dict[str, Any] = answer["NetworkAcl"]
    if tag_map(acl.get("Tags")).get(TAG_RUN) != run_id:  # an endpoint that ignored TagSpecifications
        with aws_call(f"tagging network ACL {acl['NetworkAclId']}"):
            ec2.create_tags(Resources=[acl["NetworkAclId"]], Tags=tag_list(tags))
        acl["Tags"] = tag_list(tags)
    return acl


def _sync_entries(ec2: Any, acl: Mapping[str, Any], wanted: Sequence[AclEntry]) -> None:
    """Make the ACL's own entries exactly `wanted`, then read them back (no stray allow survives)."""
    acl_id = acl["NetworkAclId"]
    have = {(e.rule_number, e.egress): e for e in map(AclEntry.from_aws, acl.get("Entries") or ())
            if e.rule_number != DEFAULT_RULE}
    want = {(e.rule_number, e.egress): e for e in wanted}
    for key, entry in have.items():
        if want.get(key) != entry:
            with aws_call(f"deleting {entry.words()} of network ACL {acl_id}"):
                ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=entry.rule_number, Egress=entry.egress)
    for key, entry in want.items():
        if have.get(key) != entry:
            with aws_call(f"adding {entry.words()} to network ACL {acl_id}"):
                ec2.create_network_acl_entry(NetworkAclId=acl_id, **entry.params())
    with aws_call(f"reading back network ACL {acl_id}"):
        entries = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0].get("Entries") or ()
    got = {AclEntry.from_aws(e) for e in entries if int(e["RuleNumber"]) != DEFAULT_RULE}
    if got != set(wanted):
        raise FaultError(f"network ACL {acl_id} holds {sorted(e.words() for e in got)} after writing, "
                         f"not {sorted(e.words() for e in wanted)}")


# ---------------------------------------------------------------- heal


def associations_in_place(ec2: Any, acls: Mapping[str, str]) -> dict[str, Any] | None:
    """Every subnet of `acls` (subnet id -> harness ACL id) associated with its harness ACL, as
    EC2 describes it (on AWS the API is all that can be observed of the swap); None before."""
    with aws_call("reading the subnets' network ACL associations"):
        found = _paginate(ec2, "describe_network_acls", "NetworkAcls",
                          Filters=[{"Name": "association.subnet-id", "Values": sorted(acls)}])
    now = {subnet: acl for subnet, (_, acl) in _associations(found).items()}
    return {"associations": dict(acls)} if all(now.get(s) == a for s, a in acls.items()) else None


def heal_zone_outage(ec2: Any, data_or_run_id: Mapping[str, Any] | str) -> list[str]:
    """Put every subnet on a harness ACL of the run back on its original ACL; delete the harness's ACLs.

    Works from apply's data, from any partial record of it, or from the run id alone (tags).
    Idempotent; returns what it did. Raises FaultError naming what is left when a step fails
    (after trying every other step).
    """
    data: Mapping[str, Any] = {"run_id": data_or_run_id} if isinstance(data_or_run_id, str) else data_or_run_id
    if not data.get("run_id"):
        raise ConfigError("zone outage heal data has no run_id")
    run_id = check_run_id(str(data["run_id"]))
    return _heal(ec2, data, run_id) or [
        f"zone outage of run {run_id}: nothing to heal (no network ACL tagged {TAG_RUN}={run_id})"]


def _heal(ec2: Any, data: Mapping[str, Any], run_id: str) -> list[str]:
    plan = ZoneOutagePlan.from_dict(data["plan"]) if data.get("plan") else None
    originals = {t.subnet_id: t.network_acl_id for t in plan.targets} if plan else {}
    known_ids = set((data.get("acls") or {}).values())

    with aws_call(f"finding the network ACLs of run {run_id}", "nothing was healed"):
        tagged = _paginate(ec2, "describe_network_acls", "NetworkAcls", Filters=[
            {"Name": f"tag:{TAG_RUN}", "Values": [run_id]}, {"Name": f"tag:{TAG_FAULT}", "Values": [FAULT]}])
    vpcs = sorted({a["VpcId"] for a in tagged} | ({plan.vpc_id} if plan else set()))
    said: list[str] = []
    failed: list[str] = []
    for vpc_id in vpcs:
        with aws_call(f"listing the network ACLs of {vpc_id}", "nothing was healed"):
            acls = _paginate(ec2, "describe_network_acls", "NetworkAcls",
                             Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        existing = {a["NetworkAclId"] for a in acls}
        default = next((a["NetworkAclId"] for a in acls if a.get("IsDefault")), None)
        ours = [a for a in acls if _is_ours(a, run_id) or a["NetworkAclId"] in known_ids]
        for acl in ours:
            acl_id = acl["NetworkAclId"]
            tags = tag_map(acl.get("Tags"))
            for assoc in acl.get("Associations") or ():
                subnet = assoc["SubnetId"]
                original = originals.get(subnet) or tags.get(TAG_ORIGINAL) or default
                note = ""
                if original not in existing:
                    note = f" (its original network ACL {original} is gone: VPC default)"
                    original = default
                try:
                    with aws_call(f"putting {subnet} back on network ACL {original}"):
                        ec2.replace_network_acl_association(
                            AssociationId=assoc["NetworkAclAssociationId"], NetworkAclId=original)
                    said.append(f"{subnet}: network ACL {acl_id} -> {original} (restored){note}")
                except HarnessError as exc:
                    failed.append(str(exc))
        for acl in ours:
            acl_id = acl["NetworkAclId"]
            try:
                with aws_call(f"deleting network ACL {acl_id}"):
                    ec2.delete_network_acl(NetworkAclId=acl_id)
                said.append(f"deleted network ACL {acl_id}")
            except HarnessError as exc:
                if not is_not_found(exc.__cause__ or exc):
                    failed.append(str(exc))
    if failed:
        done = "; ".join(said) or "nothing"
        raise FaultError(f"zone outage heal of run {run_id} is incomplete: {'; '.join(failed)}; done: {done}")
    return said


# ---------------------------------------------------------------- helpers


def _paginate(ec2: Any, operation: str, key: str, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in ec2.get_paginator(operation).paginate(**kwargs):
        items += page.get(key, [])
    return items


def _associations(acls: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """subnet id -> (association id, network ACL id)."""
    return {a["SubnetId"]: (a["NetworkAclAssociationId"], acl["NetworkAclId"])
            for acl in acls for a in acl.get("Associations") or () if a.get("SubnetId")}


def _is_ours(acl: Mapping[str, Any], run_id: str) -> bool:
    tags = tag_map(acl.get("Tags"))
    return tags.get(TAG_RUN) == run_id and tags.get(TAG_FAULT) == FAULT
