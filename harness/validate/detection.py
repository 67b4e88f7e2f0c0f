"""Time to detect: from a fault's effect to each detector's first "failing" verdict, read from the
"detector" events harness.probes.detectors put on the timeline, next to the time the clients
first saw a failure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.probes.detectors import EVENT, FAILING, OK, UNREADABLE
from harness.probes.samples import Sample
from harness.timeline import Event


@dataclass(frozen=True)
class Detection:
    """One detector over [since, until]."""

    name: str
    kind: str
    subject: str
    zone: str | None
    before: str | None  # its verdict when the window opened (None: not read yet)
    at: float | None  # its first "failing" verdict in the window; None: none by `until`
    unreadable: tuple[tuple[float, float], ...]  # stretches of the window it could not be read in
    recovered: float | None = None  # its first "ok" after `at`, if any by `until`

    def after(self, since: float) -> float | None:
        return None if self.at is None else self.at - since

    def blind_before(self, at: float) -> tuple[float, float] | None:
        """The first stretch before `at` in which the harness could not read it (the detection
        time is then unknown: it may have said "failing" unseen)."""
        return next(((a, b) for a, b in self.unreadable if a < at), None)


def detections(events: Iterable[Event], since: float, until: float) -> list[Detection]:
    """Every detector's verdicts over [since, until], in name order."""
    by_name: dict[str, list[Event]] = {}
    for e in events:
        if e.kind == EVENT:
            by_name.setdefault(e.name, []).append(e)
    out = []
    for name, changes in sorted(by_name.items()):
        changes.sort(key=lambda e: e.start)
        first = changes[0].data
        before = next((e.data["verdict"] for e in reversed(changes) if e.start < since), None)
        inside = [e for e in changes if since <= e.start <= until]
        at = next((e.start for e in inside if e.data["verdict"] == FAILING), None)
        recovered = next((e.start for e in inside if at is not None and e.start > at and e.data["verdict"] == OK), None)
        blind, opened = [], since if before == UNREADABLE else None
        for e in inside:
            if e.data["verdict"] == UNREADABLE and opened is None:
                opened = e.start
            elif e.data["verdict"] != UNREADABLE and opened is not None:
                blind.append((opened, e.start))
                opened = None
        if opened is not None:
            blind.append((opened, until))  # still unreadable when the window closed
        out.append(Detection(name, first["detector"], first["subject"], first.get("zone"), before, at, tuple(blind),
                             recovered))
    return out


def first_failure(samples: Iterable[Sample], since: float, kind: str = "write") -> float | None:
    """When a client first saw a request of `kind` fail that began at or after `since` (its end: the
    moment the client knew)."""
    return min((s.end for s in samples if s.kind == kind and not s.ok and s.start >= since), default=None)


def table(found: list[Detection], since: float, clients: dict[str, float | None]) -> list[dict[str, object]]:
    """Rows for a report: each detector's time to detect after `since`, and the clients' first failure."""
    rows: list[dict[str, object]] = [
        {"detector": d.name, "zone": d.zone or "-", "before": d.before or "-",
         "detected_after_s": None if d.at is None else round(d.at - since, 3),
         "recovered_after_s": None if d.recovered is None else round(d.recovered - since, 3),
         "unreadable_s": round(sum(b - a for a, b in d.unreadable), 3)}
        for d in found
    ]
    rows += [{"detector": f"first failed request: {who}", "zone": "-", "before": "-",
              "detected_after_s": None if at is None else round(at - since, 3), "recovered_after_s": None,
              "unreadable_s": 0.0} for who, at in clients.items()]
    return rows


def held(d: Detection, hold: float) -> float | None:
    """When `d` had said failing for `hold` s on end, from its first failing verdict, neither ok
    again nor unreadable in between; None if that did not happen inside its window."""
    if d.at is None:
        return None
    declared = d.at + hold
    if d.recovered is not None and d.recovered < declared:
        return None
    if any(a < declared and b > d.at for a, b in d.unreadable):
        return None
    return declared  # whether the window reached that far is the caller's bound
