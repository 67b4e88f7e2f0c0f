"""A real AWS API for the AWS faults: the local cloud's server (moto in server mode, Inactive access
keys refused as on AWS), in its own process, with authentication on.

The server is started with INITIAL_NO_AUTH_ACTION_COUNT=3: the first three API calls go through
unauthenticated (creating the admin user, its policy and its access key); every call after that must
be signed with a key moto knows and is checked against the caller's IAM policies. boto3 reaches it
over HTTP with `endpoint_url`; nothing in this process is patched.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("boto3", reason="the AWS fault tests need boto3 and moto[server]")
# moto is only looked for, never imported here: importing it adds its stubber to botocore's handlers.
if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
    pytest.skip("the AWS fault tests need moto[server]", allow_module_level=True)

import boto3  # noqa: E402
from aws_support import (  # noqa: E402
    ALLOW_ALL,
    BOOTSTRAP_CALLS,
    OPTED_IN,
    REGION,
    AccountEnv,
    Aws,
    Keys,
    World,
    allow,
    unique,
)
from botocore.config import Config  # noqa: E402

from harness.config import AwsSettings  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(BOOTSTRAP_CALLS)
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "harness.providers.local.cloud.server", "-H", "127.0.0.1",
                                 "-p", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()  # not an AWS action: not counted
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def aws(moto_endpoint: str) -> Aws:
    """The admin user, made with the only unauthenticated calls the server allows."""
    bootstrap = boto3.client("iam", region_name=REGION, endpoint_url=moto_endpoint, aws_access_key_id="bootstrap",
                             aws_secret_access_key="bootstrap", config=Config(retries={"max_attempts": 1}))
    bootstrap.create_user(UserName="admin")
    bootstrap.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=json.dumps(ALLOW_ALL))
    key = bootstrap.create_access_key(UserName="admin")["AccessKey"]
    return Aws(moto_endpoint, Keys(key["AccessKeyId"], key["SecretAccessKey"]))


@pytest.fixture(scope="session")
def operator(aws: Aws) -> Keys:
    """The harness's own principal: what the faults are called with."""
    return aws.user("ha-harness-operator", allow("ec2:*", "iam:*", "sts:*"), opted_in=False)


@pytest.fixture(scope="session")
def image_id(aws: Aws) -> str:
    """One of moto's AMIs (DescribeImages takes seconds there: asked once)."""
    return str(aws.client("ec2").describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"])


@pytest.fixture
def world(aws: Aws, image_id: str) -> World:
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    layout = {"a1": ("eu-west-1a", "10.0.1.0/24", True), "a2": ("eu-west-1a", "10.0.4.0/24", True),
              "a3": ("eu-west-1a", "10.0.7.0/24", False), "b": ("eu-west-1b", "10.0.2.0/24", True),
              "c": ("eu-west-1c", "10.0.3.0/24", True)}
    subnets: dict[str, str] = {}
    for name, (zone, cidr, opted) in layout.items():
        tags = [{"Key": "Name", "Value": f"world-{name}"}, {"Key": "role", "Value": "nodes"}] + (OPTED_IN if opted else [])
        subnets[name] = ec2.create_subnet(
            VpcId=vpc_id, CidrBlock=cidr, AvailabilityZone=zone,
            TagSpecifications=[{"ResourceType": "subnet", "Tags": tags}])["Subnet"]["SubnetId"]
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["NetworkAcls"]
    default_acl = next(a["NetworkAclId"] for a in acls if a["IsDefault"])
    custom_acl = ec2.create_network_acl(VpcId=vpc_id)["NetworkAcl"]["NetworkAclId"]
    for egress in (False, True):
        ec2.create_network_acl_entry(NetworkAclId=custom_acl, RuleNumber=100, Protocol="-1", RuleAction="allow",
                                     Egress=egress, CidrBlock="0.0.0.0/0")
    assoc = next(a["NetworkAclAssociationId"] for acl in acls for a in acl["Associations"]
                 if a["SubnetId"] == subnets["a1"])
    ec2.replace_network_acl_association(AssociationId=assoc, NetworkAclId=custom_acl)
    instances = {}
    for name in ("a1", "b", "c", "a3"):
        tags = [{"Key": "Name", "Value": f"node-{name}"}] + (OPTED_IN if name != "a3" else [])
        instances[name] = ec2.run_instances(
            ImageId=image_id, InstanceType="t3.micro", MinCount=1, MaxCount=1, SubnetId=subnets[name],
            TagSpecifications=[{"ResourceType": "instance", "Tags": tags}])["Instances"][0]["InstanceId"]
    controller = unique("machine-controller")
    keys = aws.user(controller, allow("ec2:*"))
    return World(vpc_id, subnets, {n: c for n, (_, c, _) in layout.items()}, custom_acl, default_acl, instances,
                 image_id, controller, keys)


@pytest.fixture
def account(aws: Aws, operator: Keys, world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AccountEnv:
    # Credentials from boto3's own chain, as on a real account; the endpoint is the only difference.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", operator.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", operator.secret)
    settings = AwsSettings(region="eu-west-1", vpc_id=world.vpc_id, endpoint_url=aws.endpoint,
                           zones={"zone-a": "eu-west-1a", "zone-b": "eu-west-1b", "zone-c": "eu-west-1c"},
                           machine_principal=world.controller)
    return AccountEnv(tmp_path / "cluster-account.json", settings)
