"""The leadership verdicts (harness.validate.leadership) on hand-made reports, and against a plain
restatement of each claim on generated raft histories (Hypothesis): whatever the probes saw or
missed, a verdict never passes what the history did not do, and contrary claims never both pass.

A "status" report gives the term of the last entry the member applied, a "witness" report its
current term; both name the leader the member follows now."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings, strategies as st

from harness.probes.samples import Sample
from harness.validate import leadership as lead

IDS = {"m0": 1, "m1": 2, "m2": 3}
NAMES = list(IDS)
BY_ID = {i: m for m, i in IDS.items()}
BEFORE = 2  # the raft term before the window; m0 leads in it
GRACE = 1.0


def seen(member: str, at: float, term: int, leader: int, kind: str = "witness") -> Sample:
    return Sample(kind, member, at, at + 0.01, True, term=term, leader=leader)


def failed(member: str, at: float, kind: str = "witness") -> Sample:
    return Sample(kind, member, at, at + 0.25, False, error="timed out")


def test_a_probe_in_the_leaders_cut_off_zone_does_not_pass_a_leader_that_changed() -> None:
    """The probe's zone held the old leader and was cut off: it sees only the old leader, which
    steps down (check-quorum) and names nobody; the others elected a new leader, which only the
    harness's own view of them shows."""
    probe_only = [seen("m0", 0.5, 2, 1, "status"), failed("m1", 0.5, "status"), seen("m0", 1.5, 2, 0, "status"),
                  seen("m0", 4.1, 2, 0, "status"), failed("m1", 4.1, "status"), failed("m2", 4.1, "status")]
    kept = lead.leader_kept(probe_only, 0.0, 4.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [(1.5, "m0, the leader before, names no leader in term 2")]
    assert not kept.proven
    # Without check-quorum the old leader would go on naming itself: still not shown, the others unseen.
    stale = [seen("m0", t, 2, 1) for t in (0.5, 1.5, 4.1)] + [failed("m1", 4.1), failed("m2", 4.1)]
    kept = lead.leader_kept(stale, 0.0, 4.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [] and not kept.proven
    assert "not seen: m1 (timed out), m2 (timed out)" in kept.why_unproven()
    # The harness's own view of the others shows the new leader.
    witnessed = stale + [seen("m1", 1.8, 3, 2), seen("m2", 4.2, 3, 2)]
    kept = lead.leader_kept(witnessed, 0.0, 4.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [(1.8, "m1 names leader m1 in term 3")]


def test_a_follower_cut_off_keeps_the_leader_it_cannot_see() -> None:
    reports = [seen("m0", 0.5, 2, 1, "status"), seen("m1", 0.5, 2, 1, "status"), failed("m2", 0.5, "status"),
               seen("m2", 0.6, 2, 0), seen("m0", 3.05, 2, 1), seen("m1", 3.02, 2, 1), failed("m2", 3.0)]
    kept = lead.leader_kept(reports, 0.0, 3.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [] and kept.proven


def test_status_reports_alone_prove_no_end_state() -> None:
    """A status's term is the last applied entry's: a majority still showing the old one may be in a
    new term whose first entry they have not applied yet."""
    reports = [seen(m, 3.1, 2, 1, "status") for m in NAMES]
    kept = lead.leader_kept(reports, 0.0, 3.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [] and not kept.proven
    assert lead.elections(reports, 0.0, 3.0, BEFORE, NAMES, BY_ID, GRACE).at_most is None


def test_a_re_election_of_the_same_member_is_a_change() -> None:
    reports = [seen("m0", 1.0, 3, 1), seen("m1", 3.1, 3, 1), seen("m0", 3.1, 3, 1)]
    kept = lead.leader_kept(reports, 0.0, 3.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert [why for _, why in kept.contrary] == ["m0 names leader m0 in term 3"] and not kept.proven


def test_an_entry_applied_in_a_higher_term_proves_an_election_whoever_is_named() -> None:
    reports = [seen("m1", 1.0, 3, 0, "status"), seen("m0", 3.1, 3, 2), seen("m1", 3.1, 3, 2), failed("m2", 3.1)]
    kept = lead.leader_kept(reports, 0.0, 3.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [(1.0, "m1 names leader none in term 3 (applied)")]
    found = lead.elections(reports, 0.0, 3.0, BEFORE, NAMES, BY_ID, GRACE)
    assert found.won == [(3, 0)] and (found.at_least, found.at_most) == (1, 1)
    assert "term 3 (an entry applied)" in found.describe()
    assert lead.deposed(reports, 0.0, 3.0, "m0", 1, BEFORE).start == 1.0


def test_a_candidate_that_never_wins_is_no_election_and_no_change() -> None:
    """A member cut off without pre-vote campaigns term after term; the others never hear it, and
    its status still shows the term of the last entry it applied."""
    reports = [seen("m2", t, 2 + i, 0) for i, t in enumerate((0.5, 1.5, 2.5), start=1)]
    reports += [seen("m2", 2.6, 2, 0, "status"), seen("m0", 3.1, 2, 1), seen("m1", 3.1, 2, 1), seen("m2", 3.1, 5, 0)]
    kept = lead.leader_kept(reports, 0.0, 3.0, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    assert kept.contrary == [] and kept.proven
    found = lead.elections(reports, 0.0, 3.0, BEFORE, NAMES, BY_ID, GRACE)
    assert (found.at_least, found.at_most) == (0, 0)
    assert "the highest term reported: 5, by m2 naming leader none" in found.describe()
    assert lead.deposed(reports, 0.0, 3.0, "m0", 1, BEFORE) is None


def test_elections_count_terms_with_a_leader_and_leave_the_others_open() -> None:
    reports = [seen("m1", 1.0, 3, 2), seen("m0", 3.1, 4, 0), seen("m1", 3.1, 4, 0), failed("m2", 3.1)]
    found = lead.elections(reports, 0.0, 3.0, BEFORE, NAMES, BY_ID, GRACE)
    assert found.won == [(3, 2)] and found.unknown == [4] and (found.at_least, found.at_most) == (1, 2)
    assert "term(s) 4 entered by a majority with no leader seen" in found.describe()
    blind = lead.elections(reports[:1] + [failed("m0", 3.1), seen("m1", 3.1, 4, 0)], 0.0, 3.0, BEFORE, NAMES, BY_ID,
                           GRACE)
    assert blind.at_most is None and "no majority was seen" in blind.describe()


def test_the_minority_with_the_highest_term_does_not_raise_the_bound() -> None:
    reports = [seen("m0", 3.1, 2, 1), seen("m1", 3.1, 2, 1), seen("m2", 3.1, 9, 0)]
    assert lead.elections(reports, 0.0, 3.0, BEFORE, NAMES, BY_ID, GRACE).at_most == 0


def test_the_end_view_takes_each_members_first_current_term_at_or_after_the_end() -> None:
    reports = [seen("m0", 2.9, 2, 1), failed("m0", 3.0), seen("m0", 3.3, 2, 1), seen("m0", 3.6, 3, 2),
               seen("m1", 4.5, 2, 1), seen("m1", 3.2, 2, 1, "status"), failed("m2", 3.2)]
    view = lead.end_view(reports, NAMES, 3.0, GRACE)
    assert view.seen["m0"].start == 3.3 and set(view.seen) == {"m0"}
    assert view.unseen == {"m1": "never asked", "m2": "timed out"}


def test_deposed_needs_a_leader_above_the_term_or_the_leader_itself_stepping_down() -> None:
    assert lead.deposed([seen("m2", 1.0, 3, 0)], 0.0, 5.0, "m0", 1, BEFORE) is None
    assert lead.deposed([seen("m2", 1.0, 3, 0), seen("m1", 2.0, 3, 3)], 0.0, 5.0, "m0", 1, BEFORE).start == 2.0
    assert lead.deposed([seen("m0", 1.5, 3, 0)], 0.0, 5.0, "m0", 1, BEFORE).start == 1.5


def test_a_new_leader_must_be_another_member_in_a_higher_term() -> None:
    stale = seen("m2", 1.0, 1, 3, "status")  # a member still naming the leader of an older term
    assert lead.new_leader([stale, seen("m0", 1.2, 3, 1)], 0.0, 1, BEFORE) is None
    assert lead.new_leader([stale, seen("m1", 1.3, 3, 2)], 0.0, 1, BEFORE).member == "m1"


# A generated raft history of three members: terms only rise, a term has at most one winner, a
# winner had a majority in its term, a follower names a leader only once it heard it, the leader
# before (m0, term 2) may step down. Observed by requests from two vantages that may fail, each
# reporting the member's state at some instant while it was in flight.

@dataclass
class History:
    # member -> (from, current term, leader followed, term of the last entry applied)
    states: dict[str, list[tuple[float, int, int, int]]] = field(
        default_factory=lambda: {m: [(0.0, BEFORE, 1, BEFORE)] for m in NAMES})
    won: list[tuple[float, int, int]] = field(default_factory=list)  # (when, term, leader id)

    def at(self, member: str, t: float) -> tuple[int, int, int]:
        _, term, leader, applied = [s for s in self.states[member] if s[0] <= t][-1]
        return term, leader, applied

    def set(self, member: str, t: float, term: int, leader: int, applied: int | None = None) -> None:
        self.states[member].append((t, term, leader, self.at(member, t)[2] if applied is None else applied))

    def kept_through(self, t: float) -> bool:
        """The plain claim: no leader elected above the term before, and m0 still leading in it."""
        return not any(at <= t for at, _, _ in self.won) and self.at("m0", t)[:2] == (BEFORE, 1)

    def elections_by(self, t: float) -> int:
        return sum(at <= t for at, _, _ in self.won)


EVENTS = st.lists(st.tuples(st.floats(0.0, 7.0), st.sampled_from(["win", "lose", "vote", "step down", "lose leader",
                                                                     "hear"]),
                            st.sampled_from(NAMES), st.sampled_from(NAMES)), max_size=8)
OBSERVATIONS = st.lists(st.tuples(st.floats(0.0, 7.5), st.sampled_from(NAMES), st.sampled_from(["status", "witness"]),
                                  st.booleans(), st.floats(0.001, 0.3), st.floats(0.0, 1.0)), min_size=20, max_size=150)


def history_of(events: list[tuple[float, str, str, str]]) -> History:
    """Terms only rise, a term has at most one winner, a winner had a majority (itself and a voter)
    in its term, a follower names a leader only once it heard it and applies the leader's entries
    only when it hears it again, the leader before (m0, term 2) may step down."""
    h = History()
    for t, kind, member, other in sorted(events):
        term, leader, _ = h.at(member, t)
        top = max(h.at(m, t)[0] for m in NAMES)
        if kind == "win" and other != member:
            h.set(member, t, top + 1, IDS[member], top + 1)
            h.set(other, t, top + 1, IDS[member])  # the voter applies the new term's entry once it hears again
            h.won.append((t, top + 1, IDS[member]))
        elif kind in ("win", "lose", "vote"):  # a campaign nobody won; a voter enters its term too
            h.set(member, t, top + 1, 0)
            if other != member and kind == "vote":
                h.set(other, t, top + 1, 0)
        elif kind == "step down" and leader == IDS[member]:
            h.set(member, t, term, 0)
        elif kind == "lose leader" and leader != IDS[member]:
            h.set(member, t, term, 0)
        elif kind == "hear" and h.won:
            _, won_term, winner = max((w for w in h.won if w[0] <= t), key=lambda w: w[1], default=(0, 0, 0))
            if won_term >= term and winner:
                h.set(member, t, won_term, winner, won_term)
    return h


def observed(h: History, observations: list[tuple[float, str, str, bool, float, float]]) -> list[Sample]:
    """Each request reports the member's state at some instant while it was in flight: a status its
    applied term, a witness its current one."""
    out = []
    for start, member, kind, ok, latency, where in observations:
        if ok:
            term, leader, applied = h.at(member, start + where * latency)
            out.append(Sample(kind, member, start, start + latency, True, term=applied if kind == "status" else term,
                              leader=leader))
        else:
            out.append(Sample(kind, member, start, start + latency, False, error="timed out"))
    return out


@settings(max_examples=300, deadline=None, database=None)
@given(EVENTS, OBSERVATIONS, st.floats(0.0, 1.0), st.floats(1.0, 6.0))
def test_leadership_verdicts_never_pass_what_the_history_did_not_do(events, observations, start, length) -> None:
    h, end = history_of(events), start + length
    samples = observed(h, observations)
    kept = lead.leader_kept(samples, start, end, "m0", 1, BEFORE, NAMES, BY_ID, GRACE)
    kept_passes = not kept.contrary and kept.proven
    if kept_passes:
        assert h.kept_through(end)
    if h.kept_through(end + GRACE + 0.3):  # no change until every report read could have been taken
        assert kept.contrary == []
    found = lead.elections(samples, start, end, BEFORE, NAMES, BY_ID, GRACE)
    assert found.at_least <= h.elections_by(end)
    if found.at_most is not None:
        assert h.elections_by(end) <= found.at_most
    gone = lead.deposed(samples, start, end, "m0", 1, BEFORE)
    if gone is not None:
        assert not h.kept_through(gone.end)
    # Contrary claims never both pass: the leader kept / a new leader elected / at least one election.
    elected = lead.new_leader([s for s in samples if s.end <= end], start, 1, BEFORE)
    assert not (kept_passes and elected is not None)
    assert not (kept_passes and found.at_least >= 1)
    at_most_zero = found.at_most is not None and found.at_most == 0
    assert not (at_most_zero and found.at_least >= 1)
