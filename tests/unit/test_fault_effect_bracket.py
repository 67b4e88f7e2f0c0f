"""When a fault took effect is known as a bracket: from the last look that did not see it to the
first that did. A look that failed says nothing either way and moves neither end."""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness.config import Config
from harness.errors import HarnessError
from harness.judge import Inconclusive, ToleranceViolation
from harness.faults import runner as runner_module
from harness.faults.base import Injection
from harness.faults.runner import FaultRunner
from harness.probes.samples import Sample
from harness.steps.checks import deposed_within
from harness.steps.scenario import Outage
from harness.timeline import Timeline


class LateEffect:
    """In effect from the fourth look on; the third look fails."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline, self.looks = timeline, []

    def available(self, env: Any) -> None:
        return None

    def validate(self, env: Any, target: str) -> str:
        return target

    def inject(self, env: Any, target: str, ctx: Injection) -> dict[str, Any]:
        time.sleep(0.01)  # planning: nothing changed yet
        ctx.record({"plan": "in the ledger before the change"})
        return {}

    def effect(self, env: Any, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        self.looks.append(self.timeline.now())
        if len(self.looks) == 3:
            raise HarnessError("could not look")
        return {"seen": True} if len(self.looks) >= 4 else None

    def heal(self, env: Any, target: str, data: dict[str, Any]) -> None:
        pass


class Ledger:
    provider, durable, config = "test", False, Config()

    def record_fault(self, entry: dict[str, Any]) -> None: ...
    def update_fault(self, fid: str, data: dict[str, Any]) -> None: ...
    def forget_fault(self, fid: str) -> None: ...
    def faults(self) -> list[dict[str, Any]]: return []
    def health(self) -> dict[str, Any]: return {}
    def wait_healthy(self, timeout: float) -> None: ...


def test_the_effect_is_bracketed_by_the_last_look_without_it_and_the_first_with_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    timeline = Timeline()
    fault = LateEffect(timeline)
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: fault)
    active = FaultRunner(Ledger(), timeline).inject("late", "zone-a", max_duration=30)  # type: ignore[arg-type]
    # looks: 1 and 2 not in effect, 3 failed, 4 in effect
    assert fault.looks[0] < active.effective_after <= fault.looks[1]  # the failed third look moved nothing
    assert fault.looks[3] <= active.effective_at and active.effective_after < active.effective_at
    assert active.event.data["injected_at"] <= fault.looks[0]
    outage = Outage([active], active.effective_after, None, 0, seen=active.effective_at)
    assert (outage.start, outage.effect_seen) == (active.effective_after, active.effective_at)


def test_seen_at_the_first_look_it_may_have_taken_effect_from_its_first_recorded_change(
        monkeypatch: pytest.MonkeyPatch) -> None:
    timeline = Timeline()
    fault = LateEffect(timeline)
    fault.looks = [0.0, 0.0, 0.0]  # the next look is the fourth: in effect
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: fault)
    active = FaultRunner(Ledger(), timeline).inject("late", "zone-a", max_duration=30)  # type: ignore[arg-type]
    changing = active.event.data["changing_from"]
    assert active.event.start + 0.01 <= changing == active.effective_after < active.effective_at
    # A fault whose look reads an API back late: only its first recorded change bounds it.
    late = LateEffect(timeline)
    late.effect_reads_late = True  # type: ignore[attr-defined]
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: late)
    active = FaultRunner(Ledger(), timeline).inject("late", "zone-b", max_duration=30)  # type: ignore[arg-type]
    assert active.effective_after == active.event.data["changing_from"] < late.looks[2]
    assert Outage([], 1.0, None, 0).effect_seen == 1.0  # no bracket: one moment


class Slow:
    """Takes `seconds` to apply; remembers when each injection ran and what was healed."""

    def __init__(self, seconds: float, refuse: str = "", fail: str = "") -> None:
        self.seconds, self.refuse, self.fail = seconds, refuse, fail
        self.ran: dict[str, tuple[float, float]] = {}
        self.healed: list[str] = []

    def available(self, env: Any) -> None:
        return None

    def validate(self, env: Any, target: str) -> str:
        if target == self.refuse:
            raise HarnessError(f"no such target {target!r}")
        return target

    def inject(self, env: Any, target: str, ctx: Injection) -> dict[str, Any]:
        began = time.monotonic()
        time.sleep(self.seconds)
        self.ran[target] = (began, time.monotonic())
        if target == self.fail:
            raise HarnessError(f"{target} could not be changed")
        return {}

    def heal(self, env: Any, target: str, data: dict[str, Any]) -> None:
        self.healed.append(target)


def test_faults_injected_together_strike_side_by_side(monkeypatch: pytest.MonkeyPatch) -> None:
    fault = Slow(0.3)
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: fault)
    runner = FaultRunner(Ledger(), Timeline())  # type: ignore[arg-type]
    active = runner.inject_together([("slow", "m1", None), ("slow", "m2", None)])
    assert [a.target for a in active] == ["m1", "m2"]
    assert sorted(a.id for a in runner.active) == sorted(a.id for a in active)
    (b1, e1), (b2, e2) = fault.ran["m1"], fault.ran["m2"]
    assert b2 < e1 and b1 < e2, f"one after the other: {fault.ran}"


def test_faults_together_change_nothing_on_bad_input_and_heal_the_others_when_one_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = Slow(0.0, refuse="nope")
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: refusing)
    runner = FaultRunner(Ledger(), Timeline())  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="nope"):
        runner.inject_together([("slow", "m1", None), ("slow", "nope", None)])
    assert refusing.ran == {} and runner.active == []

    failing = Slow(0.05, fail="m2")
    monkeypatch.setattr(runner_module, "get_fault", lambda kind, **options: failing)
    with pytest.raises(HarnessError, match="m2 could not be changed"):
        runner.inject_together([("slow", "m1", None), ("slow", "m2", None)])
    assert sorted(failing.healed) == ["m1", "m2"] and runner.active == []


def test_an_outage_held_past_what_the_scenario_said_knows_by_how_much() -> None:
    timeline = Timeline()
    outage = Outage([], timeline.now(), None, 0)
    outage.hold(timeline, 0.05)
    assert outage.lasts == 0.05 and timeline.now() >= outage.start + 0.05  # counted from the effect
    assert outage.held_over() == 0.0  # nothing returned yet
    outage.healed_at = outage.start + 4.0
    assert outage.held_over() == pytest.approx(3.95)
    outage.healed_at = outage.start + 0.01  # healed sooner than said (a step brought it back early)
    assert outage.held_over() == 0.0
    assert Outage([], 1.0, None, 0, healed_at=30.0).held_over() == 0.0  # no length said: no overrun


def _deposed_at(at: float) -> list[Sample]:
    """m0 led term 2 before; from `at` on m1 reports itself leader in term 3."""
    return [Sample("witness", "m1", 0.5, 0.51, True, term=2, leader=1),
            Sample("witness", "m1", at, at + 0.01, True, term=3, leader=2)]


def test_a_deposition_later_than_the_bound_by_no_more_than_the_fault_was_held_over_is_inconclusive() -> None:
    ids = {1: "m0", 2: "m1"}
    said = Outage([], 0.0, "m0", 1, term_before=2, healed_at=5.0, lasts=5.0)  # held as long as it said
    deposed_within(_deposed_at(5.0 + 9.0), ids, said, 10.0)  # within the bound: a pass
    with pytest.raises(ToleranceViolation):
        deposed_within(_deposed_at(5.0 + 11.0), ids, said, 10.0)  # nothing held over: a plain miss
    held = Outage([], 0.0, "m0", 1, term_before=2, healed_at=8.0, lasts=5.0)  # steps held it 3 s longer
    with pytest.raises(Inconclusive, match="held 3.000s longer"):
        deposed_within(_deposed_at(8.0 + 12.0), ids, held, 10.0)
    with pytest.raises(ToleranceViolation, match="deposed within 10 s"):
        deposed_within(_deposed_at(8.0 + 13.5), ids, held, 10.0)  # later than the hold explains
