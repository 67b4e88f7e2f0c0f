"""Helpers of the AWS fault tests: keys, clients, policies, the world's shape, live associations."""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config

from harness.aws.access import AwsAccess, from_settings
from harness.config import AwsSettings, load_config
from harness.topology import Node, Topology
from harness.providers.state import StateBacked, write_state

REGION = "eu-west-1"
ZONES = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
BOOTSTRAP_CALLS = 3  # create_user, put_user_policy, create_access_key of the admin
ALLOW_ALL = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
OPTED_IN = [{"Key": "ha-harness/chaos", "Value": "allowed"}]
_names = itertools.count(1)


def policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(*actions: str) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": list(actions), "Resource": "*"}


def deny(*actions: str) -> dict[str, Any]:
    return {"Effect": "Deny", "Action": list(actions), "Resource": "*"}


def unique(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}"


@dataclass(frozen=True)
class Keys:
    """An access key pair; the secret is kept out of repr so failing asserts never print it."""

    access_key_id: str
    secret: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


@dataclass
class Aws:
    endpoint: str
    admin: Keys

    def client(self, service: str, keys: Keys | None = None, **config: Any) -> Any:
        keys = keys or self.admin
        return boto3.client(
            service, region_name=REGION, endpoint_url=self.endpoint, aws_access_key_id=keys.access_key_id,
            aws_secret_access_key=keys.secret, aws_session_token=keys.session_token,
            config=Config(retries={"max_attempts": 1}, **config))

    def user(self, name: str, *statements: dict[str, Any], opted_in: bool = True) -> Keys:
        """A new IAM user with an inline policy of `statements` and one access key."""
        iam = self.client("iam")
        iam.create_user(UserName=name, Tags=OPTED_IN if opted_in else [])
        iam.put_user_policy(UserName=name, PolicyName="base", PolicyDocument=policy(*statements))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return Keys(key["AccessKeyId"], key["SecretAccessKey"])


@dataclass
class World:
    """One VPC over three zones.

    zone a: subnet a1 (opted in, on a custom ACL), a2 (opted in, on the VPC's default ACL),
            a3 (not opted in); zones b and c: one opted-in subnet each. One opted-in instance in
            a1, b, c; one instance not opted in in a3. A machine controller user allowed EC2.
    """

    vpc_id: str
    subnets: dict[str, str]  # a1 a2 a3 b c -> subnet id
    cidrs: dict[str, str]
    custom_acl: str
    default_acl: str
    instances: dict[str, str]  # a1 b c a3 -> instance id
    image_id: str
    controller: str
    controller_keys: Keys

    def zone_subnets(self, *names: str) -> list[str]:
        return [self.subnets[n] for n in names]


def associations(ec2: Any, vpc_id: str) -> dict[str, str]:
    """subnet id -> network ACL id, as AWS has it now."""
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["NetworkAcls"]
    return {a["SubnetId"]: acl["NetworkAclId"] for acl in acls for a in acl["Associations"]}


def acl_ids(ec2: Any, vpc_id: str) -> set[str]:
    acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["NetworkAcls"]
    return {acl["NetworkAclId"] for acl in acls}


class AccountEnv(StateBacked, Topology):
    """What the cluster provider hands the faults on a real account: zones, a ledger, an [aws] account."""

    provider = "cluster"

    def __init__(self, path: Path, settings: AwsSettings) -> None:
        self.path = path
        self.state = {"faults": []}
        if not path.exists():
            write_state(path, self.state)
        self.config = load_config(overrides={"paths.state_dir": str(path.parent), "provider.name": "cluster"})
        self.settings = settings
        self.zones = ("zone-a", "zone-b", "zone-c")
        self.nodes = tuple(Node(f"{z}-1", z, f"{z}-1") for z in self.zones)
        self.members = ()

    def aws(self) -> AwsAccess | None:
        return from_settings(self.settings)

    def kube(self) -> None:
        return None

    def health(self) -> dict[str, Any]:
        return {}

    def wait_healthy(self, timeout: float | None = None) -> object:
        return {}

    def sweep(self) -> list[str]:
        return []
