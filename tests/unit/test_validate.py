"""Validators over recorded histories (tests/testdata) and small hand-made ones.

Each check is also fed a history that violates it, to show it can fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.probes.availability import ProbeHistory
from harness.probes.samples import Sample
from harness.validate import availability as av
from harness.validate import leadership as lead
from harness.validate.history import diverging_hashes, lost_writes, seqs_from_keys

DATA = Path(__file__).parent.parent / "testdata"


def recorded(name: str) -> tuple[ProbeHistory, list[dict]]:
    d = json.loads((DATA / f"{name}.json").read_text())
    return ProbeHistory.from_dict(d["histories"][0]), [e for e in d["events"] if e["kind"] == "fault"]


def term_before(samples: list[Sample], t: float) -> int:
    return max(s.term or 0 for s in samples if s.kind == "status" and s.ok and s.start < t)


def w(start: float, end: float, ok: bool = True, seq: int = 0, rev: int | None = None) -> Sample:
    return Sample("write", "etcd-0", start, end, ok, seq=seq, revision=rev)


def test_leader_zone_outage_figures() -> None:
    h, (fault,) = recorded("leader_zone_outage")
    old = next(i for i, n in h.member_ids.items() if n == "etcd-0")  # leader, in the zone that went down
    gap = av.longest_write_gap(h.samples, fault["start"], fault["end"])
    assert gap is not None and 1.0 < gap.length < 2.0
    report = lead.new_leader(h.samples, fault["start"], old, term_before(h.samples, fault["start"]))
    assert report is not None and 1.0 < report.end - fault["start"] < 2.0 and h.member_ids[report.leader] == "etcd-2"
    kept = lead.leader_kept(h.samples, fault["start"], fault["end"], "etcd-0", old, term_before(h.samples, fault["start"]),
                            h.members, h.member_ids, 1.0)
    assert kept.contrary and not kept.proven
    target = av.highest_revision(h.samples, fault["end"])
    assert 0.5 < av.catch_up_time(h.samples, "etcd-0", fault["end"], target) < 2.0


def test_two_zone_outage_has_no_acked_write_without_quorum() -> None:
    h, faults = recorded("two_zone_outage")
    lost_quorum = max(f["data"]["injected_at"] for f in faults)
    first_back = min(f["end"] for f in faults)
    acked, failed = av.writes_failed_between(h.samples, lost_quorum, first_back)
    assert (acked, failed > 0) == (0, True)
    served, unserved = av.reads_served(h.samples, "etcd-2", lost_quorum, first_back)
    assert served > 100 and unserved == 0
    assert 0 < av.first_ack_after(h.samples, first_back) < 5


def test_an_acked_write_during_lost_quorum_is_seen() -> None:
    h, faults = recorded("two_zone_outage")
    t = max(f["data"]["injected_at"] for f in faults) + 1.0
    h.samples.append(w(t, t + 0.01, ok=True, seq=999999))
    acked, _ = av.writes_failed_between(h.samples, t - 0.5, t + 0.5)
    assert acked == 1


def test_longest_gap_picks_the_largest_hole_and_counts_the_open_end() -> None:
    samples = [w(0, 0.1), w(0.1, 0.2), w(0.2, 1.7), w(1.7, 1.8), w(3.0, 3.1, ok=False)]
    gap = av.longest_write_gap(samples, 0.15, 2.0)
    assert gap == av.Gap(0.2, 1.7)
    # Writes stopped: the stretch from the last acknowledgement to the window's end is the gap.
    assert av.longest_write_gap(samples, 2.0, 3.0) == av.Gap(1.8, 3.0, open=True)
    assert av.longest_write_gap(samples, 0.15, 4.0) == av.Gap(1.8, 4.0, open=True)
    with pytest.raises(ValueError):
        av.longest_write_gap(samples, 2.0, 1.0)
    assert av.first_ack_after(samples, 0.25) == pytest.approx(1.45)
    assert av.first_ack_after(samples, 2.0) is None


def test_writes_that_stop_for_good_after_a_few_acks_are_a_long_open_gap() -> None:
    """The defect this replaces: the outage stamped before the cut took effect, a few writes
    acknowledged after the stamp, then none: the old check measured only the gaps between
    acknowledgements and passed with a few milliseconds."""
    h, (fault,) = recorded("leader_zone_outage")
    elected = lead.new_leader(h.samples, fault["start"], next(i for i, n in h.member_ids.items() if n == "etcd-0"),
                              term_before(h.samples, fault["start"]))
    assert elected is not None
    cut = [s for s in h.samples if not (s.kind == "write" and s.ok and s.end > fault["start"] + 0.02)]
    gap = av.longest_write_gap(cut, fault["start"], fault["end"])
    assert gap.open and gap.end == fault["end"] and gap.length > fault["end"] - fault["start"] - 0.05


def test_catch_up_needs_the_target_revision() -> None:
    st = [Sample("status", "etcd-1", 1.0, 1.01, True, revision=10), Sample("status", "etcd-1", 2.0, 2.01, True, revision=20)]
    assert av.catch_up_time(st, "etcd-1", 0.5, 20) == pytest.approx(1.51)
    assert av.catch_up_time(st, "etcd-1", 0.5, 21) is None


def test_lost_write_is_found() -> None:
    h, _ = recorded("leader_zone_outage")
    acked = h.acked()
    keys = [f"{h.prefix}{seq:08d}" for seq in acked]
    assert lost_writes(acked, seqs_from_keys(keys, h.prefix)) == []
    dropped = acked[len(acked) // 2]
    keys.remove(f"{h.prefix}{dropped:08d}")
    assert lost_writes(acked, seqs_from_keys(keys, h.prefix)) == [dropped]


def test_unacked_writes_may_be_missing_or_present() -> None:
    assert lost_writes([1, 2], {1, 2, 3}) == []


def test_diverging_hashes() -> None:
    assert diverging_hashes({"a": 1, "b": 1, "c": 1}) == {}
    assert diverging_hashes({"a": 1, "b": 2, "c": 1}) == {"a": 1, "b": 2, "c": 1}


def test_history_round_trips() -> None:
    h, _ = recorded("leader_zone_outage")
    again = ProbeHistory.from_dict(json.loads(json.dumps(h.to_dict())))
    assert again.samples == h.samples and again.member_ids == h.member_ids


def test_write_latency_counts_failed_and_late_ending_writes() -> None:
    fast = [w(i * 0.01, i * 0.01 + 0.002) for i in range(99)]
    slow = [w(1.0, 1.15)]  # begun in the window, ended after it: counted with its whole latency
    p99 = av.write_latency(fast + slow, 0.0, 1.0, 0.99)
    assert (p99.value, p99.writes, p99.failed) == (pytest.approx(0.002), 100, 0)
    p99 = av.write_latency(fast + slow + [w(0.5, 0.75, ok=False)], 0.0, 1.0, 0.99)
    assert (p99.value, p99.failed) == (pytest.approx(0.15), 1)  # the 100th of 101: the slow one
    two_failed = fast[:98] + [w(0.6, 0.85, ok=False), w(0.7, 0.95, ok=False)]
    p99 = av.write_latency(two_failed, 0.0, 1.0, 0.99)
    assert p99.value == float("inf")  # a failed write is never skipped
    # ... nor counted as a latency it did not measure: as the fastest, the p99 is the fast ones'.
    assert p99.low == pytest.approx(0.002) and p99.describe() == "p99 a failed write over 100 writes (2 failed)"
    assert p99.describe(measured=True).startswith("p99 2.0 ms measured (unmeasured: the failed writes; a failed write had")
    assert av.write_latency([w(0.1, 0.35, ok=False)], 0.0, 1.0, 0.99).low == 0.0
    assert av.write_latency(fast, 5.0, 6.0, 0.99).writes == 0
    with pytest.raises(ValueError):
        av.write_latency(fast, 0.0, 1.0, 0)


def _status(member: str, at: float, ok: bool, term: int = 2, leader: int = 1) -> Sample:
    return Sample("status", member, at, at + 0.01, ok, term=term if ok else None, leader=leader if ok else None)


def test_members_away_at_once_count_from_a_missed_status_to_the_next_answered_one() -> None:
    from harness.validate.availability import most_away

    one_at_a_time = [_status("m0", 1.0, False), _status("m1", 1.5, True), _status("m0", 2.0, True),
                     _status("m1", 3.0, False), _status("m1", 4.0, True)]
    assert most_away(one_at_a_time, 0.0, 10.0) == (1, 1.0, ["m0"])
    overlapping = one_at_a_time + [_status("m2", 3.5, False)]  # m2 never answers again: away to the window's end
    assert most_away(overlapping, 0.0, 10.0) == (2, 3.5, ["m1", "m2"])
    assert most_away(overlapping, 3.9, 10.0)[0] == 0  # outside the window nothing counts


def test_a_member_is_away_only_while_neither_its_status_nor_its_health_answers() -> None:
    """As in two runs here: m1, just restarted, answered no status request for 1.8 s while its
    /health said it was in the quorum, and m2 was evicted meanwhile; later every member's /health
    said "leader changed" for 1.5 s while each answered its status. Neither is two away at once."""
    from harness.validate.availability import most_away

    def health(member: str, at: float, ok: bool) -> Sample:
        return Sample("health", member, at, at + 0.01, ok, error=None if ok else "no answer")

    restarted = [_status("m1", 30.84, False), _status("m1", 32.60, True), health("m1", 30.5, False),
                 health("m1", 31.0, True), health("m2", 31.43, False), _status("m2", 31.43, False),
                 health("m2", 40.0, True), _status("m2", 40.0, True)]
    assert most_away(restarted, 30.0, 41.0) == (2, 31.43, ["m1", "m2"])
    assert most_away(restarted, 30.0, 41.0, ("status", "health")) == (1, 30.84, ["m1"])  # m1 until 31.0, m2 from 31.43
    leader_changed = [health(m, 54.58, False) for m in ("m0", "m1", "m2")] + [health(m, 56.1, True) for m in ("m1", "m2")]
    leader_changed += [_status("m0", 54.58, False), _status("m1", 54.6, True), _status("m2", 54.6, True)]
    assert most_away(leader_changed, 50.0, 60.0, ("health",))[0] == 3
    assert most_away(leader_changed, 50.0, 60.0, ("status", "health")) == (1, 54.58, ["m0"])
    both_gone = [health("m1", 3.0, False), _status("m1", 3.0, False), health("m2", 3.2, False), _status("m2", 3.1, False)]
    assert most_away(both_gone, 0.0, 10.0, ("status", "health")) == (2, 3.2, ["m1", "m2"])


def test_a_member_whose_answer_was_slow_is_back_from_the_request_it_answered() -> None:
    """As seen under CI load: m0's answered request was sent at 28.21 and came back at 28.51, after
    m2's first missed one (28.41 to 28.42); m0 may have answered at any moment from 28.21 on."""
    from harness.validate.availability import most_away

    slow = [_status("m0", 27.64, False), Sample("status", "m0", 28.21, 28.51, True, term=2, leader=1),
            Sample("status", "m2", 28.41, 28.42, False), _status("m2", 35.1, True)]
    assert most_away(slow, 20.0, 36.0) == (1, 27.64, ["m0"])
    still_away = slow[:1] + slow[2:] + [Sample("status", "m0", 28.45, 28.75, True, term=2, leader=1)]
    assert most_away(still_away, 20.0, 36.0) == (2, 28.41, ["m0", "m2"])  # sent after m2 went: both away


