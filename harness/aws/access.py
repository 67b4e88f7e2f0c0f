"""How an environment reaches its cloud: the one thing AWS faults and probes ask an environment for.

The local region answers with its local cloud (a moto server it populated); the cluster provider
with the account and VPC of its configuration. Secrets are kept out of repr, so neither a failing
assert nor a log line prints them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from botocore.config import Config as BotoConfig

if TYPE_CHECKING:
    from harness.config import AwsSettings


@dataclass(frozen=True)
class Credentials:
    """An access key pair, or (all None) the default chain / a named profile."""

    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    profile: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key,
                "session_token": self.session_token, "profile": self.profile}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Credentials:
        data = data or {}
        return cls(data.get("access_key_id"), data.get("secret_access_key"), data.get("session_token"), data.get("profile"))


@dataclass(frozen=True)
class AwsAccess:
    """An account, a region, a VPC and the zones' availability zones, as the harness uses them.

    `credentials` are the harness's own; `machine_credentials` those of the machine controller
    (what credential revocation revokes and the machine-API probe calls with). `zones` maps the
    environment's zone names to availability zones; `image_id` is what the machine probe launches.
    """

    region: str
    vpc_id: str
    zones: Mapping[str, str]
    credentials: Credentials = Credentials()
    endpoint_url: str | None = None  # None: the real AWS endpoints
    machine_principal: str | None = None  # user or role name / ARN
    machine_credentials: Credentials | None = None
    image_id: str | None = None
    instance_type: str = "t3.micro"
    opted_in: tuple[str, ...] | None = None  # explicit allow-list of resource ids/names besides the tag

    def az(self, zone: str) -> str:
        return self.zones.get(zone, zone)

    def client(self, service: str, credentials: Credentials | None = None, attempts: int = 3) -> Any:
        c = credentials or self.credentials
        return session(c.profile).client(
            service, region_name=self.region, endpoint_url=self.endpoint_url,
            aws_access_key_id=c.access_key_id, aws_secret_access_key=c.secret_access_key,
            aws_session_token=c.session_token,
            config=BotoConfig(retries={"max_attempts": attempts, "mode": "standard"}, connect_timeout=5, read_timeout=20))

    def to_dict(self) -> dict[str, Any]:
        return {"region": self.region, "vpc_id": self.vpc_id, "zones": dict(self.zones),
                "credentials": self.credentials.to_dict(), "endpoint_url": self.endpoint_url,
                "machine_principal": self.machine_principal,
                "machine_credentials": self.machine_credentials.to_dict() if self.machine_credentials else None,
                "image_id": self.image_id, "instance_type": self.instance_type,
                "opted_in": list(self.opted_in) if self.opted_in is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AwsAccess:
        mc = data.get("machine_credentials")
        opted = data.get("opted_in")
        return cls(data["region"], data["vpc_id"], dict(data.get("zones") or {}),
                   Credentials.from_dict(data.get("credentials")), data.get("endpoint_url"),
                   data.get("machine_principal"), Credentials.from_dict(mc) if mc else None,
                   data.get("image_id"), data.get("instance_type") or "t3.micro",
                   tuple(opted) if opted is not None else None)


_LOADER: Any = None
_LOADER_LOCK = threading.Lock()


def session(profile: str | None = None) -> Any:
    """A new boto3 session (credentials and profiles are a session's own) that reads the API
    models through the process's one loader: each session loading its own holds the GIL 60-100 ms per
    client here (the EC2 model's JSON), a stall every probe thread waits out; shared, a client takes
    18 ms (measured with a 5 ms canary thread beside it)."""
    global _LOADER
    import boto3
    import botocore.loaders
    import botocore.session

    with _LOADER_LOCK:
        if _LOADER is None:
            _LOADER = botocore.loaders.create_loader()
    core = botocore.session.Session()
    core.register_component("data_loader", _LOADER)
    return boto3.session.Session(botocore_session=core, profile_name=profile)


def from_settings(settings: AwsSettings) -> AwsAccess | None:
    """The account of an [aws] configuration (credentials from boto3's chain or its profiles); None
    when none is configured. Zones not mapped are taken as availability zone names (on AWS a node's
    topology.kubernetes.io/zone label is one)."""
    if not settings.configured:
        return None
    assert settings.region is not None and settings.vpc_id is not None
    machine = Credentials(profile=settings.machine_profile) if settings.machine_profile else None
    return AwsAccess(settings.region, settings.vpc_id, dict(settings.zones), Credentials(profile=settings.profile),
                     settings.endpoint_url, settings.machine_principal, machine, settings.image_id,
                     settings.instance_type, settings.opted_in)
