"""Contrary claims about the leadership and the writes judged on one recorded run: both holding is
a defect of the harness, not of the system. The steps state one claim each, through different validators
(the leader kept, the elections counted, the first new leader, the leader deposed); here every
pair that cannot both be true is judged on the same timeline, so a validator that passes what its
contrary's also passes shows up on a real run, not only on generated histories
(tests/unit/test_leadership.py).

    python -m harness.validate.contradictions reports/runs/*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.probes.availability import ProbeHistory
from harness.probes.samples import Sample
from harness.validate import availability as av
from harness.validate import leadership as lead

GRACE = 1.0  # as the steps' END_GRACE: a report this long after the window still tells its end


@dataclass(frozen=True)
class Window:
    """The stretch a run's claims are about: from the first fault's effect to the last heal, with
    the leader and the raft term the members agreed on before it."""

    start: float  # the earliest the first fault may have taken effect
    end: float
    leader_id: int
    term_before: int
    seen: float | None = None  # the latest the first fault took effect (when it was first seen)


@dataclass(frozen=True)
class Contradiction:
    claims: tuple[str, str]
    seen: str


def claims(samples: list[Sample], history: ProbeHistory, w: Window) -> dict[str, tuple[bool, str]]:
    """Each claim the steps can state about the window: (holds, what was seen)."""
    names = {int(k): v for k, v in history.member_ids.items()}
    leader = names.get(w.leader_id)
    kept = lead.leader_kept(samples, w.start, w.end, leader, w.leader_id, w.term_before, history.members, names, GRACE)
    found = lead.elections(samples, w.start, w.end, w.term_before, history.members, names, GRACE)
    new = lead.new_leader(samples, w.start, w.leader_id, w.term_before)
    gone = lead.deposed(samples, w.start, w.end, leader, w.leader_id, w.term_before)
    half = (w.end - w.start) / 2
    seen = w.start if w.seen is None else w.seen
    under = av.write_p99_bounded(samples, w.start, seen, w.end, "under")
    low = av.write_p99_bounded(samples, w.start, seen, w.end, "at least").low
    x = f"X = {low * 1000:.1f} ms"
    gap = av.longest_write_gap(samples, w.start, w.end)
    acked, failed = av.writes_failed_between(samples, w.start, w.end)
    return {
        "writes resume within half the window": (gap.length <= half, gap.describe()),
        "no write is acknowledged in the window": (acked == 0 and failed > 0, f"{acked} acknowledged, {failed} failed"),
        "the etcd leader does not change": (not kept.contrary and kept.proven,
                                            kept.contrary[0][1] if kept.contrary else kept.why_unproven()),
        "a new leader is elected": (new is not None and new.end <= w.end,  # proven by a report within it
                                    f"{new.member} names {lead.named(new.leader, names)} in term {new.term}"
                                    if new else "no report of one"),
        "at least 1 leader election happens": (found.at_least >= 1, found.describe()),
        "the leadership moves at most 0 times": (found.at_most == 0, found.describe()),
        "the etcd leader is deposed": (gone is not None, f"{gone.member} in term {gone.term}" if gone else "not seen"),
        # X, the highest bound "at least" passes on (its lower measured p99): "under X" must fail.
        "the write p99 is at least X ms": (0.0 < low < float("inf"), x),
        "the write p99 is under X ms": (under.value < low, f"{x}; {under.describe()}"),
    }


# Pairs that cannot both be true. (A leader deposed while no election happens is no contradiction:
# without a quorum it steps down and nobody wins.)
CONTRARY = (
    ("the etcd leader does not change", "a new leader is elected"),
    ("the etcd leader does not change", "at least 1 leader election happens"),
    ("the etcd leader does not change", "the etcd leader is deposed"),
    ("the leadership moves at most 0 times", "at least 1 leader election happens"),
    ("the leadership moves at most 0 times", "a new leader is elected"),
    ("writes resume within half the window", "no write is acknowledged in the window"),
    ("the write p99 is at least X ms", "the write p99 is under X ms"),
)


def contradictions(samples: Iterable[Sample], history: ProbeHistory, window: Window) -> list[Contradiction]:
    """The pairs of contrary claims that both hold on this run (none, unless a validator is wrong)."""
    samples = list(samples)
    held = claims(samples, history, window)
    return [Contradiction(pair, f"{pair[0]}: {held[pair[0]][1]} / {pair[1]}: {held[pair[1]][1]}")
            for pair in CONTRARY if held[pair[0]][0] and held[pair[1]][0]]


def window_of(run: dict[str, Any]) -> Window | None:
    """The window of a recorded run (reports/runs/*.json): None without a fault that healed or an
    agreed leader before it."""
    faults = [e for e in run.get("events", []) if e["kind"] == "fault"]
    before = next((e for e in run.get("events", []) if e["kind"] == "health" and e["name"] == "before"), None)
    healed = [f["data"].get("healed_at") for f in faults]
    if not faults or before is None or None in healed:
        return None
    statuses = [s for s in before["data"].get("statuses", {}).values() if isinstance(s, dict)]
    leaders = {s.get("leader") for s in statuses}
    if len(leaders) != 1 or not next(iter(leaders)):
        return None
    first = faults[0]["data"]
    start = float(first.get("effective_after", first.get("changing_from", faults[0]["start"])))
    return Window(start, max(float(h) for h in healed), int(next(iter(leaders))),
                  max(int(s.get("term", 0)) for s in statuses),
                  float(first.get("effective_at", first.get("injected_at", start))))


def check_run(run: dict[str, Any]) -> list[Contradiction]:
    """Every etcd probe history of the run against its window (a shoot API probe has no leader)."""
    window = window_of(run)
    if window is None:
        return []
    found: list[Contradiction] = []
    for data in run.get("histories", []):
        if data.get("path") == "shoot-api" or not data.get("members"):
            continue
        history = ProbeHistory.from_dict(data)
        found += contradictions(history.samples, history, window)
    return found


def check_paths(paths: Iterable[Path]) -> tuple[int, list[str]]:
    """How many recorded runs had a fault window to judge, and a line for each contradiction."""
    judged, lines = 0, []
    for path in paths:
        run = json.loads(path.read_text())
        if window_of(run) is None:
            continue
        judged += 1
        lines += [f"{path.name}: both hold: {c.claims[0]!r} and {c.claims[1]!r}; {c.seen}" for c in check_run(run)]
    return judged, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="judge contrary claims on recorded runs; non-zero when both "
                                                 "of a pair hold on one")
    parser.add_argument("runs", nargs="+", type=Path, help="recorded runs (reports/runs/*.json)")
    judged, lines = check_paths(parser.parse_args(argv).runs)
    for line in lines:
        print(line)
    print(f"{judged} run(s) with a fault window judged, {len(lines)} contradiction(s)")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
