"""Observations that first wait for the members to converge on one revision."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from harness.etcd_gateway import Status
from harness.probes.etcd import keys_per_member
from harness.providers.base import EtcdCluster
from harness.wait import wait_for


def _one_revision(statuses: dict[str, Status | str]) -> bool:
    return (all(isinstance(s, Status) for s in statuses.values())
            and len({s.revision for s in statuses.values()}) == 1)  # type: ignore[union-attr]


def converged(env: EtcdCluster, timeout: float) -> dict[str, Status | str]:
    """Wait until every member answers with the same revision (writes have stopped)."""
    return wait_for(env.status, _one_revision, "every member at the same revision", timeout)


def converged_keys(env: EtcdCluster, prefix: str, timeout: float) -> dict[str, list[str] | str]:
    converged(env, timeout)
    return keys_per_member(env, prefix)


def settled_revisions(env: EtcdCluster, timeout: float) -> tuple[dict[str, int | str], bool]:
    """Each member's revision (or why it did not answer) once they reach one revision within
    `timeout`, and whether they did (a member that skipped or repeated an entry stays apart for
    good). A member that did not answer at the end is told with every way it failed during the
    wait, not only the last one."""
    from harness.errors import WaitTimeout

    answers: dict[str, Counter[str]] = {}  # member -> "answered" or the kind of failure -> how often

    def observe() -> dict[str, Status | str]:
        statuses = env.status()
        for name, st in statuses.items():
            answers.setdefault(name, Counter())["answered" if isinstance(st, Status) else _failure_kind(st)] += 1
        return statuses

    try:
        statuses = wait_for(observe, _one_revision, "every member at the same revision", timeout)
    except WaitTimeout:
        statuses = env.status()
        seen: dict[str, int | str] = {}
        for n, s in statuses.items():
            if isinstance(s, Status):
                seen[n] = s.revision
            else:
                tally = ", ".join(f"{kind} x{count}" for kind, count in answers.get(n, Counter()).most_common())
                seen[n] = f"{s} (during the {timeout:g} s wait: {tally or 'not asked before'})"
        return seen, _one_revision(statuses)
    return {n: s if isinstance(s, str) else s.revision for n, s in statuses.items()}, True


def stores_at(env: EtcdCluster, revision: int) -> tuple[str, Any]:
    """What says whether the members hold the same keys at `revision`: their HashKV there, or, on a
    release whose gateway has no HashKV (v3.5.5's), their own histories through it
    (harness.validate.history.store_split compares either)."""
    from harness.etcd_gateway import EtcdUnsupported
    from harness.probes.etcd import hashkv, histories

    try:
        return "HashKV", hashkv(env, revision)
    except EtcdUnsupported:
        return "history", histories(env, revision)


def _failure_kind(error: str) -> str:
    """What kind of failure a status error is (its exception's name, else its last words)."""
    found = re.findall(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Timeout))\b", error)
    return found[-1] if found else error[-60:]
