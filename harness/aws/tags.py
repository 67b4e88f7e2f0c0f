"""Tags the harness reads (opt-in) and writes (what it created, for heal by run id); shared helpers."""

from __future__ import annotations

import copy
import re
from typing import Any, Callable, Collection, Iterable, Mapping

from harness.errors import ConfigError

TAG_RUN = "ha-harness/run"
TAG_FAULT = "ha-harness/fault"
TAG_CHAOS = "ha-harness/chaos"
CHAOS_ALLOWED = "allowed"

# Heal data goes to the caller's ledger before each change: a JSON-able dict.
Record = Callable[[dict[str, Any]], None]

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@=+-]{0,63}")


def check_run_id(run_id: str) -> str:
    """`run_id` if it fits in tags, IAM policy names and resource names; ConfigError otherwise."""
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise ConfigError(f"run id {run_id!r} is not usable in AWS names and tags: use 1-64 characters of "
                          "letters, digits and _.@=+- starting with a letter or digit")
    return run_id


def tag_map(tags: Iterable[Mapping[str, str]] | None) -> dict[str, str]:
    """AWS's [{"Key": k, "Value": v}, ...] as {k: v}."""
    return {t["Key"]: t.get("Value", "") for t in tags or ()}


def tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def not_opted_in(resource: str, tags: Mapping[str, str], allowed: Collection[str] | None) -> str | None:
    """None when `resource` opted in (tag ha-harness/chaos=allowed, or listed in `allowed`), else why not."""
    if tags.get(TAG_CHAOS) == CHAOS_ALLOWED or (allowed is not None and resource in allowed):
        return None
    listed = "" if allowed is None else " and is not in the allow-list"
    return f"not opted in: no tag {TAG_CHAOS}={CHAOS_ALLOWED}{listed}"


def snapshot(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy: what `record` receives or a function returns never aliases the working state."""
    return copy.deepcopy(data)


def no_record(data: dict[str, Any]) -> None:
    """The `record` of callers that keep no ledger."""
