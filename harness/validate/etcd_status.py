"""What etcd-druid reported of an etcd over a window, judged from the reads of its status
(harness.probes.etcd_status): every read in the window said quorate, and no stretch of it went
unread for longer than the reads can vouch for."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.probes.etcd_status import StatusRead

# s without a read that still counts as read throughout: druid rewrites the status every few
# seconds; a longer stretch (the seed's API or the harness stalled) is not observed.
MAX_UNREAD = 5.0


@dataclass(frozen=True)
class Throughout:
    """The reads of a window [start, end]: those that did not say it, and stretches nobody read."""

    start: float
    end: float
    reads: int
    contrary: list[str]  # "12.3s: <what the read said>"
    unread: list[tuple[float, float]]


def quorate_throughout(reads: Iterable[StatusRead], start: float, end: float,
                       max_unread: float = MAX_UNREAD) -> Throughout:
    """Each read of [start, end] (a failed one included: a gap, never skipped) that did not say
    quorate, and each stretch longer than `max_unread` in which no read returned, the open
    stretches at either end counted."""
    inside = sorted((r for r in reads if start <= r.t <= end), key=lambda r: r.t)
    contrary = [f"{r.t:.1f}s: {r.says()}" for r in inside if not r.quorate]
    edges = [start, *(r.t for r in inside), end]
    unread = [(a, b) for a, b in zip(edges, edges[1:]) if b - a > max_unread]
    return Throughout(start, end, len(inside), contrary, unread)
