"""botocore's errors mapped into the harness's: constructed ClientErrors (moto never throttles) and real ones."""

from __future__ import annotations

import socket
from typing import Any

import boto3
import pytest
from aws_support import REGION, Aws, Keys
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError

from harness.aws.errors import AccessDeniedError, AwsFaultError, ThrottledError, aws_call, error_code, is_not_found, wrap
from harness.aws.nacl import plan_zone_outage
from harness.errors import ConfigError, FaultError, PrerequisiteError


def client_error(code: str, message: str = "", operation: str = "ReplaceNetworkAclAssociation") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


@pytest.mark.parametrize(("code", "kind", "words"), [
    ("AccessDenied", AccessDeniedError, "AWS denied replacing the association of subnet-1 (AccessDenied: no)"),
    ("UnauthorizedOperation", AccessDeniedError, "AWS denied replacing the association of subnet-1 (UnauthorizedOperation"),
    ("Throttling", ThrottledError, "AWS throttled replacing the association of subnet-1 (Throttling: no) after botocore's retries"),
    ("RequestLimitExceeded", ThrottledError, "AWS throttled replacing the association of subnet-1 (RequestLimitExceeded"),
    ("InvalidNetworkAclID.NotFound", AwsFaultError, "AWS refused replacing the association of subnet-1 (InvalidNetworkAclID"),
])
def test_client_errors_become_fault_errors_saying_what_and_what_was_done(code: str, kind: type, words: str) -> None:
    err = wrap(client_error(code, "no"), "replacing the association of subnet-1", "the subnets already swapped were put back")
    assert type(err) is kind and isinstance(err, FaultError)
    assert str(err).startswith(words) and str(err).endswith("; the subnets already swapped were put back")
    assert err.code == code  # type: ignore[attr-defined]


def test_missing_or_rejected_credentials_and_endpoints_are_prerequisite_errors() -> None:
    for exc, words in [
        (NoCredentialsError(), "no usable AWS credentials while listing (Unable to locate credentials): configure AWS"),
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), "cannot reach the AWS endpoint while listing"),
        (NoRegionError(), "no AWS region while listing: set AWS_DEFAULT_REGION"),
        (client_error("AuthFailure", "bad"), "AWS rejected the harness's credentials while listing (AuthFailure: bad)"),
    ]:
        err = wrap(exc, "listing")
        assert isinstance(err, PrerequisiteError) and str(err).startswith(words), str(err)


def test_helpers() -> None:
    assert error_code(client_error("Throttling")) == "Throttling" and error_code(ValueError()) is None
    assert is_not_found(client_error("InvalidSubnetID.NotFound")) and is_not_found(client_error("NoSuchEntity"))
    assert not is_not_found(client_error("AccessDenied"))
    with pytest.raises(ThrottledError) as caught, aws_call("deleting acl-1", "nothing was changed"):
        raise client_error("RequestLimitExceeded", "slow down")
    assert isinstance(caught.value.__cause__, ClientError)
    assert str(caught.value).endswith("; nothing was changed")
    assert wrap(ConfigError("x"), "y") is not None


def test_an_endpoint_nobody_listens_on_is_a_prerequisite_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    ec2 = boto3.client("ec2", region_name=REGION, endpoint_url=f"http://127.0.0.1:{port}", aws_access_key_id="AKIA0",
                       aws_secret_access_key="s", config=Config(retries={"max_attempts": 1}, connect_timeout=2))
    with pytest.raises(PrerequisiteError, match=rf"cannot reach the AWS endpoint while listing the subnets of vpc-1 "
                                                rf".*127.0.0.1:{port}.*: check the region, the endpoint_url"):
        plan_zone_outage(ec2, "vpc-1", "eu-west-1a")


def test_credentials_the_server_does_not_know_are_a_prerequisite_error(aws: Aws) -> None:
    """Authentication is enforced: a key moto never issued is rejected (the bootstrap calls are used up)."""
    stranger = aws.client("ec2", Keys("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
    with pytest.raises(PrerequisiteError, match=r"AWS rejected the harness's credentials while listing the subnets "
                                                r"of vpc-1 \(AuthFailure") as caught:
        plan_zone_outage(stranger, "vpc-1", "eu-west-1a")
    assert "wJalrXUtnFEMI" not in str(caught.value)


def test_a_wrong_secret_for_a_known_key_is_rejected(aws: Aws, operator: Keys) -> None:
    forged: Any = aws.client("ec2", Keys(operator.access_key_id, "not-the-secret"))
    with pytest.raises(ClientError, match="AuthFailure"):
        forged.describe_vpcs()


def test_moto_runs_in_its_own_process_and_nothing_here_is_patched(aws: Aws) -> None:
    import sys

    from botocore.handlers import BUILTIN_HANDLERS

    assert not any(name == "moto" or name.startswith("moto.") for name in sys.modules)
    assert not any("moto" in str(getattr(handler, "__module__", "")) for _, handler, *_ in BUILTIN_HANDLERS)
    assert aws.endpoint.startswith("http://127.0.0.1:")
