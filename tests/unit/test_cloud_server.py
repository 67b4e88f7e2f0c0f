"""The local cloud's server refuses a request signed with an Inactive access key as AWS does
(moto alone accepts it), and passes every other request to moto untouched. Pure WSGI: a small
application stands in for moto; tests/aws shows it against moto's IAM through boto3."""

from __future__ import annotations

from typing import Any

import io
from pathlib import Path

from harness.providers.local.cloud.server import mark_changes, refuse_inactive_keys, signer

DATE = "20250101T000000Z"


def signed(key: str, service: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"AWS4-HMAC-SHA256 Credential={key}/20250101/eu-west-1/{service}/aws4_request, "
                                  "SignedHeaders=host;x-amz-date, Signature=abc", "QUERY_STRING": ""}


def call(app: Any, environ: dict[str, Any]) -> tuple[str, bytes]:
    got: list[str] = []
    body = b"".join(app(environ, lambda status, headers: got.append(status)))
    return got[0], body


def moto(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "text/xml")])
    return [b"<moto/>"]


APP = refuse_inactive_keys(moto, lambda key: key == "AKIAOFF")


def test_an_inactive_key_is_refused_per_service_as_aws_does() -> None:
    status, body = call(APP, signed("AKIAOFF", "ec2"))
    assert status == "401 Unauthorized" and b"<Code>AuthFailure</Code>" in body and b"<Errors>" in body
    for service in ("iam", "sts"):
        status, body = call(APP, signed("AKIAOFF", service))
        assert status == "403 Forbidden" and b"<Code>InvalidClientTokenId</Code>" in body


def test_active_keys_and_unsigned_requests_reach_moto() -> None:
    assert call(APP, signed("AKIAON", "ec2")) == ("200 OK", b"<moto/>")
    assert call(APP, {"PATH_INFO": "/moto-api/", "QUERY_STRING": ""}) == ("200 OK", b"<moto/>")


def test_the_signer_is_read_from_the_header_or_a_presigned_url() -> None:
    assert signer(signed("AKIAX", "iam")) == ("AKIAX", "iam")
    presigned = {"QUERY_STRING": f"X-Amz-Credential=AKIAY%2F20250101%2Feu-west-1%2Fsts%2Faws4_request&X-Amz-Date={DATE}"}
    assert signer(presigned) == ("AKIAY", "sts")
    assert signer({"QUERY_STRING": "Action=DescribeInstances"}) is None


def test_a_request_that_may_change_ec2_or_elb_touches_the_changed_file(tmp_path: Path) -> None:
    marker = tmp_path / "changed"
    app = mark_changes(moto, str(marker))

    def request(service: str, action: str) -> None:
        body = f"Action={action}&Version=2016-11-15".encode()
        environ = signed("AKIAON", service) | {"CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body)}
        assert call(app, environ) == ("200 OK", b"<moto/>")

    for service, action in (("ec2", "DescribeNetworkAcls"), ("elasticloadbalancing", "DescribeLoadBalancers"),
                            ("ec2", "GetConsoleOutput"), ("iam", "UpdateAccessKey"), ("s3", "PutObject")):
        request(service, action)
    assert not marker.exists()
    request("ec2", "ReplaceNetworkAclAssociation")
    first = marker.stat().st_mtime_ns
    request("elasticloadbalancing", "RegisterInstancesWithLoadBalancer")
    assert marker.stat().st_mtime_ns > first
