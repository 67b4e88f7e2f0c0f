"""Observations that first wait for the members to converge on one revision."""

from __future__ import annotations

from harness.etcd_gateway import Status
from harness.probes.etcd import keys_per_member
from harness.providers.local.region import LocalEnvironment
from harness.wait import wait_for


def converged(env: LocalEnvironment, timeout: float) -> dict[str, Status | str]:
    """Wait until every member answers with the same revision (writes have stopped)."""
    return wait_for(
        env.status,
        lambda st: all(isinstance(s, Status) for s in st.values()) and len({s.revision for s in st.values()}) == 1,  # type: ignore[union-attr]
        "every member at the same revision",
        timeout,
    )


def converged_keys(env: LocalEnvironment, prefix: str, timeout: float) -> dict[str, list[str] | str]:
    converged(env, timeout)
    return keys_per_member(env, prefix)
