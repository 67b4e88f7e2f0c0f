"""Members compared where they all hold data: by HashKV, or by their own histories on a release
whose gateway has no HashKV; and how finely a probe places the moment writes resumed."""

from __future__ import annotations

from typing import Any

import pytest

from harness import judge
from harness.etcd_gateway import EtcdUnsupported
from harness.probes.converge import stores_at
from harness.probes.samples import Sample
from harness.validate import availability as av
from harness.validate.history import first_divergence, store_split

SAME = [(2, "a", "1"), (3, "b", "2"), (4, "a", None)]


def test_histories_that_agree_have_no_divergence() -> None:
    assert first_divergence({"etcd-0": SAME, "etcd-1": list(SAME)}) == {}


def test_a_history_that_applied_an_entry_twice_is_named_at_its_first_other_revision() -> None:
    twice = [(2, "a", "1"), (3, "a", "1"), (4, "b", "2")]
    found = first_divergence({"etcd-0": SAME, "etcd-1": twice, "etcd-2": SAME})
    assert found == {"revision": 3, "etcd-0": [("b", "2")], "etcd-1": [("a", "1")], "etcd-2": [("b", "2")]}


def test_what_compaction_took_is_not_compared() -> None:
    assert first_divergence({"etcd-0": SAME, "etcd-1": SAME[1:]}, oldest=3) == {}
    assert first_divergence({"etcd-0": SAME, "etcd-1": SAME[1:]})["revision"] == 2


class _OldRelease:
    """Three members whose gateway has no HashKV; etcd-1 holds another write at revision 3."""

    class config:  # noqa: N801 - the shape EtcdCluster.config has
        class timeouts:  # noqa: N801
            command = 1.0

    members = [type("M", (), {"name": n})() for n in ("etcd-0", "etcd-1", "etcd-2")]

    def client(self, name: str, timeout: float = 1.0) -> Any:
        class Client:
            def hashkv(self, revision: int) -> int:
                raise EtcdUnsupported("http://x/v3/maintenance/hashkv: HTTP 404: this etcd's gateway has no such endpoint")

            def history(self, start: int, through: int) -> tuple[list[tuple[int, str, str | None]], int]:
                held = [(2, "a", "1"), (3, "a", "1")] if name == "etcd-1" else SAME[:2]
                return [w for w in held if start <= w[0] <= through], 0

            def close(self) -> None:
                pass

        return Client()


def test_without_hashkv_the_members_histories_are_compared() -> None:
    how, split = store_split(stores_at(_OldRelease(), 3))  # type: ignore[arg-type]
    assert how == "history" and split["revision"] == 3 and split["etcd-1"] == [("a", "1")]


def _write(start: float, end: float, ok: bool) -> Sample:
    return Sample("write", "etcd-0", start, end, ok)


def test_a_gap_ended_after_a_timed_out_request_is_resolved_only_to_that_requests_begin() -> None:
    # Acknowledged at 3.0, then requests failing fast, one timing out (2.70 to 2.95), then an ack at 3.20.
    samples = [_write(0.99, 1.0, True), _write(1.01, 1.02, False), _write(2.70, 2.95, False), _write(2.96, 3.20, True)]
    gap = av.longest_write_gap(samples, 1.0, 4.0)
    assert gap.length == pytest.approx(2.2)
    assert av.gap_unresolved(samples, gap) == pytest.approx(2.96 - 2.70)
    with pytest.raises(judge.Inconclusive, match="its probe could not place the moment closer than 0.260s"):
        judge.gap_at_most(gap, 2.0, "write gap", 0.0, av.gap_unresolved(samples, gap))
    with pytest.raises(judge.ToleranceViolation):  # missed by more than the probe could not see
        judge.gap_at_most(gap, 1.9, "write gap", 0.0, av.gap_unresolved(samples, gap))


def test_a_slow_write_between_two_acknowledged_ones_is_no_sampling_question() -> None:
    samples = [_write(0.0, 0.1, True), _write(0.11, 2.5, True)]
    assert av.write_resumed_unseen(samples, 2.5, 0.1) == 0.0


def test_an_open_gap_whose_write_was_in_flight_at_the_end_may_have_closed_before_it() -> None:
    samples = [_write(0.0, 0.1, True), _write(2.5, 2.75, False), _write(2.76, 3.1, True)]
    gap = av.longest_write_gap(samples, 0.0, 3.0)
    assert gap.open
    # The request begun at 2.5 might have been acknowledged 0.34 s later (the next one's latency).
    assert av.gap_unresolved(samples, gap) == pytest.approx(3.0 - (2.5 + 0.34))


def test_a_catch_up_is_placed_between_the_status_request_before_and_the_one_that_saw_it() -> None:
    samples = [Sample("status", "etcd-1", 1.0, 1.05, True, revision=5),
               Sample("status", "etcd-1", 1.2, 1.25, True, revision=9)]
    assert av.status_seen_late(samples, "etcd-1", 1.25, 0.5) == pytest.approx(0.25)