def test_one_timed_out_request_between_two_answers_is_no_proof_of_a_second_member_away() -> None:
    """As in CI: while the evicted leader m2 was gone, every /health said "leader changed" and one
    status request to m1 timed out after 0.25 s; m1 answered the requests before and after it."""
    from harness.validate.availability import most_away

    def health(member: str, at: float, ok: bool) -> Sample:
        return Sample("health", member, at, at + 1.2, ok, error=None if ok else "HTTP 503: leader changed")

    gone = [_status("m2", 46.0, False), health("m2", 46.0, False), health("m1", 46.1, False),
            _status("m1", 46.2, True), Sample("status", "m1", 46.23, 46.48, False, error="status: TimeoutError"),
            _status("m1", 46.49, True), _status("m2", 49.0, True)]
    assert most_away(gone, 40.0, 50.0, ("status", "health")) == (2, 46.23, ["m1", "m2"])
    assert most_away(gone, 40.0, 50.0, ("status", "health"), lone_timeouts=False) == (1, 46.0, ["m2"])
    refused = [*gone[:4], Sample("status", "m1", 46.23, 46.24, False, error="ConnectionRefusedError"), *gone[5:]]
    assert most_away(refused, 40.0, 50.0, ("status", "health"), lone_timeouts=False)[0] == 2  # refused: its port was shut
    twice = [*gone[:5], Sample("status", "m1", 46.49, 46.74, False, error="status: TimeoutError"),
             _status("m1", 46.75, True), _status("m2", 49.0, True)]
    assert most_away(twice, 40.0, 50.0, ("status", "health"), lone_timeouts=False)[0] == 2  # 0.5 s unanswered
    unanswered = gone[:5]  # m1 never answered again: away to the window's end
    assert most_away(unanswered, 40.0, 50.0, ("status", "health"), lone_timeouts=False)[0] == 2


