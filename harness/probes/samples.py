"""The records probes put on the timeline (times are seconds since the timeline base)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    kind: str  # "write" | "read" | "status" | "health" (the member's /health, when asked for)
    member: str  # member that answered (write: the endpoint tried)
    start: float
    end: float
    ok: bool
    seq: int | None = None  # write: sequence number of the key written
    revision: int | None = None
    leader: int | None = None  # status: leader id as this member sees it
    term: int | None = None
    error: str | None = None
