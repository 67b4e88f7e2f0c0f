"""The local cloud: the local region presented through a real AWS API, and kept in step with it.

A moto server (its own process, authentication enforced, Inactive access keys refused as on AWS:
cloud/server.py) listens on the harness's end of the region's uplink (network/uplink.py), so the harness
reaches it directly and each zone through the router, as a VPC reaches the AWS APIs (its S3
holds etcd backups). It holds a VPC with one subnet per zone (the zone's own CIDR) and one EC2
instance per node (the node's address); a reconciler (another process, a region component like
kwok) applies what that API says to the region: each subnet's network ACL becomes nftables rules
in the router, a stopped instance a killed node. So the boto3 code that would run against real
AWS (harness/aws) really blackholes a zone here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import netns
from harness.aws.access import AwsAccess, Credentials
from harness.aws.errors import aws_call
from harness.aws.tags import CHAOS_ALLOWED, TAG_CHAOS, tag_list
from harness.config import Config
from harness.errors import ConfigError, EnvironmentStateError, HarnessError, PrerequisiteError, WaitAbandoned, WaitTimeout
from harness.kube import loadbalancer
from harness.processes import ProcessRecord, log_tail, spawn, terminate
from harness.providers.local.cloud.acl import TABLE, remove_ruleset
from harness.providers.local.network.uplink import ensure_uplink
from harness.wait import wait_for, wait_serving

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

TAG_NODE = "ha-harness/node"
TAG_ZONE = "ha-harness/zone"
ADMIN = "ha-harness-admin"
MACHINE_CONTROLLER = "machine-controller"
IMAGE_ID = "ami-0a0b0c0d0e0f00001"  # the one image moto is given (loading its default AMIs takes seconds)
BOOTSTRAP_CALLS = 3  # create_user, put_user_policy, create_access_key of the admin: unauthenticated
# The AWS region whose availability zones the zones map onto, by how many zones there are.
AWS_REGIONS = (("eu-west-1", 3), ("us-east-1", 6))
ALLOW = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ALLOW_EC2 = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ec2:*", "Resource": "*"}]}
_IMAGE = {"ami_id": IMAGE_ID, "state": "available", "public": True, "owner_id": "801119661308",
          "image_location": "amazon/ha-harness-node", "root_device_type": "ebs", "root_device_name": "/dev/sda1",
          "description": "ha-harness local region node", "image_type": "machine", "architecture": "x86_64",
          "name": "ha-harness-node", "virtualization_type": "hvm", "hypervisor": "xen", "sriov": "simple"}


def workdir(config: Config, region: str) -> Path:
    return config.state_dir / region / "cloud"


def log_dir(config: Config, region: str) -> Path:
    """The region's log directory: `down` keeps what is in it (kubernetes.keep_logs)."""
    return config.state_dir / region / "logs"


def request_log_path(wd: Path) -> Path:
    """Every AWS request the cloud answered, one JSON line each (server.log_requests)."""
    return wd / "requests.jsonl"


def changed_path(wd: Path) -> Path:
    """Touched by the cloud after each request that may change what the reconciler applies."""
    return wd / "changed"


def requests_since(env: RegionRecord, since: float = 0.0) -> list[dict[str, Any]]:
    """The cloud's AWS requests answered at or after `since` (unix time), oldest first."""
    record = env.state.get("cloud")
    if not record:
        raise EnvironmentStateError(f"region {env.spec.name!r} runs no local cloud (`harness up --cloud`)")
    path = request_log_path(Path(record["workdir"]))
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line being written as we read
        if entry["t"] >= since:
            out.append(entry)
    return out


def status_path(config: Config, region: str) -> Path:
    """The reconciler's memory and what it last applied (reconciler.Status)."""
    return workdir(config, region) / "status.json"


def availability_zones(zones: tuple[str, ...]) -> tuple[str, dict[str, str]]:
    """The AWS region and each zone's availability zone, by zone index (zone-a -> eu-west-1a, ...)."""
    for region, count in AWS_REGIONS:
        if len(zones) <= count:
            return region, {z: f"{region}{'abcdef'[i]}" for i, z in enumerate(zones)}
    raise ConfigError(f"the local cloud maps zones onto one AWS region's availability zones, at most "
                                f"{AWS_REGIONS[-1][1]}; this region has {len(zones)} zones")


