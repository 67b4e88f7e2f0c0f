"""Observations that first wait for the members to converge on one revision."""

from __future__ import annotations

from harness.etcd_gateway import Status
from harness.probes.etcd import keys_per_member
from harness.providers.base import EtcdCluster
from harness.wait import wait_for


def converged(env: EtcdCluster, timeout: float) -> dict[str, Status | str]:
    """Wait until every member answers with the same revision (writes have stopped)."""
    return wait_for(
        env.status,
        lambda st: all(isinstance(s, Status) for s in st.values()) and len({s.revision for s in st.values()}) == 1,  # type: ignore[union-attr]
        "every member at the same revision",
        timeout,
    )


def converged_keys(env: EtcdCluster, prefix: str, timeout: float) -> dict[str, list[str] | str]:
    converged(env, timeout)
    return keys_per_member(env, prefix)


def settled_hashes(env: EtcdCluster, timeout: float) -> tuple[dict[str, int | str], dict[str, int] | None]:
    """Each member's revision (or why it did not answer) once they reach one revision within
    `timeout`, and their HashKV at it; None for the hashes when they never reach one revision (a
    member that skipped or repeated an entry stays apart for good)."""
    from harness.errors import WaitTimeout
    from harness.probes.etcd import hashkv

    try:
        statuses = converged(env, timeout)
    except WaitTimeout:
        statuses = env.status()
        return {n: s if isinstance(s, str) else s.revision for n, s in statuses.items()}, None
    return {n: s if isinstance(s, str) else s.revision for n, s in statuses.items()}, hashkv(env)
