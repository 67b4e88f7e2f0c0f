"""The records probes put on the timeline (times are seconds since the timeline base)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sample:
    # "write" | "read" | "status" (from the probe's client zone; its term is that of the last entry
    # the member applied) | "witness" (the member's raft state through the harness's own view of it,
    # its own zone: its current term, the leader it follows) | "health" (its /health, when asked for)
    # | "stall" (the harness itself could not run from start to end: its canary woke that late)
    # | "cpu-wait" (how long, from start to end, at least one member's thread waited for a CPU)
    kind: str
    member: str  # member that answered (write: the endpoint tried)
    start: float
    end: float
    ok: bool
    seq: int | None = None  # write: sequence number of the key written
    revision: int | None = None
    leader: int | None = None  # status, witness: leader id as this member sees it
    term: int | None = None  # status: the term of the last entry applied; witness: the current term
    error: str | None = None
    waited: float | None = None  # cpu-wait: seconds