def start_cloud(env: RegionRecord) -> AwsAccess:
    """Start the moto server and the reconciler, populate the account; record it all in the state.

    Returns the harness's access (its own admin credentials). On any failure everything started so
    far is removed again and the error says what failed.
    """
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        raise PrerequisiteError("the local cloud needs moto in server mode, a dependency of the harness: "
                                "pip install 'moto[server]' (or reinstall the harness)")
    region, azs = availability_zones(env.zones)
    try:
        vpc_cidr = str(ipaddress.IPv4Network(f"{env.spec.subnet_prefix}.0.0/16"))
    except ValueError:
        raise ConfigError(f"subnet prefix {env.spec.subnet_prefix!r} does not make a VPC CIDR "
                                    "(two octets, like 10.77)") from None
    wd = workdir(env.config, env.spec.name)

    def claim(state: dict[str, Any]) -> None:
        if state.get("cloud"):
            raise EnvironmentStateError(f"region {env.spec.name!r} already has its local cloud (or a start of it "
                                        "crashed): run `harness down` to remove it")
        state["cloud"] = {"workdir": str(wd), "processes": {}}

    env.update(claim)  # recorded before anything exists: `down` finds a half-made cloud too
    try:
        wd.mkdir(parents=True, exist_ok=True)
        endpoint = _start_moto(env, wd)
        # The keys go into the state file: make it the owner's alone first (write_state keeps the mode).
        os.chmod(env.path, 0o600)
        access = _populate(env, endpoint, region, azs, vpc_cidr)
        start_reconciler(env)
        return access
    except BaseException:
        stop_cloud(env.config, env.spec.name, env.refresh())
        env.update(lambda st: st.pop("cloud", None))
        raise


def _remember(env: RegionRecord, name: str, record: ProcessRecord) -> None:
    """In the state and in the work directory: `down` finds the process even if the state file is lost."""
    env.update(lambda st: st["cloud"]["processes"].update({name: record.to_dict()}))
    path = workdir(env.config, env.spec.name) / "processes.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(known | {name: record.to_dict()}, indent=1))


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _start_moto(env: RegionRecord, wd: Path) -> str:
    # The harness reaches moto's address, one of its own, through loopback: that starts down in the
    # namespace a rootless harness makes itself.
    if ",UP" not in netns.run(["ip", "-o", "link", "show", "lo"], check=False):
        netns.run(["ip", "link", "set", "lo", "up"], timeout=env.config.timeouts.command)
    address = ensure_uplink(env)
    images = wd / "images.json"
    images.write_text(json.dumps([_IMAGE]))
    # No AWS_* of ours leaks in; the first BOOTSTRAP_CALLS calls are unauthenticated, then every call
    # must be signed with a key moto issued, and is checked against its IAM policies.
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    child_env |= {"INITIAL_NO_AUTH_ACTION_COUNT": str(BOOTSTRAP_CALLS), "MOTO_AMIS_PATH": str(images)}
    log = log_dir(env.config, env.spec.name) / "cloud-moto.log"
    for _ in range(3):  # the free port may be taken before moto binds it
        port = _free_port(address)
        # moto's server behind a check that refuses Inactive access keys, as AWS does (server.py).
        popen, record = spawn("moto", [sys.executable, "-m", "harness.providers.local.cloud.server",
                                       "-H", address, "-p", str(port), f"--request-log={request_log_path(wd)}",
                                       f"--changed={changed_path(wd)}"],
                              log, child_env)
        _remember(env, "moto", record)
        endpoint = f"http://{address}:{port}"
        if _serving(endpoint, popen, env.config.timeouts.region_up):
            return endpoint
        terminate(record, 2.0, popen)
    raise EnvironmentStateError(f"the moto server did not start; its log ({log}):\n{log_tail(log)}")


def _serving(endpoint: str, popen: subprocess.Popen[bytes], timeout: float) -> bool:
    def answers() -> str | None:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()  # not an AWS action: not counted
            return None
        except OSError as e:
            return str(e)

    try:
        wait_serving(answers, lambda: None if popen.poll() is None else f"exited ({popen.returncode})",
                     f"the moto server at {endpoint}", timeout, interval=0.05)
        return True
    except (WaitAbandoned, WaitTimeout):
        return False


