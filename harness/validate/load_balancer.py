"""What a Service's load balancer did, judged from its probes' records (pure): the reads of its
node set (harness.probes.load_balancer) and the connections held through it
(harness.probes.connections). The steps and the contradiction check call these same functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from harness.probes.connections import Connection
from harness.probes.load_balancer import NodeSetSample
from harness.wait import Reading


def reads_until(samples: Iterable[NodeSetSample], start: float, limit: float,
                held: Callable[[NodeSetSample], bool]) -> tuple[Reading, ...] | None:
    """The reads begun from `start` up to the first that saw `held`, or up to the first begun
    after `limit` s that did not (it closes the window), as harness.judge.within reads them; None
    while neither has come in."""
    found: list[Reading] = []
    for s in samples:
        if s.t >= start:
            found.append(Reading(s.t, s.ended, s, held(s), s.error))
            if found[-1].held or s.t >= start + limit:
                return tuple(found)
    return None


def changed(samples: Sequence[NodeSetSample], count: int) -> list[str]:
    """Reads that failed, found no load balancer, held other than `count` nodes or another set than
    the first read: each as "t s: what it saw" (a failed read is no read of an unchanged set)."""
    first = samples[0].nodes if samples else None
    return [f"{s.t:.1f} s: {s.seen()}" for s in samples if s.error or s.nodes is None or len(s.nodes) != count or s.nodes != first]


def ended_by(connections: Iterable[Connection], end: float) -> list[str]:
    """The connections that ended (reset, closed, failed) by `end`: "#i via pod: how at t s"."""
    return [f"#{c.index} via {c.pod}: {c.how} at {c.ended:.1f} s" for c in connections
            if c.ended is not None and c.ended <= end]


def last_ended(connections: Sequence[Connection]) -> tuple[float, float] | None:
    """When the last of them ended, as the probe places it: after its look before the one that
    saw the end, and by that one. None while one is still open (or there are none)."""
    if not connections or any(c.ended is None for c in connections):
        return None
    return (max(c.ended_after if c.ended_after is not None else c.ended for c in connections),  # type: ignore[type-var]
            max(c.ended for c in connections))  # type: ignore[type-var]
