"""Read-backs of acknowledged shoot API writes: a 404 is a lost write, judged; other failures are not."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from harness.judge import ToleranceViolation
from harness.probes.availability import ProbeHistory
from harness.probes.shoot_api import MEMBER, ShootApiError, ShootApiProbe, gone_on_read_back, read_back_errors
from harness.steps import shoot as steps
from harness.timeline import Timeline
from harness.validate.history import lost_writes

PREFIX = "probe-0a1b2c3d-"


class _Client:
    """Acknowledges every write; the read-back of write 2 finds it gone, that of write 3 times out."""

    def __init__(self, probe: ShootApiProbe, writes: int) -> None:
        self.probe, self.writes, self.seq = probe, writes, 0

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        if method == "POST":
            self.seq += 1
            if self.seq == self.writes:
                self.probe._stop.set()
            return 201, {"metadata": {"resourceVersion": str(100 + self.seq)}}
        if path.endswith(f"{PREFIX}00000002"):
            raise ShootApiError(f"GET {path}: HTTP 404: configmaps not found", 404)
        if path.endswith(f"{PREFIX}00000003"):
            raise ShootApiError(f"GET {path}: TimeoutError: timed out")
        return 200, {}

    def close(self) -> None:
        pass


def _probe(writes: int) -> ShootApiProbe:
    probe = ShootApiProbe.__new__(ShootApiProbe)
    probe.timeline, probe.interval = Timeline(), 0.0
    probe.history = ProbeHistory(PREFIX, "zone-b", {}, path=MEMBER)
    probe._stop = threading.Event()
    probe.client = lambda: _Client(probe, writes)  # type: ignore[method-assign]
    return probe


def test_a_read_back_answered_404_is_recorded_as_gone_and_a_timeout_is_not() -> None:
    probe = _probe(4)
    probe._loop()
    assert probe.history.acked() == [1, 2, 3, 4]
    assert gone_on_read_back(probe.history) == [2]
    errors = read_back_errors(probe.history)
    assert len(errors) == 1 and errors[0].startswith(f"{PREFIX}00000003: ") and "timed out" in errors[0]


def test_a_write_gone_on_its_read_back_is_lost_even_if_listed_at_the_end() -> None:
    assert lost_writes([1, 2, 3], {1, 2, 3}, gone=[2]) == [2]
    assert lost_writes([1, 2, 3], {1, 3}, gone=[2, 9]) == [2]  # 9 was never acknowledged


class _Probes:
    def stop_all(self) -> None:
        pass


def _then_no_write_lost() -> Any:
    for name in dir(steps):
        if name.startswith("pytestbdd_stepdef_then_"):
            ctx = getattr(steps, name)._get_wrapped_function()()
            if ctx.parser.is_matching("no acknowledged shoot API write is lost"):
                return ctx.step_func
    raise AssertionError("no step definition matches 'no acknowledged shoot API write is lost'")


def test_the_step_fails_naming_a_configmap_gone_on_its_read_back() -> None:
    probe = _probe(4)
    probe._loop()
    probe.present = lambda: {1, 2, 3, 4}  # type: ignore[method-assign]
    with pytest.raises(ToleranceViolation, match=rf"found 1: \['default/{PREFIX}00000002'\]"):
        _then_no_write_lost()(shoot_probe=probe, probes=_Probes(), timeline=Timeline())


def test_the_step_reports_a_failed_final_listing_as_an_error_not_a_pass() -> None:
    probe = _probe(1)
    probe._loop()

    def unreachable() -> set[int]:
        raise ShootApiError("GET /api/v1/namespaces/default/configmaps: HTTP 503: etcd unavailable", 503)

    probe.present = unreachable  # type: ignore[method-assign]
    with pytest.raises(ShootApiError, match="HTTP 503"):
        _then_no_write_lost()(shoot_probe=probe, probes=_Probes(), timeline=Timeline())
