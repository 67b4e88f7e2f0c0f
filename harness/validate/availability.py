"""Figures derived from probe samples: write gaps, leader changes, catch-up times."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from harness.probes.samples import Sample


@dataclass(frozen=True)
class Gap:
    """A stretch without an acknowledged write."""

    start: float  # the last acknowledged write before it (the window's start when there was none)
    end: float  # the first acknowledged write after it, or the window's end when none came by then
    open: bool = False  # True: no write was acknowledged from `start` up to the window's end

    @property
    def length(self) -> float:
        return self.end - self.start

    def describe(self) -> str:
        if self.open:
            return (f"no write acknowledged from {self.start:.3f} s to the end of the window at {self.end:.3f} s "
                    f"({self.length:.3f} s, still open)")
        return f"no write acknowledged from {self.start:.3f} s to {self.end:.3f} s ({self.length:.3f} s)"


def stalled(samples: Iterable[Sample], start: float, end: float) -> float:
    """Seconds of [start, end] in which the harness itself stalled (its canary's "stall" samples):
    a latency or a gap measured across them may be the harness's, not the system's."""
    return sum(max(0.0, min(end, s.end) - max(start, s.start)) for s in samples if s.kind == "stall")


def cpu_waited(samples: Iterable[Sample], start: float, end: float) -> float:
    """At most how long the members waited for a CPU within [start, end] ("cpu-wait" samples: a
    stretch's wait may lie anywhere in it, so each counts up to its overlap with the window)."""
    return sum(min(s.waited or 0.0, max(0.0, min(end, s.end) - max(start, s.start)))
               for s in samples if s.kind == "cpu-wait")


def write_resumed_unseen(samples: Iterable[Sample], acked_at: float, since: float) -> float:
    """How much earlier than the write acknowledged at `acked_at` writes may have resumed, unseen:
    the probe's one writer tries again only once its request before failed (a timeout holds it),
    so from that request's begin (not before `since`) to this one's the moment is not resolved.
    0 when the request before was acknowledged: nothing was missed, the write itself was slow."""
    writes = sorted((s for s in samples if s.kind == "write"), key=lambda s: s.start)
    for before, s in zip(writes, writes[1:]):
        if s.ok and abs(s.end - acked_at) < 1e-6:  # a time given back as `t + (end - t)`
            return 0.0 if before.ok else max(0.0, s.start - max(before.start, since))
    return 0.0


def gap_unresolved(samples: Sequence[Sample], gap: Gap) -> float:
    """How much shorter the gap may have been than the probe could see. Closed: what
    `write_resumed_unseen` says of the write that ended it. Open: a write acknowledged after the
    window's end whose failed request before began inside the window may have been acknowledged
    (its own latency after that begin) before the end."""
    if not gap.open:
        return write_resumed_unseen(samples, gap.end, gap.start)
    first = min((s for s in samples if s.kind == "write" and s.ok and s.end > gap.end), key=lambda s: s.end, default=None)
    if first is None:
        return 0.0
    could_ack = first.start - write_resumed_unseen(samples, first.end, gap.start) + (first.end - first.start)
    return max(0.0, gap.end - could_ack)


def gap_resolution(samples: Sequence[Sample], gap: Gap) -> tuple[float, float]:
    """What the harness could not resolve of `gap`: the seconds it stalled across it, and how much
    shorter it may have been than the probe could see (judge.gap_at_most's harness_stalled, sampled)."""
    return stalled(samples, gap.start, gap.end), gap_unresolved(samples, gap)


def status_seen_late(samples: Iterable[Sample], member: str, seen_at: float, since: float) -> float:
    """How much earlier than the status answer that ended at `seen_at` what it showed may have
    held: from the begin of the member's status request before it (not before `since`)."""
    mine = sorted((s for s in samples if s.kind == "status" and s.member == member), key=lambda s: s.start)
    for before, s in zip(mine, mine[1:]):
        if abs(s.end - seen_at) < 1e-6:
            return max(0.0, seen_at - max(before.start, since))
    return 0.0


def acks(samples: Iterable[Sample]) -> list[float]:
    return sorted(s.end for s in samples if s.kind == "write" and s.ok)


def longest_write_gap(samples: Iterable[Sample], start: float, end: float) -> Gap:
    """The longest stretch without an acknowledged write that overlaps [start, end].

    The stretch from the last acknowledgement to `end` counts (open): a window in which writes
    stopped and never came back has that stretch as its longest gap, however short the gaps
    between the acknowledgements before it were. A later gap wins only when it is longer.
    """
    if end < start:
        raise ValueError(f"a window ends after it starts; got [{start}, {end}]")
    times = acks(samples)
    before = [t for t in times if t <= start]
    inside = [t for t in times if start < t <= end]
    points = ([before[-1]] if before else [start]) + inside
    best = Gap(points[-1], end, open=True)
    for a, b in zip(points, points[1:]):
        if b - a > best.length:
            best = Gap(a, b)
    return best


@dataclass(frozen=True)
class Latency:
    """A percentile of the write latency over the writes begun in a window. A failed write has no
    latency: it may have been as slow as any or as fast as any, so the percentile is known only
    between `low` (every failed write counted as the fastest) and `value` (as the slowest)."""

    quantile: float
    value: float  # seconds; inf when more writes failed than the quantile leaves out
    writes: int
    failed: int
    low: float = float("inf")  # seconds; the percentile with every failed write counted as the fastest
    # seconds; `value` with each acknowledged write's latency less what the machine held it up by:
    # the harness's own stalls and the members' waits for a CPU across it
    unhindered: float = float("inf")

    def describe(self, measured: bool = False) -> str:
        """`measured`: as a lower bound is judged, from the measured latencies alone."""
        def shown_(value: float) -> str:
            return "a failed write" if value == float("inf") else f"{value * 1000:.1f} ms"

        shown = shown_(self.low if measured else self.value)
        if measured and self.low < self.value:
            shown += f" measured (unmeasured: the failed writes; {shown_(self.value)} had they been the slowest)"
        return f"p{self.quantile * 100:g} {shown} over {self.writes} writes ({self.failed} failed)"


class _Hindrances:
    """What the machine held things up by: the harness's own stalls and the members' waits for a
    CPU, looked up by time (a window's among thousands of writes without a pass over all)."""

    def __init__(self, samples: list[Sample]) -> None:
        self.stretches = sorted((s for s in samples if s.kind in ("stall", "cpu-wait")), key=lambda s: s.start)
        self.starts = [s.start for s in self.stretches]
        self.longest = max((s.end - s.start for s in self.stretches), default=0.0)

    def within(self, start: float, end: float) -> float:
        """At most how long [start, end] was held up (stalled() plus cpu_waited())."""
        near = self.stretches[bisect.bisect_left(self.starts, start - self.longest):bisect.bisect_left(self.starts, end)]
        return stalled(near, start, end) + cpu_waited(near, start, end)


def write_latency(samples: Iterable[Sample], start: float, end: float, quantile: float) -> Latency:
    """The `quantile` (nearest rank) of the latency of the writes begun in [start, end].

    A failed write counts as slower than any acknowledged one in `value` and as faster than any in
    `low` (its latency is unknown, never skipped), and a write begun in the window counts with its
    whole latency, also when it ended after it: take the figure once the probe's timeout has passed
    beyond `end`.
    """
    if not 0 < quantile <= 1:
        raise ValueError(f"a quantile is in (0, 1], got {quantile}")
    samples = list(samples)
    begun = [s for s in samples if s.kind == "write" and start <= s.start <= end]
    if not begun:
        return Latency(quantile, float("inf"), 0, 0, 0.0)
    rank = int(max(1, -(-len(begun) * quantile // 1)))  # nearest rank: ceil(q * n)
    slowest = sorted(s.end - s.start if s.ok else float("inf") for s in begun)
    fastest = sorted(s.end - s.start if s.ok else 0.0 for s in begun)
    hindered = _Hindrances(samples)
    unhindered = sorted(max(0.0, s.end - s.start - hindered.within(s.start, s.end)) if s.ok else float("inf")
                        for s in begun)
    failed = sum(not s.ok for s in begun)
    return Latency(quantile, slowest[rank - 1], len(begun), failed, fastest[rank - 1], unhindered[rank - 1])


def write_p99_bounded(samples: Iterable[Sample], start: float, seen: float, end: float, how: str) -> Latency:
    """The p99 write latency a bound `how` ("under" or "at least") is judged on, over the writes
    begun from the fault's effect to `end`. The effect lies between `start` (the earliest it may
    have taken effect) and `seen` (the latest); a write begun in between may or may not have felt
    it, so each bound reads the window that cannot flatter it: "under" the higher p99, "at least"
    the lower measured one. So the two can never both hold on one run."""
    if how not in ("under", "at least"):
        raise ValueError(f'a p99 bound is "under" or "at least", got {how!r}')
    samples = list(samples)
    both = [write_latency(samples, s, end, 0.99) for s in sorted({start, seen})]
    both = [p for p in both if p.writes] or both[:1]
    return max(both, key=lambda p: p.value) if how == "under" else min(both, key=lambda p: p.low)


@dataclass(frozen=True)
class WritesLost:
    """Acknowledged writes a store no longer holds (a restore's RPO)."""

    writes: list[Sample]

    @property
    def count(self) -> int:
        return len(self.writes)

    @property
    def seconds(self) -> float:
        """From the first lost write's start to the last one's acknowledgement (0: none lost)."""
        return max(s.end for s in self.writes) - min(s.start for s in self.writes) if self.writes else 0.0


def writes_lost(samples: Iterable[Sample], prefix: str, present: Iterable[str]) -> WritesLost:
    """The acknowledged probe writes whose keys (`prefix` + sequence number) are not in `present`."""
    have = {int(k[len(prefix):]) for k in present if k.startswith(prefix) and k[len(prefix):].isdigit()}
    return WritesLost([s for s in samples if s.kind == "write" and s.ok and s.seq not in have])


def first_ack_after(samples: Iterable[Sample], t: float) -> float | None:
    """Seconds from `t` to the first write acknowledged after it."""
    later = [x for x in acks(samples) if x > t]
    return later[0] - t if later else None


def writes_failed_between(samples: Iterable[Sample], start: float, end: float) -> tuple[int, int]:
    """(acknowledged, failed) writes that both started and ended inside [start, end]."""
    inside = [s for s in samples if s.kind == "write" and s.start >= start and s.end <= end]
    return sum(s.ok for s in inside), sum(not s.ok for s in inside)


def writes_begun(samples: Iterable[Sample], start: float, end: float) -> list[Sample]:
    """The writes begun inside [start, end), however and whenever they ended."""
    return [s for s in samples if s.kind == "write" and start <= s.start < end]


def reads_served(samples: Iterable[Sample], member: str, start: float, end: float) -> tuple[int, int]:
    """(served, failed) serializable reads of `member` inside [start, end]."""
    inside = [s for s in samples if s.kind == "read" and s.member == member and s.start >= start and s.end <= end]
    return sum(s.ok for s in inside), sum(not s.ok for s in inside)


def most_away(samples: Iterable[Sample], start: float, end: float, kinds: tuple[str, ...] = ("status",),
              lone_timeouts: bool = True) -> tuple[int, float | None, list[str]]:
    """The most members away at once inside [start, end], when that was first seen, and which.

    By one kind of request (status, health), a member is away from the start of one that failed
    until the start of the next one that succeeded (it answered at some moment of that request,
    so it may have been back from its start: a slow answer is no proof of two away at once), or
    until the window's end. With several kinds, a member is away only while every kind says so:
    any one that succeeded shows it there. `lone_timeouts=False` leaves out a stretch resting on
    one request that timed out between two answered ones: a member slower than the probe's
    timeout once, which the probe cannot tell from one that was gone that long."""
    away_by_member: dict[str, list[tuple[float, float]]] = {}
    for kind in kinds:
        seen: dict[str, list[Sample]] = {}
        for s in samples:
            if s.kind == kind and start <= s.start <= end:
                seen.setdefault(s.member, []).append(s)
        for member, requests in seen.items():
            spans = _away_spans(requests, end, lone_timeouts)
            away_by_member[member] = spans if kind == kinds[0] else _intersect(away_by_member.get(member, []), spans)
        for member in set(away_by_member) - set(seen):  # no request of this kind inside: it never said away
            away_by_member[member] = []
    changes = [(a, 1, m) for m, spans in away_by_member.items() for a, _ in spans]
    changes += [(b, -1, m) for m, spans in away_by_member.items() for _, b in spans]
    away: set[str] = set()
    most: tuple[int, float | None, list[str]] = (0, None, [])
    for at, change, member in sorted(changes, key=lambda c: (c[0], c[1])):  # a return first at the same instant
        (away.add if change > 0 else away.discard)(member)
        if len(away) > most[0]:
            most = (len(away), at, sorted(away))
    return most


def _away_spans(requests: list[Sample], end: float, lone_timeouts: bool = True) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    failed: list[Sample] = []
    for s in sorted(requests, key=lambda s: s.start):
        if not s.ok:
            failed.append(s)
        elif failed:
            if lone_timeouts or len(failed) > 1 or not timed_out(failed[0]):
                spans.append((failed[0].start, s.start))
            failed = []
    if failed:
        spans.append((failed[0].start, end))
    return spans


def timed_out(sample: Sample) -> bool:
    """The request got no answer within the probe's timeout (as opposed to a refusal or an error
    the member or its path gave)."""
    return sample.error is not None and ("TimeoutError" in sample.error or "timed out" in sample.error)


def _intersect(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(max(x0, y0), min(x1, y1)) for x0, x1 in a for y0, y1 in b if max(x0, y0) < min(x1, y1)]


def catch_up_time(samples: Iterable[Sample], member: str, t: float, target_revision: int) -> float | None:
    """Seconds after `t` until `member` reports a revision >= target_revision (revision lag 0)."""
    for s in sorted((s for s in samples if s.kind == "status" and s.ok and s.member == member and s.start >= t),
                    key=lambda s: s.end):
        if s.revision is not None and s.revision >= target_revision:
            return s.end - t
    return None


def requests_seen(samples: Sequence[Sample]) -> dict[str, Any]:
    """What the requests saw: how many, how many answered, the highest revision shown, the last
    error (what a figure that never came, or a premise that did not hold, is judged with)."""
    return {"requests": len(samples), "answered": sum(s.ok for s in samples),
            "highest revision": max((s.revision for s in samples if s.ok and s.revision is not None), default=None),
            "last error": next((s.error for s in reversed(samples) if s.error), None)}


def requests_since(samples: Iterable[Sample], kind: str, since: float, member: str | None = None) -> dict[str, Any]:
    """requests_seen of the probe's `kind` requests (of `member`, or any) begun since `since`."""
    return requests_seen([s for s in samples if s.kind == kind and s.start >= since and member in (None, s.member)])


def first_answer(samples: Iterable[Sample], member: str, after: float) -> float | None:
    """When the first status request to `member` begun after `after` that came back answered was
    sent: the earliest the member may have been back (it answered at some point of the request)."""
    return min((s.start for s in samples if s.kind == "status" and s.ok and s.member == member and s.start >= after),
               default=None)


def highest_revision(samples: Iterable[Sample], until: float) -> int:
    """The highest revision any write ack or status sample showed up to `until`."""
    return max((s.revision for s in samples if s.ok and s.revision and s.end <= until), default=0)
