"""Figures: what Then-steps measured, marked on the scenario's timeline as events of kind
"figure" (name, data value and unit), and their JUnit property form."""

from __future__ import annotations

from typing import Any, Iterable

from harness.timeline import Event, Timeline

KIND = "figure"


def mark(timeline: Timeline, name: str, value: float | int | None, unit: str = "", **extra: Any) -> Event:
    """Put one measured figure on the timeline (value None: it never appeared)."""
    if isinstance(value, float):
        value = round(value, 4)
    return timeline.mark(KIND, name, value=value, unit=unit, **extra)


def from_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The figures among a timeline's events (as written to its JSON), in order."""
    return [{"name": e["name"], "value": e["data"].get("value"), "unit": e["data"].get("unit", ""), "at": e["start"]}
            for e in events if e["kind"] == KIND]


def junit_properties(figures: Iterable[dict[str, Any]]) -> list[tuple[str, str]]:
    """("figure:<name>", "<value> <unit>") pairs for item.user_properties."""
    out = []
    for f in figures:
        value = "none" if f["value"] is None else f"{f['value']:g}" if isinstance(f["value"], float) else str(f["value"])
        out.append((f"figure:{f['name']}", f"{value} {f['unit']}".strip()))
    return out
