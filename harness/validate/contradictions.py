"""Contrary claims judged on one recorded run: both holding is a defect of the harness, not of
the system. The steps state one claim each, through different validators (the leader kept, the
elections counted, the first new leader, the leader deposed, a p99 bounded either way, a load
balancer's node set kept or left, its connections kept or closed); here every pair that cannot
both be true is judged on the same timeline, so a validator that passes what its contrary's also
passes shows up on a real run, not only on generated histories (tests/unit/test_leadership.py).

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
from harness.probes.connections import connections_of
from harness.probes.load_balancer import samples_of
from harness.probes.samples import Sample
from harness.validate import availability as av
from harness.validate import leadership as lead
from harness.validate import load_balancer as lbv

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


Claim = tuple[str, bool, str]  # what is claimed, whether it holds, what was seen


def load_balancer_pairs(run: dict[str, Any], start: float, end: float) -> list[tuple[Claim, Claim]]:
    """Contrary claims about a Service's load balancer in [start, end], from the run's records of
    its node set and of the connections held through it (validate.load_balancer, as the steps)."""
    pairs: list[tuple[Claim, Claim]] = []
    zones: dict[str, str] = {}
    for e in run.get("events", []):
        if e["kind"] == "connection" and "paths" in e.get("data", {}):
            zones.update({str(i): path[2] for i, path in e["data"]["paths"].items()})
    for record in run.get("records", []):
        name = record.get("service")
        if record.get("probe") == "lb-nodes":
            samples = samples_of(record)
            before = [s for s in samples if s.t < start and not s.error and s.nodes is not None]
            inside = [s for s in samples if start <= s.t <= end]
            if not before or not inside:
                continue
            had = set(before[-1].nodes or ())
            wrong = lbv.changed([before[-1], *inside], len(had))
            reads = lbv.reads_until(samples, start, end - start,
                                    lambda s: not s.error and s.nodes is not None and bool(had - set(s.nodes)))
            left = reads is not None and reads[-1].held and reads[-1].began <= end
            pairs.append(((f"the load balancer of {name} keeps all its nodes", not wrong, f"{len(wrong)} other reads"),
                          (f"a node leaves the load balancer of {name}", left,
                           f"{reads[-1].began:.1f} s: {reads[-1].value.seen()}"  # type: ignore[attr-defined]
                           if reads and left else "none left")))
        elif record.get("probe") == "connection":
            held = [c for c in connections_of(record) if c.opened <= start]
            for zone in sorted({zones.get(str(c.index)) for c in held} - {None}):
                mine = [c for c in held if zones.get(str(c.index)) == zone]
                ended = lbv.ended_by(mine, end)
                last = lbv.last_ended(mine)
                pairs.append(((f"no connection through {zone} is closed", not ended, f"{len(ended)} ended"),
                              (f"every connection through {zone} is closed", last is not None and last[1] <= end,
                               f"the last at {last[1]:.1f} s" if last else "one still open")))
    return pairs


def fault_span(run: dict[str, Any]) -> tuple[float, float, dict[str, Any]] | None:
    """From the earliest the first fault may have taken effect to the last heal, and the first
    fault's data; None without a fault or with one that did not heal."""
    faults = [e for e in run.get("events", []) if e["kind"] == "fault"]
    healed = [f["data"].get("healed_at") for f in faults]
    if not faults or None in healed:
        return None
    first = faults[0]["data"]
    start = float(first.get("effective_after", first.get("changing_from", faults[0]["start"])))
    return start, max(float(h) for h in healed), first


def window_of(run: dict[str, Any]) -> Window | None:
    """The window of a recorded run (reports/runs/*.json): None without a fault that healed or an
    agreed leader before it."""
    span = fault_span(run)
    before = next((e for e in run.get("events", []) if e["kind"] == "health" and e["name"] == "before"), None)
    if span is None or before is None:
        return None
    start, end, first = span
    statuses = [s for s in before["data"].get("statuses", {}).values() if isinstance(s, dict)]
    leaders = {s.get("leader") for s in statuses}
    if len(leaders) != 1 or not next(iter(leaders)):
        return None
    return Window(start, end, int(next(iter(leaders))), max(int(s.get("term", 0)) for s in statuses),
                  float(first.get("effective_at", first.get("injected_at", start))))


def check_run(run: dict[str, Any]) -> list[Contradiction]:
    """Every etcd probe history of the run against its window (a shoot API probe has no leader),
    and the load balancer's records against the fault's span."""
    found: list[Contradiction] = []
    window = window_of(run)
    for data in run.get("histories", []) if window is not None else []:
        if data.get("path") == "shoot-api" or not data.get("members"):
            continue
        history = ProbeHistory.from_dict(data)
        found += contradictions(history.samples, history, window)  # type: ignore[arg-type]
    span = fault_span(run)
    for (a, held_a, seen_a), (b, held_b, seen_b) in load_balancer_pairs(run, *span[:2]) if span else []:
        if held_a and held_b:
            found.append(Contradiction((a, b), f"{a}: {seen_a} / {b}: {seen_b}"))
    return found


def check_paths(paths: Iterable[Path]) -> tuple[int, list[str]]:
    """How many recorded runs had a fault window to judge, and a line for each contradiction."""
    judged, lines = 0, []
    for path in paths:
        run = json.loads(path.read_text())
        if fault_span(run) is None:
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
