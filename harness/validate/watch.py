"""Watch guarantees and data safety, judged over recorded histories.

Inputs:

- the revision history of the keys, `KeyHistory` (key -> [(revision, value)], value None
  for a delete), from the acknowledged writes (`oplog.acknowledged_writes(ops)`);
- what each watcher received, a `WatchRecord`: the key prefix it watched, the revision it
  started from, every event in the order received (across reconnects), and where it
  reconnected (the index of the first event of the new stream and the revision it asked
  to resume from);
- for lost writes, the final state of the keys (key -> (mod revision, value)), read once
  the load has stopped.

etcd's guarantees checked here (https://etcd.io/docs/v3.5/learning/api_guarantees/#watch-apis),
as etcd's robustness suite checks them: ordered (revisions never go back; a key's revisions
strictly increase), unique (no event twice), reliable (no event missing between the start and
the last event seen), complete (every event up to the run's final revision arrived: a watcher
that went silent is caught), resumable (after a reconnect from revision r the stream continues
from r, nothing repeated, nothing skipped), atomic (the events of one revision come in one
response), progress notifications (none claims a revision whose events had not all been sent,
no event at or below it follows), prevKV (an event's previous value is the key's value before
it) and isCreate (a put is a create exactly when the key was absent before it), where the
watcher recorded them; and no acknowledged write is lost. The events a watcher must see are the
acknowledged writes under its prefix plus every event any watcher saw under it (a write
whose response was lost still shows up in the other watchers).

Every check is a pure function returning anomalies (dataclasses whose str names the
anomaly and what was seen), empty when the history is clean.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.validate.oplog import KeyHistory, MalformedHistory, Op

EventType = Literal["put", "delete"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    revision: int
    key: str
    type: EventType
    value: str | None = None  # the value put; None for a delete

    @property
    def ident(self) -> tuple[int, str]:
        return self.revision, self.key

    def __str__(self) -> str:
        what = f"put {self.key!r}={self.value!r}" if self.type == "put" else f"delete {self.key!r}"
        return f"{what} @{self.revision}"


@dataclass(frozen=True, slots=True)
class Reconnect:
    at: int  # index in the record's events of the first event the new stream delivered
    revision: int  # the start revision the watcher asked to resume from


@dataclass(frozen=True)
class Segment:
    """The events one stream (the first watch, or one after a reconnect) delivered."""

    number: int  # 0 for the first stream
    start_revision: int
    offset: int  # index of its first event in the record
    events: tuple[WatchEvent, ...]


@dataclass(frozen=True, slots=True)
class EventDetail:
    """What a watcher recorded of an event besides its identity (None: not recorded)."""

    response: int | None = None  # the number of the response that carried it
    created: int | None = None  # a put's create revision (== its revision: a create)
    prev: str | None = None  # with prev_kv: the value before it
    prev_known: bool = False  # whether prev_kv was asked for (prev None then means "absent before")


@dataclass(frozen=True, slots=True)
class Progress:
    at: int  # index in the record's events of the first event after the notification
    revision: int  # every event up to this revision has been sent
    segment: int = 0  # the stream it came on (0: the first, n: after the n-th reconnect)


@dataclass(frozen=True)
class WatchRecord:
    watcher: str
    prefix: str  # keys watched: every key starting with it
    start_revision: int  # the first revision watched (header revision + 1 for a watch "from now")
    events: tuple[WatchEvent, ...]
    reconnects: tuple[Reconnect, ...] = ()
    details: tuple[EventDetail, ...] = ()  # aligned with events, when recorded
    progress: tuple[Progress, ...] = ()

    def __post_init__(self) -> None:
        at = [r.at for r in self.reconnects]
        if at != sorted(at) or any(not 0 <= a <= len(self.events) for a in at):
            raise MalformedHistory(
                f"watcher {self.watcher}: reconnect points {at} must be sorted indexes into its {len(self.events)} events"
            )
        if self.details and len(self.details) != len(self.events):
            raise MalformedHistory(f"watcher {self.watcher}: {len(self.details)} event details for {len(self.events)} events")

    def covers(self, key: str) -> bool:
        return key.startswith(self.prefix)

    def detail(self, index: int) -> EventDetail:
        return self.details[index] if self.details else EventDetail()

    def segments(self) -> list[Segment]:
        starts = [(0, self.start_revision)] + [(r.at, r.revision) for r in self.reconnects]
        out = []
        for n, (at, rev) in enumerate(starts):
            end = starts[n + 1][0] if n + 1 < len(starts) else len(self.events)
            out.append(Segment(n, rev, at, self.events[at:end]))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "watcher": self.watcher,
            "prefix": self.prefix,
            "start_revision": self.start_revision,
            "events": [[e.revision, e.key, e.type, e.value] for e in self.events],
            "reconnects": [[r.at, r.revision] for r in self.reconnects],
            "details": [[d.response, d.created, d.prev, d.prev_known] for d in self.details],
            "progress": [[p.at, p.revision, p.segment] for p in self.progress],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> WatchRecord:
        try:
            return cls(
                watcher=str(d["watcher"]),
                prefix=str(d["prefix"]),
                start_revision=int(d["start_revision"]),
                events=tuple(WatchEvent(int(r), str(k), t, v) for r, k, t, v in d["events"]),
                reconnects=tuple(Reconnect(int(a), int(r)) for a, r in d.get("reconnects", ())),
                details=tuple(EventDetail(*row) for row in d.get("details", ())),
                progress=tuple(Progress(int(a), int(r), int(n)) for a, r, n in d.get("progress", ())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedHistory(f"malformed watch record {str(d)[:200]}: {exc!r}") from None


FinalState = Mapping[str, tuple[int, str]]  # key -> (mod revision, value) of the keys present


def final_from_json(d: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    return {str(k): (int(rev), str(v)) for k, (rev, v) in d.items()}


# --- anomalies -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReorderedEvent:
    watcher: str
    index: int
    event: WatchEvent
    after: WatchEvent  # the event of a higher revision delivered before it

    def __str__(self) -> str:
        return f"reordered event: watcher {self.watcher} got {self.event} at #{self.index}, after {self.after}"


@dataclass(frozen=True)
class DuplicateEvent:
    watcher: str
    index: int
    event: WatchEvent
    first_index: int

    def __str__(self) -> str:
        return f"duplicate event: watcher {self.watcher} got {self.event} twice, at #{self.first_index} and #{self.index}"


@dataclass(frozen=True)
class MissedEvent:
    watcher: str
    event: WatchEvent  # the event it should have got
    previous: int | None  # revision of the last event it got before, if any
    following: int | None  # revision of the first event it got after, if any

    def __str__(self) -> str:
        around = ", ".join(
            part
            for part in (
                f"it got @{self.previous} before" if self.previous is not None else "",
                f"@{self.following} after" if self.following is not None else "",
            )
            if part
        )
        return f"gap in watch: watcher {self.watcher} never got {self.event}" + (f" ({around})" if around else "")


@dataclass(frozen=True)
class ResumeRepeated:
    watcher: str
    resumed_from: int
    index: int
    event: WatchEvent
    first_index: int

    def __str__(self) -> str:
        return (
            f"resume repeated an event: watcher {self.watcher} resumed from @{self.resumed_from} and got {self.event} "
            f"again at #{self.index} (first at #{self.first_index})"
        )


@dataclass(frozen=True)
class ResumeSkipped:
    watcher: str
    resumed_from: int
    last_before: int | None  # the highest revision it had got before reconnecting
    event: WatchEvent

    def __str__(self) -> str:
        before = f"after @{self.last_before} " if self.last_before is not None else ""
        return (
            f"resume skipped an event: watcher {self.watcher} reconnected {before}and resumed from @{self.resumed_from}, "
            f"but never got {self.event}"
        )


@dataclass(frozen=True)
class InconsistentEvent:
    watcher: str
    index: int
    event: WatchEvent
    expected: WatchEvent | None  # None: the key is outside the watched prefix

    def __str__(self) -> str:
        if self.expected is None:
            return f"inconsistent event: watcher {self.watcher} got {self.event} at #{self.index}, outside its prefix"
        return f"inconsistent event: watcher {self.watcher} got {self.event} at #{self.index}; the history has {self.expected}"


@dataclass(frozen=True)
class LostWrite:
    key: str
    revision: int
    value: str
    reason: str

    def __str__(self) -> str:
        return f"lost write: put {self.key!r}={self.value!r} acknowledged at revision {self.revision} is gone: {self.reason}"


@dataclass(frozen=True)
class IncompleteWatch:
    watcher: str
    missed: int  # events after its last one, up to the final revision, it never got
    through_revision: int
    last_revision: int | None  # the last revision it delivered (None: nothing at all)
    first_missed: WatchEvent

    def __str__(self) -> str:
        last = f"its last event was @{self.last_revision}" if self.last_revision is not None else "it delivered nothing"
        return (f"incomplete watch: watcher {self.watcher} missed {self.missed} event(s) up to the final revision "
                f"@{self.through_revision} ({last}; first missed: {self.first_missed})")


@dataclass(frozen=True)
class SplitRevision:
    watcher: str
    event: WatchEvent
    responses: tuple[int, ...]

    def __str__(self) -> str:
        return (f"non-atomic watch: watcher {self.watcher} got the events of revision @{self.event.revision} in "
                f"responses {list(self.responses)}")


@dataclass(frozen=True)
class BadProgress:
    watcher: str
    progress: int
    event: WatchEvent
    why: str

    def __str__(self) -> str:
        return f"progress notification @{self.progress} to watcher {self.watcher} {self.why}: {self.event}"


@dataclass(frozen=True)
class WrongEventDetail:
    watcher: str
    index: int
    event: WatchEvent
    what: str  # "prevKV" | "isCreate"
    got: Any
    expected: Any

    def __str__(self) -> str:
        return (f"wrong {self.what}: watcher {self.watcher} got {self.event} at #{self.index} with {self.what} "
                f"{self.got!r}; the history says {self.expected!r}")


WatchAnomaly = (ReorderedEvent | DuplicateEvent | MissedEvent | ResumeRepeated | ResumeSkipped | InconsistentEvent
                | IncompleteWatch | SplitRevision | BadProgress | WrongEventDetail)


# --- what must be seen -----------------------------------------------------------------------


def expected_events(history: KeyHistory, records: Iterable[WatchRecord] = ()) -> dict[tuple[int, str], WatchEvent]:
    """(revision, key) -> event: the acknowledged writes, then what any watcher saw besides."""
    out: dict[tuple[int, str], WatchEvent] = {}
    for key, versions in history.items():
        for rev, value in versions:
            out[(rev, key)] = WatchEvent(rev, key, "put" if value is not None else "delete", value)
    for record in records:
        for e in record.events:
            out.setdefault(e.ident, e)
    return out


def _covered(record: WatchRecord, expected: Mapping[tuple[int, str], WatchEvent]) -> list[WatchEvent]:
    return sorted((e for e in expected.values() if record.covers(e.key)), key=lambda e: e.ident)


def _neighbours(revisions: Sequence[int], rev: int) -> tuple[int | None, int | None]:
    i = bisect.bisect_left(revisions, rev)
    j = bisect.bisect_right(revisions, rev)
    return (revisions[i - 1] if i > 0 else None), (revisions[j] if j < len(revisions) else None)


# --- the checks ------------------------------------------------------------------------------


def ordered(record: WatchRecord) -> list[ReorderedEvent]:
    """Within each stream, revisions never go back (a key's strictly increase).

    A repeat of an event is a duplicate (no_duplicates), not a reordering; a stream after a
    reconnect going back is judged by resumable.
    """
    found = []
    for seg in record.segments():
        seen: set[tuple[int, str]] = set()
        top: WatchEvent | None = None
        for i, e in enumerate(seg.events, seg.offset):
            if e.ident in seen:
                continue
            seen.add(e.ident)
            if top is not None and e.revision < top.revision:
                found.append(ReorderedEvent(record.watcher, i, e, top))
            else:
                top = e
    return found


def no_duplicates(record: WatchRecord) -> list[DuplicateEvent]:
    """No stream delivers the same (revision, key) twice."""
    found = []
    for seg in record.segments():
        first: dict[tuple[int, str], int] = {}
        for i, e in enumerate(seg.events, seg.offset):
            if e.ident in first:
                found.append(DuplicateEvent(record.watcher, i, e, first[e.ident]))
            else:
                first[e.ident] = i
    return found


def no_gaps(record: WatchRecord, history: KeyHistory, others: Iterable[WatchRecord] = ()) -> list[MissedEvent]:
    """Every event under the prefix is delivered, from the start to the last event seen.

    Judged per stream: the first from its start revision, each later one from its first new
    event (the seam at a reconnect is resumable's). `others`: the other watchers, whose
    events count as having happened.
    """
    expected = _covered(record, expected_events(history, [record, *others]))
    revisions = sorted(e.revision for e in record.events)
    found = []
    delivered_before: set[tuple[int, str]] = set()
    for seg in record.segments():
        fresh = [e for e in seg.events if e.ident not in delivered_before]
        got = {e.ident for e in seg.events}
        if fresh:
            lo = seg.start_revision if seg.number == 0 else min(e.revision for e in fresh)
            hi = max(e.revision for e in seg.events)
            for e in expected:
                if lo <= e.revision <= hi and e.ident not in got:
                    found.append(MissedEvent(record.watcher, e, *_neighbours(revisions, e.revision)))
        delivered_before |= got
    return found


def resumable(record: WatchRecord, history: KeyHistory, others: Iterable[WatchRecord] = ()) -> list[ResumeRepeated | ResumeSkipped]:
    """After a reconnect from revision r the events continue from r: none repeated, none skipped."""
    expected = _covered(record, expected_events(history, [record, *others]))
    found: list[ResumeRepeated | ResumeSkipped] = []
    first_index: dict[tuple[int, str], int] = {}
    segments = record.segments()
    for i, e in enumerate(segments[0].events):
        first_index.setdefault(e.ident, i)
    for seg in segments[1:]:
        last_before = max((rev for rev, _ in first_index), default=None)
        fresh = []
        for i, e in enumerate(seg.events, seg.offset):
            if e.ident in first_index:  # delivered by an earlier stream
                found.append(ResumeRepeated(record.watcher, seg.start_revision, i, e, first_index[e.ident]))
            else:
                fresh.append(e)
        if fresh:
            floor = record.start_revision - 1 if last_before is None else last_before
            first_new = min(e.revision for e in fresh)
            for e in expected:
                if floor < e.revision < first_new and e.ident not in first_index:
                    found.append(ResumeSkipped(record.watcher, seg.start_revision, last_before, e))
        for i, e in enumerate(seg.events, seg.offset):
            first_index.setdefault(e.ident, i)
    return found


def consistent(record: WatchRecord, history: KeyHistory, others: Iterable[WatchRecord] = ()) -> list[InconsistentEvent]:
    """Each event is under the prefix and agrees with the history and with the other watchers."""
    expected = expected_events(history, others)
    found = []
    for i, e in enumerate(record.events):
        if not record.covers(e.key):
            found.append(InconsistentEvent(record.watcher, i, e, None))
            continue
        want = expected.get(e.ident)
        if want is not None and want != e:
            found.append(InconsistentEvent(record.watcher, i, e, want))
    return found


def caught_up(
    record: WatchRecord, history: KeyHistory, through_revision: int, others: Iterable[WatchRecord] = ()
) -> list[MissedEvent]:
    """Every event under the prefix up to `through_revision` arrived (after the last one seen too).

    For a judgement at the end of a run, once the watchers were given time to catch up.
    """
    got = {e.ident for e in record.events}
    revisions = sorted(e.revision for e in record.events)
    return [
        MissedEvent(record.watcher, e, *_neighbours(revisions, e.revision))
        for e in _covered(record, expected_events(history, [record, *others]))
        if record.start_revision <= e.revision <= through_revision and e.ident not in got
    ]


def complete(
    record: WatchRecord, history: KeyHistory, through_revision: int, others: Iterable[WatchRecord] = ()
) -> list[IncompleteWatch]:
    """Every event under the prefix after the last one delivered, up to the run's final revision,
    arrived: a watcher that went silent (or was stopped) is one anomaly saying how many it missed.
    (Events missing before its last one are no_gaps's.)"""
    last = max((e.revision for e in record.events), default=None)
    floor = record.start_revision if last is None else last + 1
    got = {e.ident for e in record.events}
    missed = [e for e in _covered(record, expected_events(history, [record, *others]))
              if floor <= e.revision <= through_revision and e.ident not in got]
    return [IncompleteWatch(record.watcher, len(missed), through_revision, last, missed[0])] if missed else []


def atomic(record: WatchRecord) -> list[SplitRevision]:
    """The events of one revision (a transaction's) arrive in one response of a stream."""
    if not record.details:
        return []
    found = []
    for seg in record.segments():
        by_rev: dict[int, set[int]] = {}
        first: dict[int, WatchEvent] = {}
        for i, e in enumerate(seg.events, seg.offset):
            response = record.detail(i).response
            if response is not None:
                by_rev.setdefault(e.revision, set()).add(response)
                first.setdefault(e.revision, e)
        found += [SplitRevision(record.watcher, first[rev], tuple(sorted(rs))) for rev, rs in by_rev.items() if len(rs) > 1]
    return found


def progress_notified(record: WatchRecord, history: KeyHistory, others: Iterable[WatchRecord] = ()) -> list[BadProgress]:
    """A progress notification at revision R comes after every event up to R of its stream was
    sent, and no event at or below R follows it in that stream."""
    if not record.progress:
        return []
    expected = _covered(record, expected_events(history, [record, *others]))
    segments = record.segments()
    found = []
    for p in record.progress:
        if p.segment >= len(segments):
            raise MalformedHistory(f"watcher {record.watcher}: a progress notification on stream {p.segment} of "
                                   f"{len(segments)}")
        seg = segments[p.segment]
        before = {e.ident for e in record.events[seg.offset:p.at]}
        earlier = {e.ident for e in record.events[:seg.offset]}
        for e in record.events[p.at:seg.offset + len(seg.events)]:
            if e.revision <= p.revision:
                found.append(BadProgress(record.watcher, p.revision, e, "was followed by an event at or below it"))
                break
        for e in expected:
            if seg.start_revision <= e.revision <= p.revision and e.ident not in before and e.ident not in earlier:
                found.append(BadProgress(record.watcher, p.revision, e, "came before this event was sent"))
                break
    return found


def event_details(record: WatchRecord, history: KeyHistory, others: Iterable[WatchRecord] = (),
                  uncertain: Mapping[str, Collection[str]] | None = None) -> list[WrongEventDetail]:
    """prevKV and isCreate of each event against the key's history: the event before it in the
    history (acknowledged writes and every watcher's events; keys start absent) says what the
    previous value was and whether the key existed. A key no recorded operation wrote (one bound to
    a lease: its put is not checked, its expiry not recorded) is known only from the watchers'
    events: an event with none before it may follow a write from before any watcher started, and
    is not judged. `uncertain`: per key, the values of writes whose outcome the client never
    learnt (timed out, cut off: oplog.uncertain_values); such a write may have been applied
    unseen, so a prevKV that is one of them is no anomaly."""
    if not record.details:
        return []
    per_key: dict[str, list[WatchEvent]] = {}
    for e in sorted(expected_events(history, [record, *others]).values(), key=lambda e: e.ident):
        per_key.setdefault(e.key, []).append(e)
    found = []
    for i, e in enumerate(record.events):
        d = record.detail(i)
        versions = per_key.get(e.key, [])
        before = [v for v in versions if v.revision < e.revision]
        prev = before[-1] if before else None
        if prev is None and e.key not in history:
            continue
        existed = prev is not None and prev.type == "put"
        if e.type == "put" and d.created is not None and (d.created == e.revision) == existed:
            found.append(WrongEventDetail(record.watcher, i, e, "isCreate", d.created == e.revision, not existed))
        if d.prev_known:
            want = prev.value if existed and prev is not None else None
            if d.prev != want and d.prev not in (uncertain or {}).get(e.key, ()):
                found.append(WrongEventDetail(record.watcher, i, e, "prevKV", d.prev, want))
    return found


def check_watchers(records: Sequence[WatchRecord], history: KeyHistory, through_revision: int | None = None,
                   uncertain: Mapping[str, Collection[str]] | None = None) -> list[WatchAnomaly]:
    """Every watch check over every watcher, each judged against the others' events too; with
    `through_revision` (the final revision of the run, a fence write's), every watcher must
    have delivered every event up to it; `uncertain` as event_details takes it."""
    found: list[WatchAnomaly] = []
    for n, record in enumerate(records):
        others = [r for m, r in enumerate(records) if m != n]
        found += ordered(record)
        found += no_duplicates(record)
        found += no_gaps(record, history, others)
        found += resumable(record, history, others)
        found += consistent(record, history, others)
        found += atomic(record)
        found += progress_notified(record, history, others)
        found += event_details(record, history, others, uncertain)
        if through_revision is not None:
            found += complete(record, history, through_revision, others)
    return found


def lost_writes(
    history: KeyHistory,
    final: FinalState,
    *,
    watchers: Iterable[WatchRecord] = (),
    uncertain_deletes: Collection[str] = (),
    deletes: Sequence[Op] = (),
) -> list[LostWrite]:
    """Every acknowledged put is in the final state or was superseded by a later write, and no
    delete found it gone before anything removed it.

    Superseded: the key's final mod revision is higher, or a later write of the key is
    known (acknowledged, or seen by a watcher). A key that is absent at the end needs a
    known delete after the put, or an indeterminate delete (`uncertain_deletes`,
    `oplog.uncertain_deletes(ops)`), which may take effect at any time after it was sent.
    `deletes`: the history's deletes, in time order. An acknowledged one that found the key
    absent, after an acknowledged put with no known delete of the key in between and no
    indeterminate delete sent before it returned (which could have run first), found a
    lost write.
    """
    known: dict[str, list[tuple[int, str | None]]] = {k: list(v) for k, v in history.items()}
    for record in watchers:
        for e in record.events:
            known.setdefault(e.key, []).append((e.revision, e.value if e.type == "put" else None))
    for versions in known.values():
        versions.sort(key=lambda rv: rv[0])
    later = {key: versions[-1][0] for key, versions in known.items() if versions}
    found = []
    for key, versions in sorted(history.items()):
        for rev, value in versions:
            if value is None or later.get(key, 0) > rev:
                continue
            present = final.get(key)
            if present is None:
                if key not in uncertain_deletes:
                    found.append(LostWrite(key, rev, value, "the key is absent at the end and no delete after it is known"))
            elif present[0] < rev:
                found.append(LostWrite(key, rev, value, f"the key holds the older {present[1]!r} from revision {present[0]}"))
            elif present[0] == rev and present[1] != value:
                found.append(LostWrite(key, rev, value, f"the key holds {present[1]!r} at that same revision"))
    # A revision is given once: one acknowledged for two different writes means the store went
    # back after the first was acknowledged (a crash lost it) and handed its revision out again.
    by_revision: dict[int, list[tuple[str, str | None]]] = {}
    for key, versions in history.items():
        for rev, value in versions:
            by_revision.setdefault(rev, []).append((key, value))
    for rev, writes in sorted(by_revision.items()):
        if len(set(writes)) > 1:
            for key, value in sorted(set(writes), key=str):
                others = ", ".join(f"{k}={v!r}" for k, v in sorted(set(writes) - {(key, value)}, key=str))
                found.append(LostWrite(key, rev, value, f"revision {rev} was acknowledged again for {others}"))
    acked = {(key, rev) for key, versions in history.items() for rev, value in versions if value is not None}
    doubtful: dict[str, float] = {}  # key -> when its first indeterminate delete was sent
    for d in deletes:
        if d.kind == "delete" and d.ok is None:
            doubtful[d.key] = min(doubtful.get(d.key, d.invoke), d.invoke)
    for d in deletes:
        if d.kind != "delete" or not d.ok or d.deleted != 0 or d.revision is None:
            continue
        if d.key in doubtful and doubtful[d.key] < (d.ret if d.ret is not None else float("inf")):
            continue
        # A delete that removed nothing answers with the store's revision then, which may be
        # that of the delete that did remove the key: events up to it, inclusive, count.
        before = [(rev, value) for rev, value in known.get(d.key, []) if rev <= d.revision]
        if before and before[-1][1] is not None and (d.key, before[-1][0]) in acked:
            rev, value = before[-1]
            found.append(LostWrite(d.key, rev, value, f"a delete at revision {d.revision} found the key already gone, "
                                                      "with no delete of it known in between"))
    return found


def missing_from_history(acknowledged: KeyHistory, member_history: KeyHistory, oldest: int = 0) -> list[LostWrite]:
    """Every acknowledged put from revision `oldest` on (what compaction left) is in a member's own
    history at its revision with its value: a write overwritten since counts too, which the final
    state alone cannot show."""
    found = []
    for key, versions in sorted(acknowledged.items()):
        held = dict(member_history.get(key, ()))
        for rev, value in versions:
            if value is None or rev < oldest:
                continue
            if rev not in held:
                found.append(LostWrite(key, rev, value, "the member's history of the key has no write at that revision"))
            elif held[rev] != value:
                found.append(LostWrite(key, rev, value, f"the member's history holds {held[rev]!r} there"))
    return found
