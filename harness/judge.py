"""Tolerances: the one place that judges observed figures against thresholds.

Used by Gherkin Then-steps and by chaostoolkit hypotheses alike; each failure says
what was expected and what was seen. Helpers hide themselves from tracebacks.
"""

from __future__ import annotations

from typing import Any, Callable


class ToleranceViolation(AssertionError):
    pass


def at_most(value: float | None, limit: float, what: str, seen: Any = None) -> float:
    __tracebackhide__ = True
    if value is None:
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, but it never happened; seen: {seen!r}")
    if value > limit:
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, measured {value:.3f}s; seen: {seen!r}")
    return value


def gap_at_most(gap: Any, limit: float, what: str) -> float:
    """A stretch without acknowledged writes (validate.availability.Gap) of at most `limit` seconds;
    one still open when its window ended says so."""
    __tracebackhide__ = True
    if gap.length > limit:
        tail = "; writes had not resumed when the window ended" if gap.open else ""
        raise ToleranceViolation(f"{what}: expected at most {limit:.3f}s, measured {gap.length:.3f}s: "
                                 f"{gap.describe()}{tail}")
    return float(gap.length)


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


def broken(*checks: Callable[[], object]) -> list[str]:
    """Run every check and return the messages of those that failed: for a job that reports all
    its broken promises at once (the chaos job) with the same judgements the Then-steps make."""
    failed = []
    for check in checks:
        try:
            check()
        except ToleranceViolation as e:
            failed.append(str(e))
    return failed
