"""The local cloud's AWS API: moto's server, refusing requests signed with an Inactive access key.

moto 5.x authenticates a request by its key id and signature but never looks at the key's status,
so `aws-revoke-credentials --method deactivate-keys` would change nothing there. AWS refuses such a
key: EC2 with 401 AuthFailure, IAM and STS with 403 InvalidClientTokenId. A small WSGI middleware
in front of moto's application does the same, from moto's own IAM state (this process's).

moto also creates a classic load balancer without a health check, where AWS gives it one (TCP to
its first listener's instance port, every 30 s, 5 s timeout, 2 failures down, 10 passes up); the
AWS cloud controller manager dereferences it. The same middleware gives it AWS's default.

With `--request-log FILE` every AWS request is also written there as one JSON line when answered:
{"t": unix time, "service", "action", "key": the access key id it was signed with, "status"}, what
AWS CloudTrail would say of the calls (who changed a load balancer, how often). With `--changed
FILE`, that file's modification time is set after each EC2 or ELB request that may change
something (an action not named Describe*, Get* or List*), whoever made it: the reconciler looks
at it to apply a change at once while polling slowly when nothing changes.

    python -m harness.providers.local.cloud.server -H 127.0.0.1 -p PORT [--request-log FILE] [--changed FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any, Callable
from urllib.parse import parse_qs

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]

# SigV4: "AWS4-HMAC-SHA256 Credential=AKID/20250101/eu-west-1/ec2/aws4_request, SignedHeaders=..., ..."
_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]*/[^/]*/([^/,\s]+)/")

EC2_REFUSAL = ("401 Unauthorized", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>"
               "<Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials"
               "</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>")
QUERY_REFUSAL = ("403 Forbidden", "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code>"
                 "<Message>The security token included in the request is invalid.</Message></Error>"
                 "<RequestId>{request_id}</RequestId></ErrorResponse>")


def signer(environ: Environ) -> tuple[str, str] | None:
    """The access key id a request is signed with and the service it names (SigV4 header, or a
    presigned URL's X-Amz-Credential); None for an unsigned request."""
    match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match:
        return match.group(1), match.group(2)
    credential = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential", [""])[0].split("/")
    return (credential[0], credential[3]) if len(credential) >= 5 else None


def refuse_inactive_keys(app: WsgiApp, inactive: Callable[[str], bool]) -> WsgiApp:
    """`app`, but a request signed with a key `inactive` names is refused as AWS refuses it."""
    def middleware(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        signed = signer(environ)
        if signed is None or not inactive(signed[0]):
            return app(environ, start_response)
        status, body = EC2_REFUSAL if signed[1] == "ec2" else QUERY_REFUSAL
        data = body.format(request_id=uuid.uuid4()).encode()
        start_response(status, [("Content-Type", "text/xml"), ("Content-Length", str(len(data)))])
        return [data]
    return middleware


def action_of(environ: Environ, body: bytes) -> str:
    """The API action a request asks for: the query protocols' Action (EC2, ELB, IAM, STS), the
    JSON protocols' X-Amz-Target, else the REST method and path (S3)."""
    for source in (body.decode(errors="replace"), environ.get("QUERY_STRING", "")):
        action = parse_qs(source).get("Action")
        if action:
            return action[0]
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return target.rsplit(".", 1)[-1]
    return f"{environ.get('REQUEST_METHOD', '')} {environ.get('PATH_INFO', '')}"


def _body(environ: Environ) -> bytes:
    """The request's body, left readable again for the application behind."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def default_health_checks(app: WsgiApp, backends: Callable[[], Iterable[Any]]) -> WsgiApp:
    """`app`, giving a classic load balancer it just created AWS's default health check;
    `backends`: moto's ELB backends (of every account and region)."""
    from moto.elb.models import FakeHealthCheck

    def middleware(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        signed = signer(environ)
        if signed is None or signed[1] != "elasticloadbalancing":
            return app(environ, start_response)
        query = parse_qs(_body(environ).decode(errors="replace"))
        answer = app(environ, start_response)
        if query.get("Action") == ["CreateLoadBalancer"] and query.get("Version") == ["2012-06-01"]:
            name, port = query["LoadBalancerName"][0], query.get("Listeners.member.1.InstancePort", ["80"])[0]
            for backend in backends():
                lb = backend.load_balancers.get(name)
                if lb is not None and lb.health_check is None:
                    lb.health_check = FakeHealthCheck("5", "10", "2", "30", f"TCP:{port}")
        return answer
    return middleware


def moto_elb_backends() -> Iterable[Any]:
    from moto.elb.models import elb_backends

    return [backend for regions in list(elb_backends.values()) for backend in list(regions.values())]


def log_requests(app: WsgiApp, path: str) -> WsgiApp:
    """`app`, writing each signed request it answers to `path` (JSON lines, appended)."""
    lock = threading.Lock()

    def middleware(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        signed = signer(environ)
        if signed is None:  # moto's own API (/moto-api/), health checks: not AWS calls
            return app(environ, start_response)
        body = _body(environ)
        seen: dict[str, str] = {}

        def recording(status: str, headers: Any, *rest: Any) -> Any:
            seen["status"] = status
            return start_response(status, headers, *rest)

        answer = app(environ, recording)
        line = json.dumps({"t": round(time.time(), 6), "service": signed[1], "action": action_of(environ, body),
                           "key": signed[0], "status": int(seen.get("status", "0").split()[0] or 0)})
        with lock, open(path, "a") as out:
            out.write(line + "\n")
        return answer
    return middleware


# What the reconciler applies: network ACLs and instances (EC2), classic load balancers (ELB).
WATCHED_SERVICES = frozenset({"ec2", "elasticloadbalancing"})
READ_ONLY_ACTIONS = ("Describe", "Get", "List")


def mark_changes(app: WsgiApp, path: str) -> WsgiApp:
    """`app`, touching `path` once it answered an EC2 or ELB request that may change something."""
    def middleware(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        signed = signer(environ)
        if signed is None or signed[1] not in WATCHED_SERVICES:
            return app(environ, start_response)
        body = _body(environ)
        answer = app(environ, start_response)
        if not action_of(environ, body).startswith(READ_ONLY_ACTIONS):
            with open(path, "a"):  # an explicit time: the file system's own clock may tick coarser
                os.utime(path, ns=(time.time_ns(), time.time_ns()))
        return answer
    return middleware


def inactive_in_moto(key_id: str) -> bool:
    """Whether moto's IAM (of any account it holds) has `key_id` as a user's Inactive access key."""
    from moto.iam.models import iam_backends

    for partitions in list(iam_backends.values()):
        for backend in list(partitions.values()):
            for user in list(backend.users.values()):
                for key in list(user.access_keys):
                    if key.access_key_id == key_id:
                        return bool(key.status == "Inactive")
    return False


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m harness.providers.local.cloud.server", description=__doc__)
    p.add_argument("-H", "--host", default="127.0.0.1")
    p.add_argument("-p", "--port", type=int, required=True)
    p.add_argument("--request-log", default=None, help="write every AWS request answered to this file (JSON lines)")
    p.add_argument("--changed", default=None, help="touch this file after each EC2 or ELB request that may change "
                                                   "something")
    args = p.parse_args(argv)
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    # As moto.server does: its URLs (e.g. SQS queues) name the port; a clean exit on terminate.
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    moto = DomainDispatcherApplication(create_backend_app)
    moto.debug = True  # type: ignore[attr-defined]
    app = default_health_checks(refuse_inactive_keys(moto, inactive_in_moto), moto_elb_backends)
    if args.changed:
        app = mark_changes(app, args.changed)
    if args.request_log:
        app = log_requests(app, args.request_log)
    run_simple(args.host, args.port, app, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
