"""What the members' own reports prove about etcd's leadership over a window, and what no vantage
could see.

Two kinds of report, two meanings of "term". A status request ("status" samples, from the probe's
client zone) gives the term of the last entry the member applied: it rises only once the leader of
a new term committed an entry, so a status in a term above the one before proves a leader was
elected in it, and a candidate's campaigns never show. The member's raft state ("witness" samples,
through the harness's own view of each member) gives its current term, which a candidate raises,
and the leader it follows.

Two facts of raft make a sound verdict possible from samples that come and go:

- A member's current term only rises, and a member leads only in a term it won. So a member seen
  in the term it had before the window, at or after the window's end, was in no higher term during
  it; the leader seen still leading in that term never stopped leading (leading again would have
  needed a new term).
- A leader elected in a term had a majority of the members in that term or higher; any other
  majority shares a member with it. So a majority seen at the end in the old term proves no
  leader was elected above it, and the highest term a majority could be in bounds the elections.

A report of a leader in a term proves that election: a follower names a leader only once the
term's leader has spoken to it. Every report counts, from every vantage; a request that failed,
or a member that names no leader, is a gap in what was seen, never a silent pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Collection, Iterable

from harness.probes.samples import Sample

# Reports, by vantage: "status" from the probe's client zone (the applied term), "witness" through
# the harness's own view of each member (the current term).
STATUS_KINDS = ("status", "witness")
CURRENT_TERM = ("witness",)  # the kinds whose term is the member's current one


def quorum(members: int) -> int:
    return members // 2 + 1


def named(member_id: int | None, names: dict[int, str]) -> str:
    return "none" if not member_id else names.get(member_id, str(member_id))


def reports(samples: Iterable[Sample], start: float, end: float,
            kinds: tuple[str, ...] = STATUS_KINDS) -> list[Sample]:
    """Answered requests of `kinds` begun inside [start, end], oldest first."""
    return sorted((s for s in samples if s.kind in kinds and s.ok and s.term is not None
                   and start <= s.start <= end), key=lambda s: s.start)


def elected(s: Sample, term_before: int) -> bool:
    """The report proves a leader was elected in its term, above `term_before`: an applied entry of
    that term, or a leader followed in it."""
    return (s.term or 0) > term_before and (s.kind not in CURRENT_TERM or bool(s.leader))


@dataclass(frozen=True)
class EndView:
    """Each member's first report of its current term begun in [at, at + grace], and for the
    members that gave none there, the last thing a request to them got."""

    at: float
    seen: dict[str, Sample]
    unseen: dict[str, str]

    def terms(self) -> dict[str, int]:
        return {m: s.term or 0 for m, s in self.seen.items()}

    def describe(self, names: dict[int, str]) -> str:
        seen = ", ".join(f"{m} term {s.term} leader {named(s.leader, names)} at {s.start:.2f} s"
                         for m, s in sorted(self.seen.items()))
        unseen = ", ".join(f"{m} ({why})" for m, why in sorted(self.unseen.items()))
        return f"at the window's end ({self.at:.2f} s): {seen or 'no member answered'}" + (
            f"; not seen: {unseen}" if unseen else "")


def end_view(samples: Iterable[Sample], members: Iterable[str], at: float, grace: float) -> EndView:
    """What each member said of its current term first at or after `at` (within `grace`)."""
    samples = list(samples)
    seen: dict[str, Sample] = {}
    for s in reports(samples, at, at + grace, CURRENT_TERM):
        seen.setdefault(s.member, s)
    unseen = {}
    for m in members:
        if m in seen:
            continue
        tried = sorted((s for s in samples if s.kind in CURRENT_TERM and s.member == m and s.start <= at + grace),
                       key=lambda s: s.start)
        unseen[m] = (tried[-1].error or "answered without a term") if tried else "never asked"
    return EndView(at, seen, unseen)


def contrary_to_leader(s: Sample, leader_id: int, leader: str | None, term_before: int,
                       names: dict[int, str]) -> str | None:
    """Why this report shows the leadership not as it was (None: it does not): a leader named in a
    higher term (the same member re-elected too) or another leader named, or the old leader itself
    leading no more. A member alone in a higher term, naming nobody, is a candidate: the leader is
    deposed only once it hears of that term, which its own reports then show."""
    term = s.term or 0
    if elected(s, term_before) or (s.leader and s.leader != leader_id):
        applied = " (applied)" if s.kind not in CURRENT_TERM else ""
        return f"{s.member} names leader {named(s.leader, names)} in term {term}{applied}"
    if s.member == leader and (s.leader != leader_id or term > term_before):
        now = f"leader {named(s.leader, names)}" if s.leader else "no leader"
        return f"{leader}, the leader before, names {now} in term {term}"
    return None


@dataclass(frozen=True)
class LeaderKept:
    """Whether the leader before a window led throughout it, in the same raft term."""

    leader: str | None
    leader_id: int
    term_before: int
    members: int
    names: dict[int, str]  # member id -> name, for the messages
    contrary: list[tuple[float, str]]  # (first seen, what) of each distinct report showing a change
    end: EndView

    @property
    def proven(self) -> bool:
        """The old leader seen leading in the old term at the end, and a majority seen in that term."""
        own = self.end.seen.get(self.leader or "")
        kept = own is not None and own.leader == self.leader_id and own.term == self.term_before
        in_term = [m for m, t in self.end.terms().items() if t == self.term_before]
        return bool(self.leader_id) and kept and len(in_term) >= quorum(self.members)

    def why_unproven(self) -> str:
        if not self.leader_id:
            return "the members agreed on no leader before the window"
        return (f"the leader before ({self.leader}, term {self.term_before}) was not seen still leading in that term "
                f"with a majority ({quorum(self.members)} of {self.members}) in it, "
                f"{self.end.describe(self.names)}")


def leader_kept(samples: Iterable[Sample], start: float, end: float, leader: str | None, leader_id: int,
                term_before: int, members: Collection[str], names: dict[int, str], grace: float) -> LeaderKept:
    """`members`: every member of the cluster (a majority is counted of them); `names`: their ids."""
    samples = list(samples)
    contrary: dict[str, float] = {}
    for s in reports(samples, start, end):
        why = contrary_to_leader(s, leader_id, leader, term_before, names)
        if why is not None:
            contrary.setdefault(why, s.start)
    return LeaderKept(leader, leader_id, term_before, len(members), dict(names),
                      sorted((t, why) for why, t in contrary.items()), end_view(samples, members, end, grace))


@dataclass(frozen=True)
class Elections:
    """The leader elections in raft terms above `term_before`, as far as the reports tell.

    `won`: the terms in which a report inside the window proved a leader elected; `unknown`: the
    terms up to the highest a majority could have reached by the end in which none did (a campaign
    nobody won, or an election no vantage saw). None of them: no majority was seen at the end, so
    how many there were is unbounded."""

    term_before: int
    names: dict[int, str]
    won: list[tuple[int, int]]  # (term, leader id; 0: an entry of the term was applied, its leader not named)
    unknown: list[int] | None
    highest: Sample | None  # the report of the highest term inside the window
    end: EndView

    @property
    def at_least(self) -> int:
        return len(self.won)

    @property
    def at_most(self) -> int | None:
        return None if self.unknown is None else len(self.won) + len(self.unknown)

    def describe(self) -> str:
        won = ", ".join(f"term {t} leader {named(leader, self.names)}" if leader else f"term {t} (an entry applied)"
                        for t, leader in self.won) or "none"
        out = f"{len(self.won)} election(s) seen above term {self.term_before} ({won})"
        if self.highest is not None and (self.highest.term or 0) > max([self.term_before] + [t for t, _ in self.won]):
            out += (f"; the highest term reported: {self.highest.term}, by {self.highest.member} naming leader "
                    f"{named(self.highest.leader, self.names)}")
        if self.unknown is None:
            out += f"; how many more is not known: no majority was seen {self.end.describe(self.names)}"
        elif self.unknown:
            out += (f"; term(s) {', '.join(map(str, self.unknown))} entered by a majority with no leader seen in them "
                    "(a campaign nobody won, or an election no vantage saw)")
        return out


def elections(samples: Iterable[Sample], start: float, end: float, term_before: int, members: Collection[str],
              names: dict[int, str], grace: float) -> Elections:
    """`members`: every member of the cluster (a majority is counted of them); `names`: their ids."""
    samples = list(samples)
    inside = reports(samples, start, end)
    by_term: dict[int, int] = {}  # term -> its leader's id (0: an applied entry of it seen, not who led)
    for s in inside:
        if elected(s, term_before) and s.end <= end and s.term is not None:
            by_term[s.term] = by_term.get(s.term) or s.leader or 0
    won = sorted(by_term.items())
    highest = max(inside, key=lambda s: s.term or 0, default=None)
    view = end_view(samples, members, end, grace)
    terms = sorted(view.terms().values())
    majority = quorum(len(members))
    if len(terms) < majority:
        return Elections(term_before, dict(names), won, None, highest, view)
    bound = max([terms[majority - 1]] + [t for t, _ in won])
    seen_terms = {t for t, _ in won}
    unknown = [t for t in range(term_before + 1, bound + 1) if t not in seen_terms]
    return Elections(term_before, dict(names), won, unknown, highest, view)


def new_leader(samples: Iterable[Sample], after: float, leader_id: int, term_before: int) -> Sample | None:
    """The first report, begun after `after`, naming a leader elected above `term_before` other than
    `leader_id` (by when it came back)."""
    named_ = [s for s in reports(samples, after, float("inf"))
              if s.leader and s.leader != leader_id and (s.term or 0) > term_before]
    return min(named_, key=lambda s: s.end, default=None)


def deposed(samples: Iterable[Sample], start: float, end: float, leader: str | None, leader_id: int,
            term_before: int) -> Sample | None:
    """The first report begun in [start, end] that proves the leader of `term_before` led no more:
    a leader named in a higher term, or that leader itself leading no more. A member alone in a
    higher term, naming nobody, is a candidate that may never have won: no proof."""
    for s in reports(samples, start, end):
        stepped_down = s.member == leader and (s.leader != leader_id or (s.term or 0) > term_before)
        if elected(s, term_before) or stepped_down:
            return s
    return None
