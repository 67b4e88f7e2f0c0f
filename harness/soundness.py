"""Whether an etcd cluster is sound for the next scenario: the check a shared region (or the
control plane standing in for it) passes after each scenario's faults are healed."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.probes.converge import settled_revisions, stores_at
from harness.providers.base import EtcdCluster
from harness.validate.history import store_split


def diverged(env: EtcdCluster, timeout: float = 10.0) -> str | None:
    """Why the region is not fit for the next scenario, or None: every member answers, they reach
    one revision within `timeout` s, and they hold the same keys at it. The evidence: each member's
    revision (or how it failed to answer), or where they differ."""
    try:
        revisions, together = settled_revisions(env, timeout)
        if not together:
            return f"the members never reached one revision within {timeout:g} s: {revisions}"[:1200]
        revision = int(next(iter(revisions.values())))
        how, split = store_split(stores_at(env, revision))
    except HarnessError as e:
        return str(e)[:600]
    return f"{how} differs at revision {revision}: {split}"[:1200] if split else None