def _populate(env: RegionRecord, endpoint: str, region: str, azs: Mapping[str, str], vpc_cidr: str) -> AwsAccess:
    """The harness's admin, the machine controller, the VPC, subnets and instances."""
    bootstrap = AwsAccess(region, "", azs, Credentials("bootstrap", "bootstrap"), endpoint).client("iam", attempts=1)
    with aws_call("creating the local cloud's admin user"):
        bootstrap.create_user(UserName=ADMIN)
        bootstrap.put_user_policy(UserName=ADMIN, PolicyName="admin", PolicyDocument=json.dumps(ALLOW))
        key = bootstrap.create_access_key(UserName=ADMIN)["AccessKey"]
    admin = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    iam = AwsAccess(region, "", azs, admin, endpoint).client("iam")
    opted_in = {TAG_CHAOS: CHAOS_ALLOWED}
    with aws_call(f"creating the machine controller user {MACHINE_CONTROLLER}"):
        iam.create_user(UserName=MACHINE_CONTROLLER, Tags=tag_list(opted_in))
        iam.put_user_policy(UserName=MACHINE_CONTROLLER, PolicyName="ec2", PolicyDocument=json.dumps(ALLOW_EC2))
        key = iam.create_access_key(UserName=MACHINE_CONTROLLER)["AccessKey"]
    machine = Credentials(key["AccessKeyId"], key["SecretAccessKey"])

    name = env.spec.name
    ec2 = AwsAccess(region, "", azs, admin, endpoint).client("ec2")
    with aws_call(f"creating the VPC {vpc_cidr}"):
        vpc_id = ec2.create_vpc(CidrBlock=vpc_cidr, TagSpecifications=_tags("vpc", {"Name": f"ha-harness-{name}"})
                                )["Vpc"]["VpcId"]
    subnets: dict[str, str] = {}
    for zone in env.zones:
        cidr = env.names.subnet(zone)
        with aws_call(f"creating the subnet of {zone} ({cidr}, {azs[zone]})"):
            subnets[zone] = ec2.create_subnet(
                VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=azs[zone], TagSpecifications=_tags(
                    "subnet", opted_in | {TAG_ZONE: zone, "Name": f"{name}-{zone}"}))["Subnet"]["SubnetId"]
    instances: dict[str, str] = {}
    for node in env.nodes:
        with aws_call(f"creating the instance of node {node.name} ({node.address})"):
            instances[node.name] = ec2.run_instances(
                ImageId=IMAGE_ID, InstanceType="t3.micro", MinCount=1, MaxCount=1, SubnetId=subnets[node.zone],
                PrivateIpAddress=node.address, TagSpecifications=_tags(
                    "instance", opted_in | {TAG_NODE: node.name, "Name": node.name}))["Instances"][0]["InstanceId"]
    access = AwsAccess(region, vpc_id, azs, admin, endpoint, MACHINE_CONTROLLER, machine, IMAGE_ID)
    env.update(lambda st: st["cloud"].update(access=access.to_dict(), subnets=subnets, instances=instances))
    return access


def replace_instance(env: RegionRecord, node: str) -> str:
    """A new instance for a node whose own was terminated (by a machine controller that gave up on
    it): the reconciler brings the node back once it runs. moto keeps a terminated instance's
    address taken, so the new one gets any address of the subnet; the node keeps its own."""
    access = cloud_access(env.refresh())
    if access is None:
        raise EnvironmentStateError(f"region {env.spec.name!r} has no populated local cloud")
    zone = env.node(node).zone
    ec2 = access.client("ec2")
    with aws_call(f"creating a new instance for node {node}"):
        instance_id = str(ec2.run_instances(
            ImageId=IMAGE_ID, InstanceType="t3.micro", MinCount=1, MaxCount=1, SubnetId=env.state["cloud"]["subnets"][zone],
            TagSpecifications=_tags("instance", {TAG_CHAOS: CHAOS_ALLOWED, TAG_NODE: node, "Name": node})
        )["Instances"][0]["InstanceId"])
    env.update(lambda st: st["cloud"]["instances"].update({node: instance_id}))
    return instance_id


def replace_terminated(env: RegionRecord, nodes: Collection[str]) -> dict[str, tuple[str, str]]:
    """Each of `nodes` whose instance was terminated on a new instance, and running again once the
    reconciler restored it: node -> (old instance, new instance)."""
    state = env.refresh()
    access = cloud_access(state)
    instances = {n: i for n, i in (state.get("cloud") or {}).get("instances", {}).items() if n in nodes}
    if access is None or not instances:
        return {}
    with aws_call("reading the states of the nodes' instances"):
        states = {i["InstanceId"]: i["State"]["Name"] for r in access.client("ec2").describe_instances(
            InstanceIds=list(instances.values()))["Reservations"] for i in r["Instances"]}
    replaced = {n: (old, replace_instance(env, n)) for n, old in instances.items()
                if states.get(old) in ("shutting-down", "terminated")}

    def still_killed() -> list[str]:
        try:
            killed = json.loads(status_path(env.config, env.spec.name).read_text()).get("killed") or {}
        except (OSError, ValueError):
            return list(replaced)
        return [n for n in replaced if n in killed]

    if replaced:
        wait_for(still_killed, lambda left: not left, f"the cloud reconciler to bring back {', '.join(replaced)}",
                 env.config.timeouts.member_ready, interval=0.25)
    return replaced


def _tags(resource: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource, "Tags": tag_list(tags)}]


