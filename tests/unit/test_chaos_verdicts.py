"""The chaos job's verdicts are harness.judge's, as the Then-steps': every broken promise named,
a figure that never came is a failure, an open write gap says writes had not resumed."""

from __future__ import annotations

from harness.chaos_run import Bounds, ZoneResult
from harness.validate.availability import Gap


def kept() -> ZoneResult:
    return ZoneResult("zone-a", had_leader=True, not_ready_after=8.0, moved_after=30.0, recovered_after=20.0,
                      etcd_gap=Gap(10.0, 11.5), shoot_gap=Gap(10.0, 12.0), hashes_equal=True)


def test_a_run_that_kept_every_promise_has_no_problem() -> None:
    assert kept().problems(Bounds()) == []


def test_every_broken_promise_is_named_with_what_was_measured() -> None:
    r = kept()
    r.not_ready_after, r.recovered_after = 25.0, None
    r.etcd_gap = Gap(10.0, 40.0, open=True)  # writes stopped and never came back within the window
    r.shoot_lost, r.hashes_equal = 2, False
    problems = r.problems(Bounds())
    assert [p.split(":")[0].split(";")[0] for p in problems] == [
        "nodes NotReady after the cut", "etcd-main write gap", "every pod Running again after the return",
        "acknowledged shoot API writes lost", "etcd members end with equal HashKV"]
    assert "measured 25.000s" in problems[0]
    assert "writes had not resumed when the window ended" in problems[1]
    assert "never happened" in problems[2]


def test_a_gap_never_measured_is_a_failure_not_a_pass() -> None:
    r = kept()
    r.shoot_gap = None
    assert [p for p in r.problems(Bounds()) if p.startswith("shoot API write gap") and "never happened" in p]
