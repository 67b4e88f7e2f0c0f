"""Steps of GEP-20's zone outage on AWS: network ACLs and credentials through the AWS API, and
the machine-API probe that observes whether machines can be created and deleted."""

from __future__ import annotations

import time
from typing import Any

from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.aws.access import AwsAccess
from harness.aws.machines import MachineApiProbe
from harness.errors import CapabilityMissing
from harness.faults.runner import FaultRunner
from harness.providers.base import Environment, EtcdCluster
from harness.steps.faults import apply_faults
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.wait import wait_for

_DENIED = ("AccessDenied", "UnauthorizedOperation", "AuthFailure")


def _subnet(cloud: AwsAccess, zone: str) -> str:
    ec2 = cloud.client("ec2")
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [cloud.vpc_id]},
                                            {"Name": "availability-zone", "Values": [cloud.az(zone)]}])["Subnets"]
    judge.holds(bool(subnets), f"a subnet of {cloud.vpc_id} in {cloud.az(zone)} for the machine probe", subnets)
    return str(sorted(subnets, key=lambda s: s["SubnetId"])[0]["SubnetId"])


@given("the region's cloud: a VPC with a subnet per zone and an instance per node")
def _(cloud: AwsAccess) -> None:
    """The cloud fixture brings it up (the local region's own, or [aws]); nothing else to do."""


@given(parsers.parse('a machine probe creates and deletes a machine in zone "{zone}" every {seconds:g} s'),
       target_fixture="machine_probe")
def _(cloud: AwsAccess, env: Environment, timeline: Timeline, machine_probes: list[Any], zone: str,
      seconds: float) -> MachineApiProbe:
    """With the machine controller's own credentials, an instance launched in the zone's subnet and
    the one before it terminated every interval (one always stands, so a deletion is tried even
    while creation fails); started once its first create and delete worked."""
    if cloud.machine_credentials is None or cloud.image_id is None:
        raise CapabilityMissing("the AWS account has no machine controller to probe: configure [aws] machine_principal, "
                                "machine_profile (its credentials) and image_id (what the probe launches)")
    probe = MachineApiProbe(cloud.client("ec2", cloud.machine_credentials, attempts=1), _subnet(cloud, env.zone(zone)),
                            cloud.image_id, run_id=f"machines-{zone}-{int(time.time() * 1000)}", clock=timeline.now,
                            interval=seconds, instance_type=cloud.instance_type, cleanup_ec2=cloud.client("ec2"),
                            keep_one=True)
    machine_probes.append(probe.start())
    wait_for(lambda: [s for s in probe.samples if s["ok"]], lambda ok: len(ok) >= 2,
             "the machine probe's first create and delete", 30)
    return probe


@when(parsers.parse("{zone}'s subnets get a deny-all network ACL and the machine credentials are revoked"),
      target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, zone: str) -> Outage:
    """GEP-20's AWS outage, as its authors did it by hand: both faults, back to back."""
    return apply_faults(etcd, faults, [("aws-zone-outage", zone, {}), ("aws-revoke-credentials", "machine-controller", {})])


@when(parsers.parse("{zone}'s subnets get a deny-all network ACL"), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, zone: str) -> Outage:
    """The zone's network alone: the machine credentials keep working."""
    return apply_faults(etcd, faults, [("aws-zone-outage", zone, {})])


@when(parsers.parse("{zone}'s subnets get a network ACL denying the other zones"), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, zone: str) -> Outage:
    """The zone's subnets get an ACL that denies only the other zones' subnets (the
    availability-zone scope): the zone keeps its own traffic."""
    return apply_faults(etcd, faults, [("aws-zone-outage", zone, {"scope": "availability-zone"})])


@when(parsers.parse('the instance of node "{node}" is {mode}'), target_fixture="outage")
def _(etcd: EtcdCluster, faults: FaultRunner, node: str, mode: str) -> Outage:
    """The node's EC2 instance `stopped`, `terminated` or `rebooted` through the AWS API."""
    kinds = {"stopped": "aws-instance-stop", "terminated": "aws-instance-terminate", "rebooted": "aws-instance-reboot"}
    judge.holds(mode in kinds, f"an instance failure mode out of {', '.join(kinds)}", mode)
    return apply_faults(etcd, faults, [(kinds[mode], node, {})])