def cloud_access(state: Mapping[str, Any]) -> AwsAccess | None:
    """The harness's access to the region's local cloud, once it is populated."""
    record = state.get("cloud") or {}
    return AwsAccess.from_dict(record["access"]) if record.get("access") else None


def start_reconciler(env: RegionRecord, interval: float = 0.15) -> ProcessRecord:
    """Start the reconciler (again: it picks up its memory from the status file) and wait for its
    first pass, so the region matches the API when this returns."""
    old = (env.refresh().get("cloud") or {}).get("processes", {}).get("reconciler")
    if old and ProcessRecord.from_dict(old).alive():
        raise EnvironmentStateError(f"the reconciler of region {env.spec.name!r} already runs (pid {old['pid']})")
    status = status_path(env.config, env.spec.name)
    log = log_dir(env.config, env.spec.name) / "cloud-reconciler.log"
    popen, record = spawn("cloud-reconciler", [
        sys.executable, "-m", "harness.providers.local.reconciler", f"--state-dir={env.config.state_dir}",
        f"--data-dir={env.config.data_dir}", f"--region={env.spec.name}", f"--interval={interval}",
        f"--command-timeout={env.config.timeouts.command}"], log,
        {k: v for k, v in os.environ.items() if not k.startswith("AWS_")})  # it calls with the state's keys only
    _remember(env, "reconciler", record)

    def observe() -> tuple[int | None, float | None]:
        seen = json.loads(status.read_text()) if status.exists() else {}
        return popen.poll(), seen.get("ready_at") if seen.get("pid") == popen.pid else None

    try:
        exited, _ = wait_for(observe, lambda o: o[0] is not None or o[1] is not None,
                             "the cloud reconciler's first pass", env.config.timeouts.region_up)
    except HarnessError as exc:
        raise EnvironmentStateError(f"{exc}; its log ({log}):\n{log_tail(log)}") from None
    if exited is not None:
        raise EnvironmentStateError(f"the cloud reconciler exited ({exited}); its log ({log}):\n{log_tail(log)}")
    return record


def stop_cloud(config: Config, region: str, state: Mapping[str, Any] | None) -> list[str]:
    """Stop the reconciler and moto (from the state or, after a lost state file, the work directory),
    drop the ACL table from the router and remove the work directory. Returns what it removed."""
    wd = workdir(config, region)
    records: dict[str, dict[str, Any]] = {}
    path = wd / "processes.json"
    if path.exists():
        with contextlib.suppress(ValueError):  # half-written by a crash: the state's records remain
            records |= json.loads(path.read_text())
    records |= ((state or {}).get("cloud") or {}).get("processes", {})
    removed: list[str] = []
    # The reconciler first: it must not act on a region that is being taken apart.
    for name in sorted(records, key=lambda n: n != "reconciler"):
        record = ProcessRecord.from_dict(records[name])
        if record.alive():
            terminate(record, 3.0)
            removed.append(f"{name} process {record.pid}")
    # The ELBs' HAProxies (harness.providers.local.cloud.elb), from the reconciler's status.
    with contextlib.suppress(OSError, ValueError):
        for name, elb in (json.loads(status_path(config, region).read_text()).get("elbs") or {}).items():
            loadbalancer.stop(elb["record"])
            removed.append(f"load balancer {name} ({elb['record'].get('netns')})")
    router = f"{region}-router"
    if router in netns.list_netns():
        tables = netns.ns_run(router, ["nft", "list", "tables"], check=False)
        if f"table ip {TABLE}" in tables:
            netns.nft(router, remove_ruleset(TABLE), config.timeouts.command)
            removed.append(f"nft table ip {TABLE} in {router}")
    if wd.exists():
        shutil.rmtree(wd, ignore_errors=True)
        removed.append(f"cloud work directory {wd}")
    return removed


def ensure_cloud(env: RegionRecord) -> AwsAccess:
    """The region's cloud, started on first use; a reconciler that died is started again."""
    if env.refresh().get("cloud") is None:
        return start_cloud(env)
    access = cloud_access(env.state)
    processes = env.state["cloud"].get("processes", {})
    if access is None or "reconciler" not in processes:
        raise EnvironmentStateError(f"the local cloud of region {env.spec.name!r} is being started by another "
                                    "process, or a start of it crashed: run `harness down` if nothing is starting it")
    if not ProcessRecord.from_dict(processes["moto"]).alive():
        raise EnvironmentStateError(f"the local cloud's API server (moto) of region {env.spec.name!r} is gone, and "
                                    "with it the cloud's state: run `harness down` and bring the region up again")
    if not ProcessRecord.from_dict(processes["reconciler"]).alive():
        start_reconciler(env)  # it resumes from its memory in the status file
    return access
