"""When a fault took effect is known as a bracket: from the last look that did not see it to the
first that did. A look that failed says nothing either way and moves neither end."""

from __future__ import annotations

import time
from typing import Any

import pytest

from harness.config import Config
from harness.errors import HarnessError
from harness.faults import runner as runner_module
from harness.faults.base import Injection
from harness.faults.runner import FaultRunner
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