def test_a_member_answers_again_at_its_first_answered_status_after_a_time() -> None:
    seen = [_status("m0", 1.0, True), _status("m0", 2.0, False), _status("m1", 2.5, True), _status("m0", 3.0, True),
            _status("m0", 4.0, True)]
    assert av.first_answer(seen, "m0", 1.5) == 3.0
    assert av.first_answer(seen, "m0", 4.5) is None


def test_writes_begun_in_a_window_count_however_they_ended() -> None:
    samples = [w(0.9, 1.2), w(1.0, 1.3, ok=False), w(1.5, 2.5), w(2.0, 2.1)]
    assert [s.start for s in av.writes_begun(samples, 1.0, 2.0)] == [1.0, 1.5]


def test_a_bound_missed_within_the_harnesss_own_stalls_is_inconclusive_never_a_pass() -> None:
    from harness import judge

    stalls = [Sample("stall", "harness", 1.0, 1.3, False), Sample("stall", "harness", 2.0, 2.05, False)]
    assert av.stalled(stalls, 0.0, 5.0) == pytest.approx(0.35)
    assert av.stalled(stalls, 1.2, 2.01) == pytest.approx(0.11)
    gap = av.Gap(0.9, 4.2)
    with pytest.raises(judge.Inconclusive, match="missed by 0.300s while the harness itself stalled 0.350s"):
        judge.gap_at_most(gap, 3.0, "gap", av.stalled(stalls, gap.start, gap.end))
    with pytest.raises(judge.ToleranceViolation, match="measured 3.300s"):  # more than the stalls explain
        judge.gap_at_most(gap, 2.9, "gap", av.stalled(stalls, gap.start, gap.end))
    assert not issubclass(judge.Inconclusive, judge.ToleranceViolation)
    # A duration (time to a new leader, a catch-up) the same way; one that never came is plain.
    with pytest.raises(judge.Inconclusive, match="missed by 0.200s"):
        judge.at_most(3.2, 3.0, "time to a new leader", harness_stalled=0.35)
    with pytest.raises(judge.ToleranceViolation, match="measured 3.400s"):
        judge.at_most(3.4, 3.0, "time to a new leader", harness_stalled=0.35)
    with pytest.raises(judge.ToleranceViolation, match="never happened"):
        judge.at_most(None, 3.0, "time to a new leader", harness_stalled=10.0)
    assert judge.at_most(2.9, 3.0, "time to a new leader", harness_stalled=10.0) == 2.9
    # A fault the steps held longer than the scenario said: a return-to-catch-up missed by no more
    # than the overrun is inconclusive, one missed by more is the system's.
    with pytest.raises(judge.Inconclusive, match="missed by 3.000s while the fault was held 12.000s longer"):
        judge.at_most(13.0, 10.0, "catch-up of etcd-0", held_over=12.0)
    with pytest.raises(judge.Inconclusive, match="stalled 0.500s .* and the fault was held 2.600s longer"):
        judge.at_most(13.0, 10.0, "catch-up of etcd-0", harness_stalled=0.5, held_over=2.6)
    with pytest.raises(judge.ToleranceViolation, match="measured 13.000s"):
        judge.at_most(13.0, 10.0, "catch-up of etcd-0", held_over=2.9)
    with pytest.raises(judge.ToleranceViolation, match="never happened"):
        judge.at_most(None, 10.0, "catch-up of etcd-0", held_over=12.0)
    # A write slow only across a stall: its latency less the stall is the system's at most.
    writes = [w(i * 0.01, i * 0.01 + 0.002) for i in range(49)] + [w(0.99, 1.29)]
    p99 = av.write_latency(writes + stalls, 0.0, 1.0, 0.99)
    assert p99.value == pytest.approx(0.3) and p99.unhindered == pytest.approx(0.01)


