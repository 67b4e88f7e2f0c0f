"""The local cloud: the region as a VPC in a real AWS API (moto), and what that API says applied to it.

Everything goes through plain boto3 against the moto endpoint, or through harness.aws's fault
functions; the effect is observed with real etcd requests across the region's zones.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config as BotoConfig
from botocore.exceptions import ClientError

import harness.kube
from harness import netns
from harness.aws.access import AwsAccess, Credentials
from harness.aws.nacl import apply_zone_outage, heal_zone_outage, plan_zone_outage
from harness.config import load_config
from harness.errors import EnvironmentStateError, HarnessError
from harness.faults.runner import FaultRunner
from harness.processes import ProcessRecord
from harness.providers.base import Cloud
from harness.providers.local.cloud.account import TAG_NODE, TAG_ZONE, start_cloud, start_reconciler, status_path, workdir
from harness.providers.local.seed.kubernetes import start_for
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.local.network.uplink import ensure_uplink, uplink_address, uplink_up
from harness.providers.state import state_path
from harness.timeline import Timeline
from harness.wait import wait_for
from tests.integration.conftest import reachable


NAME, PREFIX = "cl", "10.93"  # a region and subnets of this module's own


@pytest.fixture(scope="module")
def region() -> LocalRegion:
    return LocalRegion(load_config(overrides={"region.name": NAME, "region.subnet_prefix": PREFIX}))


@pytest.fixture(scope="module")
def cloud(region: LocalRegion) -> Iterator[tuple[LocalEnvironment, AwsAccess]]:
    region.down()
    env = region.up()
    try:
        yield env, region.cloud(env)
    finally:
        region.down()


def ec2_client(access: AwsAccess, credentials: Credentials | None = None, service: str = "ec2") -> Any:
    c = credentials or access.credentials
    return boto3.client(service, region_name=access.region, endpoint_url=access.endpoint_url,
                        aws_access_key_id=c.access_key_id, aws_secret_access_key=c.secret_access_key,
                        config=BotoConfig(retries={"max_attempts": 1}))


def eventually(env: LocalEnvironment, member: str, via_zone: str, wanted: bool) -> None:
    way = "reachable" if wanted else "unreachable"
    wait_for(lambda: reachable(env, member, via_zone), lambda ok: ok == wanted,
             f"{member} {way} from {via_zone}", timeout=5.0)


def association(ec2: Any, subnet_id: str) -> tuple[str, str]:
    acls = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])["NetworkAcls"]
    assoc = next(a for acl in acls for a in acl["Associations"] if a["SubnetId"] == subnet_id)
    return assoc["NetworkAclAssociationId"], assoc["NetworkAclId"]


def reconciler_status(env: LocalEnvironment) -> dict[str, Any]:
    return dict(json.loads(status_path(env.config, NAME).read_text()))


def test_the_region_is_a_vpc_with_a_subnet_per_zone_and_an_instance_per_node(
        region: LocalRegion, cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, access = cloud
    assert isinstance(env, Cloud) and env.aws() == access
    assert region.cloud(env) == access  # started once, on first use
    with pytest.raises(EnvironmentStateError, match="region 'cl' already has its local cloud"):
        start_cloud(env)
    assert dict(access.zones) == {"zone-a": "eu-west-1a", "zone-b": "eu-west-1b", "zone-c": "eu-west-1c"}
    assert stat.S_IMODE(os.stat(state_path(env.config.state_dir, NAME)).st_mode) == 0o600  # it holds keys
    ec2 = ec2_client(access)
    subnets = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]}])["Subnets"]
    assert sorted((s["CidrBlock"], s["AvailabilityZone"], {t["Key"]: t["Value"] for t in s["Tags"]}[TAG_ZONE])
                  for s in subnets) == [(f"{PREFIX}.1.0/24", "eu-west-1a", "zone-a"),
                                        (f"{PREFIX}.2.0/24", "eu-west-1b", "zone-b"),
                                        (f"{PREFIX}.3.0/24", "eu-west-1c", "zone-c")]
    found = ec2.describe_instances(Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]}])["Reservations"]
    instances = {tags[TAG_NODE]: (i["PrivateIpAddress"], i["Placement"]["AvailabilityZone"], i["ImageId"], tags)
                 for r in found for i in r["Instances"] for tags in [{t["Key"]: t["Value"] for t in i["Tags"]}]}
    assert sorted(instances) == [n.name for n in env.nodes]
    for node in env.nodes:
        address, az, image, tags = instances[node.name]
        assert (address, az, image) == (node.address, access.az(node.zone), access.image_id)
        assert tags["Name"] == node.name and tags["ha-harness/chaos"] == "allowed"
    # Authentication is enforced: the machine controller may use EC2 and nothing else; strangers nothing.
    assert access.machine_credentials is not None
    ec2_client(access, access.machine_credentials).describe_vpcs()
    with pytest.raises(ClientError, match="AccessDenied"):
        ec2_client(access, access.machine_credentials, "iam").list_users()
    with pytest.raises(ClientError, match="InvalidClientTokenId|AuthFailure|not valid"):
        ec2_client(access, Credentials("AKIAUNKNOWN000000000", "nope")).describe_vpcs()


def test_the_api_serves_on_the_uplink_for_the_harness_and_every_zone(
        cloud: tuple[LocalEnvironment, AwsAccess], monkeypatch: pytest.MonkeyPatch) -> None:
    env, access = cloud
    address = uplink_address(env.refresh())  # made by the cloud: no seed runs here
    assert address is not None and access.endpoint_url.startswith(f"http://{address}:")
    assert ensure_uplink(env) == address and uplink_address(env.refresh()) == address  # asked again: the same one
    fetch = f"import urllib.request; urllib.request.urlopen('{access.endpoint_url}/moto-api/', timeout=2).close()"
    for zone in env.zones:  # from inside a node, through the router
        netns.ns_run(env.names.node_ns(env.nodes_in(zone)[0].name), [sys.executable, "-c", fetch], timeout=15)
    # A seed that fails to start leaves the uplink it did not make to the cloud serving on it.
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise HarnessError("no control plane today")

    monkeypatch.setattr(harness.kube, "start_control_plane", fail)
    with pytest.raises(HarnessError, match="no control plane today"):
        start_for(env)
    assert uplink_up(env) == address
    ec2_client(access).describe_vpcs()


def test_the_cloud_says_who_asked_it_what_and_when(cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    """Its request log, as CloudTrail: each AWS call answered, with its action, key and status."""
    env, access = cloud
    since = time.time()
    ec2_client(access).describe_vpcs()
    elb = ec2_client(access, service="elb")
    elb.create_load_balancer(LoadBalancerName="logged", AvailabilityZones=["eu-west-1a"],
                             Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 80, "InstancePort": 30080}])
    with pytest.raises(ClientError):
        ec2_client(access, access.machine_credentials, "iam").list_users()  # refused: logged with its status
    elb.delete_load_balancer(LoadBalancerName="logged")
    reconciler = ("DescribeNetworkAcls", "DescribeInstances", "DescribeLoadBalancers")  # its own polls, same key
    seen = [(r["service"], r["action"], r["key"], r["status"]) for r in env.cloud_requests(since)
            if r["action"] not in reconciler]
    admin, machine = access.credentials.access_key_id, access.machine_credentials.access_key_id  # type: ignore[union-attr]
    assert seen == [("ec2", "DescribeVpcs", admin, 200), ("elasticloadbalancing", "CreateLoadBalancer", admin, 200),
                    ("iam", "ListUsers", machine, 403), ("elasticloadbalancing", "DeleteLoadBalancer", admin, 200)]
    assert env.cloud_requests(time.time() + 60) == []


def test_a_new_classic_load_balancer_has_the_health_check_aws_gives_it(cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    """moto leaves it out; the AWS cloud controller manager dereferences it."""
    _, access = cloud
    elb = ec2_client(access, service="elb")
    elb.create_load_balancer(LoadBalancerName="checked", AvailabilityZones=["eu-west-1a"],
                             Listeners=[{"Protocol": "TCP", "LoadBalancerPort": 443, "InstancePort": 31443}])
    try:
        check = elb.describe_load_balancers(LoadBalancerNames=["checked"])["LoadBalancerDescriptions"][0]["HealthCheck"]
        assert check == {"Target": "TCP:31443", "Interval": 30, "Timeout": 5, "UnhealthyThreshold": 2,
                         "HealthyThreshold": 10}
    finally:
        elb.delete_load_balancer(LoadBalancerName="checked")


def test_a_deny_all_acl_on_zone_a_cuts_it_off_until_the_original_is_back(
        cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, access = cloud
    ec2 = ec2_client(access)
    subnet = env.state["cloud"]["subnets"]["zone-a"]
    deny_all = ec2.create_network_acl(VpcId=access.vpc_id)["NetworkAcl"]["NetworkAclId"]
    assoc, original = association(ec2, subnet)
    swapped = ec2.replace_network_acl_association(AssociationId=assoc, NetworkAclId=deny_all)["NewAssociationId"]
    try:
        eventually(env, "etcd-0", "zone-b", False)
        assert reachable(env, "etcd-0", "zone-a")  # inside the subnet: ACLs do not apply
        assert reachable(env, "etcd-1", "zone-c")  # the other zones are untouched
        assert reconciler_status(env)["acls"]["zone-a"]["acl_id"] == deny_all
    finally:
        ec2.replace_network_acl_association(AssociationId=swapped, NetworkAclId=original)
    eventually(env, "etcd-0", "zone-b", True)
    ec2.delete_network_acl(NetworkAclId=deny_all)
    assert reconciler_status(env)["acls"]["zone-a"]["acl_id"] == original


def test_port_ranges_are_destination_ports(cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, access = cloud
    ec2 = ec2_client(access)
    subnet = env.state["cloud"]["subnets"]["zone-a"]
    acl = ec2.create_network_acl(VpcId=access.vpc_id)["NetworkAcl"]["NetworkAclId"]
    # Into zone-a: nothing to etcd's client port from zone-b; everything else from anywhere. Out: all.
    ec2.create_network_acl_entry(NetworkAclId=acl, RuleNumber=100, Protocol="6", RuleAction="deny", Egress=False,
                                 CidrBlock=f"{PREFIX}.2.0/24", PortRange={"From": 2379, "To": 2379})
    for egress in (False, True):
        ec2.create_network_acl_entry(NetworkAclId=acl, RuleNumber=200, Protocol="-1", RuleAction="allow",
                                     Egress=egress, CidrBlock="0.0.0.0/0")
    assoc, original = association(ec2, subnet)
    swapped = ec2.replace_network_acl_association(AssociationId=assoc, NetworkAclId=acl)["NewAssociationId"]
    try:
        eventually(env, "etcd-0", "zone-b", False)
        assert reachable(env, "etcd-0", "zone-c")
        env.wait_members(members=["etcd-0", "etcd-1", "etcd-2"])  # peers (port 2380) still talk across zones
    finally:
        ec2.replace_network_acl_association(AssociationId=swapped, NetworkAclId=original)
    eventually(env, "etcd-0", "zone-b", True)
    ec2.delete_network_acl(NetworkAclId=acl)


@pytest.mark.parametrize("scope", ["all", "availability-zone"])
def test_the_harness_zone_outage_functions_blackhole_the_zone(
        cloud: tuple[LocalEnvironment, AwsAccess], scope: str) -> None:
    env, access = cloud
    ec2 = ec2_client(access)
    plan = plan_zone_outage(ec2, access.vpc_id, access.az("zone-a"), scope)  # type: ignore[arg-type]
    assert [t.subnet_id for t in plan.targets] == [env.state["cloud"]["subnets"]["zone-a"]]
    data = apply_zone_outage(ec2, plan, f"it-{scope}")
    try:
        eventually(env, "etcd-0", "zone-b", False)
        assert not reachable(env, "etcd-0", "zone-c")
        assert reachable(env, "etcd-0", "zone-a") and reachable(env, "etcd-1", "zone-c")
        assert reconciler_status(env)["acls"]["zone-a"]["acl_id"] == data["acls"][plan.targets[0].subnet_id]
    finally:
        heal_zone_outage(ec2, data)
    eventually(env, "etcd-0", "zone-b", True)
    env.wait_healthy()


def test_a_stopped_instance_is_a_dead_node_until_it_runs_again(cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, access = cloud
    ec2 = ec2_client(access)
    instance = env.state["cloud"]["instances"]["zone-b-1"]  # etcd-1's node
    ec2.stop_instances(InstanceIds=[instance])
    try:
        wait_for(lambda: env.refresh() and env.member_running("etcd-1"), lambda running: not running,
                 "etcd-1 killed with its node", timeout=5.0)
        # etcd-1 may go before the node's other processes: the kill is done once none is left.
        wait_for(lambda: netns.netns_pids(env.names.node_ns("zone-b-1")), lambda pids: pids == [],
                 "every process of zone-b-1 gone", timeout=5.0)
        assert not reachable(env, "etcd-1", "zone-b")
    finally:
        ec2.start_instances(InstanceIds=[instance])
    wait_for(lambda: env.refresh() and env.member_running("etcd-1"), bool, "etcd-1 back with its node", timeout=5.0)
    env.wait_healthy()
    assert reconciler_status(env)["killed"] == {}


def test_a_restarted_reconciler_neither_kills_twice_nor_forgets_to_restore(
        region: LocalRegion, cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, access = cloud
    ec2 = ec2_client(access)
    instance = env.state["cloud"]["instances"]["zone-c-1"]  # etcd-2's node
    ec2.stop_instances(InstanceIds=[instance])
    wait_for(lambda: reconciler_status(env)["killed"], lambda k: "zone-c-1" in k, "zone-c-1 killed", timeout=5.0)
    old = ProcessRecord.from_dict(env.refresh()["cloud"]["processes"]["reconciler"])
    with pytest.raises(EnvironmentStateError, match="already runs"):
        start_reconciler(env)
    os.kill(old.pid, signal.SIGKILL)  # a crash: no chance to tidy up
    wait_for(old.alive, lambda alive: not alive, "the old reconciler gone", timeout=5.0)
    assert region.cloud(env) == access  # and a dead one is started again, from its memory
    new = ProcessRecord.from_dict(env.state["cloud"]["processes"]["reconciler"])
    assert new.pid != old.pid and new.alive()
    ec2.start_instances(InstanceIds=[instance])
    wait_for(lambda: env.refresh() and env.member_running("etcd-2"), bool, "etcd-2 back with its node", timeout=5.0)
    env.wait_healthy()
    said = [line.split(" ", 2)[2] for line in Path(new.log).read_text().splitlines() if "zone-c-1: " in line]
    # Killed once (by the old reconciler: its log line may be lost to the SIGKILL; or, when the
    # SIGKILL came between recording the kill and finishing it, by the new one), restored once
    # (by the new one, from the old one's memory), nothing more.
    killed, finished, restored = (f"zone-c-1: instance {instance} is stopped: node killed",
                                  f"zone-c-1: instance {instance} is still stopped but its node runs processes: node killed",
                                  f"zone-c-1: instance {instance} runs again: node restored")
    assert said in ([killed, restored], [restored], [finished, restored])
    assert reconciler_status(env)["killed"] == {}


def test_a_terminated_instance_heals_as_a_new_instance_for_its_node(cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    """The local cloud has no machine controller: the fault's heal gives the node a new instance."""
    env, access = cloud
    ec2 = ec2_client(access)
    old = env.refresh()["cloud"]["instances"]["zone-a-1"]  # etcd-0's node
    runner = FaultRunner(env, Timeline())
    fault = runner.inject("aws-instance-terminate", "zone-a-1")
    try:
        wait_for(lambda: env.refresh() and env.member_running("etcd-0"), lambda running: not running,
                 "etcd-0 killed with its node", timeout=5.0)
        assert env.replace_terminated_instance(env.state["cloud"]["instances"]["zone-b-1"]) is None  # it runs
    finally:
        runner.heal(fault)
    new = env.refresh()["cloud"]["instances"]["zone-a-1"]
    assert new != old and env.member_running("etcd-0")
    env.wait_healthy()
    tags = ec2.describe_instances(InstanceIds=[new])["Reservations"][0]["Instances"][0]["Tags"]
    assert {"Key": TAG_NODE, "Value": "zone-a-1"} in tags
    assert reconciler_status(env)["killed"] == {}
    assert env.replace_terminated_instance(old) is None  # no node's instance any more: healed once


