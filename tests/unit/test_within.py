"""judge.within on the reads harness.wait.poll_within records: a condition placed inside the
limit passes, one placed after it fails, and one the reads cannot place on either side of the
limit (a read slowed or the harness stalled across it) is inconclusive, never a pass."""

from __future__ import annotations

import time

import pytest

from harness import judge
from harness.wait import Polled, Reading, poll_within


def polled(limit: float, *reads: tuple[float, float, bool]) -> Polled[object]:
    return Polled(100.0, limit, tuple(Reading(100.0 + b, 100.0 + e, "yes" if held else "no", held)
                                      for b, e, held in reads))


def test_held_by_the_end_of_a_read_inside_the_limit_passes() -> None:
    assert judge.within(polled(5.0, (0.0, 0.1, False), (1.0, 1.1, False), (2.0, 2.2, True)), "x") == pytest.approx(2.2)
    assert judge.within(polled(5.0, (0.0, 0.1, True)), "x") == pytest.approx(0.1)


def test_not_held_at_a_read_begun_after_the_limit_is_a_violation() -> None:
    with pytest.raises(judge.ToleranceViolation, match=r"not at a read begun 5\.100s after the start; seen: 'no'"):
        judge.within(polled(5.0, (0.0, 0.1, False), (4.9, 5.0, False), (5.1, 5.2, False)), "x")


def test_first_held_after_a_no_read_begun_past_the_limit_is_a_violation() -> None:
    with pytest.raises(judge.ToleranceViolation, match=r"first held between 5\.500s and 6\.100s"):
        judge.within(polled(5.0, (5.5, 5.6, False), (6.0, 6.1, True)), "x")


def test_a_stall_across_the_limit_is_inconclusive_not_a_pass_nor_a_violation() -> None:
    # The last "no" read began at 4.0 s; the harness stalled, and the next read (begun 7.0 s) saw it.
    with pytest.raises(judge.Inconclusive, match=r"first held between 4\.000s .* and 7\.100s"):
        judge.within(polled(5.0, (3.0, 3.1, False), (4.0, 4.1, False), (7.0, 7.1, True)), "x")
    # A read begun inside the limit that took past it.
    with pytest.raises(judge.Inconclusive):
        judge.within(polled(5.0, (4.8, 4.9, False), (4.95, 6.5, True)), "x")


def test_poll_within_reads_once_more_after_the_limit_and_counts_errors_as_no() -> None:
    calls: list[float] = []

    def observe() -> bool:
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise RuntimeError("api away")
        return False

    got = poll_within(observe, bool, "never", 0.3, interval=0.1)
    assert got.held is None and got.reads[-1].began >= got.start + 0.3
    assert got.reads[1].error == "RuntimeError: api away" and not got.reads[1].held
    with pytest.raises(judge.ToleranceViolation):
        judge.within(got, "never")
    soon = poll_within(lambda: calls.append(0.0) or len(calls), lambda n: n >= 8, "soon", 5.0, interval=0.01)
    assert soon.held is not None and soon.held.value == 8 and judge.within(soon, "soon") < 5.0


def test_machine_calls_work_again_between_the_failed_call_and_the_first_that_worked() -> None:
    from harness.steps.aws import _worked_again

    calls = [{"kind": "create", "start": 9.0, "end": 9.1, "ok": True},  # before the restore: not counted
             {"kind": "create", "start": 10.5, "end": 10.6, "ok": False},
             {"kind": "delete", "start": 10.6, "end": 10.7, "ok": True},
             {"kind": "create", "start": 11.5, "end": 11.8, "ok": True}]
    assert _worked_again(calls, "create", 10.0) == (10.5, 11.8)
    assert _worked_again(calls, "delete", 10.0) == (10.0, 10.7)
    assert _worked_again(calls[:2], "create", 10.0) is None


def test_poll_within_counts_the_limit_from_a_start_given_in_the_past() -> None:
    # The fault took effect 0.4 s ago: 0.3 s of limit are gone, and a "no" now is a violation.
    got = poll_within(lambda: False, bool, "never", 0.3, start=time.monotonic() - 0.4)
    assert len(got.reads) == 1 and got.reads[0].began - got.start >= 0.4
    with pytest.raises(judge.ToleranceViolation, match=r"not at a read begun 0\.4\d\ds after the start"):
        judge.within(got, "never")
    # Seen at once, but only after the limit had passed unwatched: when it held is not known.
    with pytest.raises(judge.Inconclusive):
        judge.within(poll_within(lambda: True, bool, "at once", 0.3, start=time.monotonic() - 0.4), "at once")