def test_a_write_is_excused_at_most_the_members_waits_for_a_cpu_across_it() -> None:
    """A stretch's wait may lie anywhere in it: it counts up to the stretch's overlap with the write."""
    waits = [Sample("cpu-wait", "members", 1.00, 1.01, True, waited=0.004),
             Sample("cpu-wait", "members", 1.01, 1.02, True, waited=0.010),
             Sample("cpu-wait", "members", 1.02, 1.03, True, waited=0.002)]
    assert av.cpu_waited(waits, 1.0, 1.03) == pytest.approx(0.016)
    assert av.cpu_waited(waits, 1.005, 1.015) == pytest.approx(0.004 + 0.005)  # each up to its overlap
    assert av.cpu_waited(waits, 2.0, 3.0) == 0.0
    writes = [w(i * 0.02, i * 0.02 + 0.002) for i in range(49)] + [w(1.0, 1.03)]
    stall = Sample("stall", "harness", 1.025, 1.028, False)
    p99 = av.write_latency(writes + waits + [stall], 0.0, 1.0, 0.99)
    assert p99.value == pytest.approx(0.03) and p99.unhindered == pytest.approx(0.03 - 0.016 - 0.003)
    failed = av.write_latency([w(1.0, 1.03, ok=False), *waits], 0.0, 1.1, 0.99)
    assert failed.unhindered == float("inf")  # a failed write has no latency to take waits from


def test_what_a_members_status_requests_saw_since_its_return() -> None:
    samples = [Sample("status", "etcd-0", 0.5, 0.6, True, revision=90),
               Sample("status", "etcd-0", 1.0, 2.0, False, error="timed out"),
               Sample("status", "etcd-0", 2.0, 2.1, True, revision=120),
               Sample("status", "etcd-0", 2.2, 3.2, False, error="connection refused"),
               Sample("status", "etcd-1", 2.0, 2.1, True, revision=300)]
    assert av.requests_since(samples, "status", 1.0, "etcd-0") == {
        "requests": 3, "answered": 1, "highest revision": 120, "last error": "connection refused"}
    assert av.requests_since(samples, "status", 5.0, "etcd-0") == {
        "requests": 0, "answered": 0, "highest revision": None, "last error": None}
    assert av.requests_since(samples, "status", 2.0)["highest revision"] == 300  # any member