def test_the_reconciler_outlives_an_api_that_fails(region: LocalRegion, cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, _ = cloud
    moto = ProcessRecord.from_dict(env.state["cloud"]["processes"]["moto"])
    os.killpg(moto.pid, signal.SIGKILL)
    wait_for(lambda: reconciler_status(env)["error"], bool, "the reconciler to see the API fail", timeout=5.0)
    time.sleep(0.5)
    reconciler = ProcessRecord.from_dict(env.state["cloud"]["processes"]["reconciler"])
    assert reconciler.alive() and "could not connect" in reconciler_status(env)["error"].lower()
    assert all(env.member_running(m.name) for m in env.members)  # no API is not "every instance stopped"
    assert reachable(env, "etcd-0", "zone-b")
    with pytest.raises(EnvironmentStateError, match=r"API server \(moto\) of region 'cl' is gone"):
        region.cloud(env)


def test_down_leaves_no_process_file_or_table(region: LocalRegion, cloud: tuple[LocalEnvironment, AwsAccess]) -> None:
    env, _ = cloud
    records = [ProcessRecord.from_dict(r) for r in env.refresh()["cloud"]["processes"].values()]
    # What a writer of the state file leaves when it is killed between writing and renaming (the
    # reconciler SIGKILLed above may have been one).
    path = state_path(env.config.state_dir, NAME)
    half = path.with_name(f".{path.name}.tmp999999-999999")
    half.write_text('{"members"')
    removed = region.down()
    assert f"half-written state {half}" in removed
    assert "cloud work directory" in " ".join(removed)
    assert not any(r.alive() for r in records)
    assert not workdir(env.config, NAME).exists() and not path.exists()
    assert not list(path.parent.glob(f".{path.name}*"))
    assert not [ns for ns in netns.list_netns() if ns.startswith(f"{NAME}-")]
    # The uplink's veth pair went with the router: nothing of it is left out here.
    assert netns.run(["ip", "-o", "link", "show", env.names.uplink], check=False) == ""
    assert region.down() == []
