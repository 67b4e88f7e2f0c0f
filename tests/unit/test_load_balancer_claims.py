"""Contrary claims about a load balancer judged on one recorded run: its node set kept and a node
gone; no connection through a zone closed and every one closed. None both hold with the
validators as they are; a validator made to pass anything is caught on the same run."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from harness.probes.connections import Connection
from harness.probes.load_balancer import NodeSetSample
from harness.validate import contradictions as contra
from harness.validate import load_balancer as lbv

EVERY = ("a-1", "a-2", "b-1", "b-2")


def run(zone_a_leaves: bool) -> dict[str, Any]:
    """A zone-a outage from 10 s to 20 s, the node set read every 0.5 s; before KEP-3458 its nodes
    leave the set at 14 s and the connections through them close at 14.2 s."""
    reads = [NodeSetSample(t / 2, 0.0, EVERY[2:] if zone_a_leaves and 28 <= t < 42 else EVERY, ended=t / 2 + 0.05)
             for t in range(0, 50)]
    conns = [Connection(i, 1.0, f"pod-{i}", "peer", answers=[1.5, 2.0], ended=14.2 if zone_a_leaves and i < 2 else None,
                        how="closed" if zone_a_leaves and i < 2 else None,
                        ended_after=14.1 if zone_a_leaves and i < 2 else None) for i in range(4)]
    return {"events": [
        {"kind": "connection", "name": "web: the zones the connections went through", "start": 1.0, "end": 1.0,
         "data": {"paths": {str(i): [f"pod-{i}", "peer", "zone-a" if i < 2 else "zone-b"] for i in range(4)}}},
        {"kind": "fault", "name": "zone-outage", "start": 9.9, "end": 20.0,
         "data": {"target": "zone-a", "effective_after": 10.0, "effective_at": 10.1, "healed_at": 20.0}}],
        "records": [{"probe": "lb-nodes", "service": "web", "samples": [asdict(s) for s in reads]},
                    {"probe": "connection", "service": "web",
                     "connections": [{k: v for k, v in asdict(c).items() if k != "buffer"} for c in conns]}]}


@pytest.mark.parametrize("leaves, held", [
    (False, {"the load balancer of web keeps all its nodes", "no connection through zone-a is closed",
             "no connection through zone-b is closed"}),
    (True, {"a node leaves the load balancer of web", "every connection through zone-a is closed",
            "no connection through zone-b is closed"}),
])
def test_no_contrary_load_balancer_claims_both_hold(leaves: bool, held: set[str]) -> None:
    pairs = contra.load_balancer_pairs(run(leaves), 10.0, 20.0)
    assert {name for pair in pairs for name, holds, _ in pair if holds} == held
    assert contra.check_run(run(leaves)) == []


def test_a_validator_that_passes_a_changed_node_set_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lbv, "changed", lambda samples, count: [])
    monkeypatch.setattr(lbv, "ended_by", lambda connections, end: [])
    found = contra.check_run(run(True))
    assert [c.claims for c in found] == [
        ("the load balancer of web keeps all its nodes", "a node leaves the load balancer of web"),
        ("no connection through zone-a is closed", "every connection through zone-a is closed")]
    assert "the last at 14.2 s" in found[1].seen


def test_the_last_end_is_placed_between_two_looks_and_none_while_one_is_open() -> None:
    done = [Connection(0, 0.0, "p", "x", ended=3.0, ended_after=2.9), Connection(1, 0.0, "p", "x", ended=4.0,
                                                                               ended_after=3.95)]
    assert lbv.last_ended(done) == (3.95, 4.0)
    assert lbv.last_ended([*done, Connection(2, 0.0, "p", "x")]) is None and lbv.last_ended([]) is None