@when("the network ACLs and the machine credentials are restored", target_fixture="outage")
def _(env: Environment, faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Both faults of GEP-20's AWS outage healed (the ACL associations put back, the access key
    active again); the return is when the last heal was done."""
    return _restore(env, faults, timeline, outage, ("aws-zone-outage", "aws-revoke-credentials"))


@when("the network ACLs are restored", target_fixture="outage")
def _(env: Environment, faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Only the ACLs: revoked credentials stay revoked."""
    return _restore(env, faults, timeline, outage, ("aws-zone-outage",))


@when("the instance is started again", target_fixture="outage")
def _(env: Environment, faults: FaultRunner, timeline: Timeline, outage: Outage) -> Outage:
    """Heals the instance's failure (a stopped instance started again)."""
    return _restore(env, faults, timeline, outage, ("aws-instance-stop", "aws-instance-terminate", "aws-instance-reboot"))


def _restore(env, faults: FaultRunner, timeline: Timeline, outage: Outage, kinds: tuple[str, ...]) -> Outage:
    chosen = [f for f in outage.faults if f.kind in kinds and f in faults.active]
    judge.holds(bool(chosen), f"a fault of {', '.join(kinds)} to restore", seen=[f.kind for f in outage.faults])
    for f in chosen:
        faults.heal(f, wait=False)  # quorum may still be catching up; later steps judge it
        if f.target in env.zones:
            outage.returned.append(f.target)
    outage.healed_at = timeline.now()  # when the last heal was done
    return outage


@then(parsers.parse('machines can be neither created nor deleted in zone "{zone}"'))
def _(machine_probe: MachineApiProbe, outage: Outage, timeline: Timeline, zone: str) -> None:
    """Every create and delete the machine probe tried since the revocation took effect was
    refused as AWS refuses an inactive key (waiting up to 30 s for one of each)."""
    revoked = max(f.effective_at for f in outage.faults)
    wait_for(lambda: _kinds(machine_probe, revoked), lambda k: {"create", "delete"} <= k,
             f"the machine probe's create and delete attempts in {zone} since the revocation", 30)
    during = [s for s in machine_probe.samples if s["start"] >= revoked]
    judge.holds(all(not s["ok"] and s["error"] in _DENIED for s in during),
                f"every create and delete in {zone} refused since the revocation", during)


def _worked_again(samples: list[dict[str, Any]], kind: str, since: float) -> tuple[float, float] | None:
    """When `kind` calls worked again after `since`, as closely as the probe's calls place it:
    after the failed call before the first that worked began, by the end of that first one."""
    calls = sorted((s for s in samples if s["kind"] == kind and s["start"] >= since), key=lambda s: s["start"])
    for i, s in enumerate(calls):
        if s["ok"]:
            return (calls[i - 1]["start"] if i else since), s["end"]
    return None


@then(parsers.parse('machines can be created and deleted in zone "{zone}" again within {seconds:g} s'))
def _(machine_probe: MachineApiProbe, outage: Outage, zone: str, seconds: float) -> None:
    """From the restore: a create and a delete that worked, the later of the two ends counted; a
    kind still failing at a call begun after the bound is a violation."""
    assert outage.healed_at is not None, "nothing was restored in this scenario"
    healed, kinds = outage.healed_at, ("create", "delete")

    def settled(samples: list[dict[str, Any]]) -> bool:
        return all(_worked_again(samples, k, healed) or any(s["kind"] == k and s["start"] >= healed + seconds
                                                            for s in samples) for k in kinds)

    samples = wait_for(lambda: machine_probe.samples, settled, f"a machine created and one deleted in {zone} after "
                       "the restore", seconds + 2 * machine_probe.interval + 30)
    back = {k: _worked_again(samples, k, healed) for k in kinds}
    judge.holds(all(back.values()), f"a machine created and one deleted in {zone} within {seconds:g} s of the restore",
                seen=[s for s in samples if s["start"] >= healed][-6:])
    took = max(w[1] for w in back.values() if w) - healed
    judge.at_most(took, seconds, f"time from the restore until a machine was created and one deleted in {zone}",
                  sampled=took - (max(w[0] for w in back.values() if w) - healed), seen=back)


def _kinds(probe: MachineApiProbe, since: float) -> set[str]:
    return {s["kind"] for s in probe.samples if s["start"] >= since}

