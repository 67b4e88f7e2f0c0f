"""botocore's errors wrapped at the boundary into the harness's own.

AccessDenied, throttling and other refusals become `AwsFaultError` (a `FaultError`) saying what
was refused and what the harness did about it; a missing endpoint, region or credentials (or
credentials AWS rejects) become `PrerequisiteError` saying what to configure.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)

from harness.errors import FaultError, HarnessError, PrerequisiteError

ACCESS_DENIED = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedAccess"})
THROTTLED = frozenset({"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
                       "RequestThrottled", "RequestThrottledException", "SlowDown"})
# The caller's own credentials are unknown, malformed or expired: a configuration problem.
CREDENTIALS_REJECTED = frozenset({"AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch", "ExpiredToken",
                                  "ExpiredTokenException", "UnrecognizedClientException", "InvalidAccessKeyId"})
NOT_FOUND_SUFFIXES = (".NotFound", ".Malformed")

CONFIGURE_CREDENTIALS = ("configure AWS credentials (AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                         "or an instance role) for the session the harness builds its clients from")


class AwsFaultError(FaultError):
    """AWS refused a call the harness made. `code` is AWS's error code, `doing` what was refused."""

    def __init__(self, message: str, *, code: str | None = None, doing: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.doing = doing


class AccessDeniedError(AwsFaultError):
    """AWS denied the call (AccessDenied, UnauthorizedOperation)."""


class ThrottledError(AwsFaultError):
    """AWS throttled the call (Throttling, RequestLimitExceeded), after botocore's own retries."""


def error_code(exc: BaseException) -> str | None:
    """AWS's error code of a ClientError (None for anything else)."""
    if isinstance(exc, ClientError):
        return str(exc.response.get("Error", {}).get("Code") or "") or None
    return None


def is_not_found(exc: BaseException) -> bool:
    code = error_code(exc) or ""
    return code == "NoSuchEntity" or code.endswith(NOT_FOUND_SUFFIXES) or code.startswith("InvalidID")


def wrap(exc: BaseException, doing: str, outcome: str = "") -> HarnessError:
    """The harness error for `exc`, raised while `doing` (e.g. "replacing the network ACL association of
    subnet-1"); `outcome` says what the harness did about it (e.g. "nothing was changed")."""
    tail = f"; {outcome}" if outcome else ""
    if isinstance(exc, HarnessError):
        return exc
    if isinstance(exc, ClientError):
        code = error_code(exc) or "Unknown"
        message = str(exc.response.get("Error", {}).get("Message") or "").strip()
        detail = f"{code}: {message}" if message else code
        if code in ACCESS_DENIED:
            return AccessDeniedError(f"AWS denied {doing} ({detail}): grant the harness's principal this action{tail}",
                                     code=code, doing=doing)
        if code in THROTTLED:
            return ThrottledError(f"AWS throttled {doing} ({detail}) after botocore's retries: retry later, "
                                  f"or raise the client's retry limit{tail}", code=code, doing=doing)
        if code in CREDENTIALS_REJECTED:
            return PrerequisiteError(f"AWS rejected the harness's credentials while {doing} ({detail}): "
                                     f"{CONFIGURE_CREDENTIALS}{tail}")
        return AwsFaultError(f"AWS refused {doing} ({detail}){tail}", code=code, doing=doing)
    if isinstance(exc, EndpointConnectionError):
        return PrerequisiteError(f"cannot reach the AWS endpoint while {doing} ({exc}): check the region, the "
                                 f"endpoint_url the clients are built with and the network{tail}")
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return PrerequisiteError(f"no usable AWS credentials while {doing} ({exc}): {CONFIGURE_CREDENTIALS}{tail}")
    if isinstance(exc, NoRegionError):
        return PrerequisiteError(f"no AWS region while {doing}: set AWS_DEFAULT_REGION or build the clients with "
                                 f"region_name{tail}")
    if isinstance(exc, BotoCoreError):
        return AwsFaultError(f"{doing} failed in botocore ({type(exc).__name__}: {exc}){tail}", doing=doing)
    return AwsFaultError(f"{doing} failed ({type(exc).__name__}: {exc}){tail}", doing=doing)


@contextmanager
def aws_call(doing: str, outcome: str = "") -> Iterator[None]:
    """Wrap botocore's errors raised inside into the harness's (see `wrap`)."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise wrap(exc, doing, outcome) from exc
