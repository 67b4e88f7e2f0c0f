"""Tolerances: the one place that judges observed figures against thresholds.

Used by Gherkin Then-steps and by chaostoolkit hypotheses alike; each failure says
what was expected and what was seen. Helpers hide themselves from tracebacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from harness.wait import Polled


class ToleranceViolation(AssertionError):
    pass


class Inconclusive(AssertionError):
    """A bound missed by less than the harness could resolve (its own stalls explain the excess):
    neither a pass nor a violation. A run reruns the scenario once or fails (--inconclusive)."""


def resolved(missed_by: float, harness_stalled: float, what: str, detail: str, sampled: float = 0.0,
             held_over: float = 0.0) -> None:
    """A bound was missed by `missed_by` seconds; when the harness itself stalled across what it
    measured, its probe's samples place the moment no closer than `sampled` seconds, or its steps
    held the fault `held_over` seconds longer than the scenario said (what is measured after a
    return grows with the time away), and together that is at least the miss, the miss may be the
    harness's: Inconclusive, never a pass."""
    __tracebackhide__ = True
    if missed_by > 0 and harness_stalled + sampled + held_over >= missed_by:
        why = []
        if harness_stalled > 0:
            why.append(f"the harness itself stalled {harness_stalled:.3f}s across it (its canary woke that late)")
        if sampled > 0:
            why.append(f"its probe could not place the moment closer than {sampled:.3f}s (the request before "
                       "the one that saw it began that much earlier)")
        if held_over > 0:
            why.append(f"the fault was held {held_over:.3f}s longer than the scenario said (its steps during it "
                       "took that long; a member away longer hears its peers later)")
        raise Inconclusive(f"{what}: inconclusive, missed by {missed_by:.3f}s while {' and '.join(why)}: {detail}")


def at_most(value: float | None, limit: float, what: str, seen: Any = None, harness_stalled: float = 0.0,
            sampled: float = 0.0, held_over: float = 0.0) -> float:
    """A duration of at most `limit` seconds. `harness_stalled`: seconds of it in which the harness
    itself could not run (its probe's canary); `sampled`: how much earlier its end may have been
    than the probe could see; `held_over`: how much longer than the scenario said the fault was
    held before what is measured began; a miss no longer than these together is Inconclusive. One
    that never happened (in as long as the caller waited) is a violation."""
    __tracebackhide__ = True
    if value is None:
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, but it never happened; seen: {seen!r}")
    if value > limit:
        resolved(value - limit, harness_stalled, what, f"expected at most {limit:.3f}s, measured {value:.3f}s", sampled,
                 held_over)
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, measured {value:.3f}s; seen: {seen!r}")
    return value


def within(polled: Polled[Any], what: str, show: Callable[[Any], str] = repr) -> float:
    """A condition that held within `polled.limit` s of its start, judged from the reads that
    awaited it (harness.wait.poll_within): held by the end of a read inside the limit, a pass; not
    held at a read begun after it, or first held only after a "no" read begun after it, a
    violation; first held between a "no" read begun inside the limit and a "yes" read that ended
    after it (reads slowed or the harness stalled across the limit), Inconclusive. Returns the
    seconds by which it held; `show` writes what the last read saw."""
    __tracebackhide__ = True
    limit, when = polled.limit, polled.first_held()
    last = polled.reads[-1]
    seen = last.error or show(last.value)
    if when is None:
        raise ToleranceViolation(f"{what}: expected within {limit:.3f}s, but not at a read begun "
                                 f"{last.began - polled.start:.3f}s after the start; seen: {seen}")
    earliest, latest = when
    if latest <= limit:
        return latest
    if earliest >= limit:
        raise ToleranceViolation(f"{what}: expected within {limit:.3f}s, but it first held between {earliest:.3f}s "
                                 f"and {latest:.3f}s (a read begun at {earliest:.3f}s did not see it); "
                                 f"seen: {seen}")
    raise Inconclusive(f"{what}: inconclusive, expected within {limit:.3f}s: it first held between {earliest:.3f}s "
                       f"(a read begun then did not see it) and {latest:.3f}s (a read that ended then did), and the "
                       f"harness's reads could not place it on either side of the limit; seen: {seen}")


def gap_at_most(gap: Any, limit: float, what: str, harness_stalled: float = 0.0, sampled: float = 0.0) -> float:
    """A stretch without acknowledged writes (validate.availability.Gap) of at most `limit` seconds;
    one still open when its window ended says so. `harness_stalled`: seconds of it in which the
    harness itself could not run; `sampled`: how much earlier writes may have resumed than the
    probe's one writer could see; a miss no longer than both together is Inconclusive."""
    __tracebackhide__ = True
    if gap.length > limit:
        tail = "; writes had not resumed when the window ended" if gap.open else ""
        resolved(gap.length - limit, harness_stalled, what, f"expected at most {limit:.3f}s, {gap.describe()}", sampled)
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, measured {gap.length:.3f}s: "
                                 f"{gap.describe()}{tail}")
    return float(gap.length)


def throughout(contrary: list[str], reads: int, unread: list[tuple[float, float]], what: str) -> None:
    """A statement every read of a window made: a read that did not (or failed), a violation;
    none, but stretches no read covered (or no read at all), Inconclusive: never a pass."""
    __tracebackhide__ = True
    if contrary:
        last = f"; the last, {contrary[-1]}" if len(contrary) > 1 else ""
        raise ToleranceViolation(f"{what}: not at {len(contrary)} of {reads} reads; the first, {contrary[0]}{last}")
    if unread or not reads:
        stretches = ", ".join(f"{a:.1f}s to {b:.1f}s" for a, b in unread) or "the whole window"
        raise Inconclusive(f"{what}: inconclusive, every one of {reads} reads said so, but nothing was read from "
                           f"{stretches} (the harness or the API it reads stalled)")


def equal(actual: Any, expected: Any, what: str) -> None:
    __tracebackhide__ = True
    if actual != expected:
        raise ToleranceViolation(f"{what}: expected {expected!r}, got {actual!r}")


def none_of(items: list[Any] | dict[Any, Any], what: str) -> None:
    __tracebackhide__ = True
    if items:
        shown = list(items)[:20] if isinstance(items, list) else items
        raise ToleranceViolation(f"{what}: expected none, found {len(items)}: {shown!r}")


def holds(condition: bool, what: str, seen: Any = None) -> None:
    __tracebackhide__ = True
    if not condition:
        raise ToleranceViolation(f"{what}; seen: {seen!r}")
