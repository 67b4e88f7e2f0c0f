"""Watch guarantees and lost writes over recorded runs (tests/testdata) and small hand-made ones.

Each check passes on the clean run and fails on the run with the anomaly it looks for,
naming it; on every anomaly file, the other checks stay quiet.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.validate import oplog
from harness.validate import watch as w
from harness.validate.oplog import KeyHistory, MalformedHistory, Op
from harness.validate.recorded import RecordedRun
from harness.validate.watch import Reconnect, WatchEvent, WatchRecord

DATA = Path(__file__).parent.parent / "testdata"
ANOMALY_FILES = [
    "watch_duplicate_event",
    "watch_reordered_event",
    "watch_gap",
    "watch_resume_repeated",
    "watch_resume_skipped",
    "history_lost_write",
]


def recorded(name: str) -> tuple[RecordedRun, KeyHistory]:
    run = RecordedRun.load(DATA / f"{name}.json")
    return run, oplog.acknowledged_writes(run.ops)


def all_anomalies(run: RecordedRun, history: KeyHistory) -> list[object]:
    found: list[object] = list(w.check_watchers(run.watchers, history))
    assert run.final is not None
    found += w.lost_writes(history, run.final, watchers=run.watchers, uncertain_deletes=oplog.uncertain_deletes(run.ops))
    return found


def test_the_clean_run_passes_every_check() -> None:
    run, history = recorded("history_clean")
    assert len(run.watchers) == 2 and run.watchers[0].reconnects  # a resume is exercised
    assert all_anomalies(run, history) == []
    last = max(rev for versions in history.values() for rev, _ in versions)
    for record in run.watchers:
        others = [o for o in run.watchers if o is not record]
        assert w.ordered(record) == []
        assert w.no_duplicates(record) == []
        assert w.no_gaps(record, history, others) == []
        assert w.resumable(record, history, others) == []
        assert w.consistent(record, history, others) == []
        assert w.caught_up(record, history, last, others) == []


# Each anomaly file: the check that must find it, the anomaly type, and its readable name.
CASES: list[tuple[str, Callable[[RecordedRun, KeyHistory], list[object]], type, str]] = [
    ("watch_duplicate_event", lambda r, h: list(w.no_duplicates(r.watchers[0])), w.DuplicateEvent,
     "duplicate event: watcher w-all got put '/sim/0004'='c3-4' @15 twice, at #10 and #11"),
    ("watch_reordered_event", lambda r, h: list(w.ordered(r.watchers[0])), w.ReorderedEvent,
     "reordered event: watcher w-all got delete '/sim/0006' @17 at #13, after put '/sim/0001'='c1-8' @18"),
    ("watch_gap", lambda r, h: list(w.no_gaps(r.watchers[0], h, r.watchers[1:])), w.MissedEvent,
     "gap in watch: watcher w-all never got put '/sim/0001'='c0-8' @27 (it got @26 before, @28 after)"),
    ("watch_resume_repeated", lambda r, h: list(w.resumable(r.watchers[0], h, r.watchers[1:])), w.ResumeRepeated,
     "resume repeated an event: watcher w-all resumed from @33 and got put '/sim/0000'='c0-12' @33 again at #31 (first at #28)"),
    ("watch_resume_skipped", lambda r, h: list(w.resumable(r.watchers[0], h, r.watchers[1:])), w.ResumeSkipped,
     "resume skipped an event: watcher w-all reconnected after @18 and resumed from @21, but never got delete '/sim/0001' @19"),
    ("history_lost_write", lambda r, h: list(w.lost_writes(h, r.final or {}, watchers=r.watchers)), w.LostWrite,
     "lost write: put '/sim/0000'='lost-write' acknowledged at revision 66 is gone: the key holds the older 'c0-17' from revision 63"),
]


@pytest.mark.parametrize(("name", "run_check", "kind", "first"), CASES, ids=[c[0] for c in CASES])
def test_each_check_finds_its_anomaly_and_names_it(
    name: str, run_check: Callable[[RecordedRun, KeyHistory], list[object]], kind: type, first: str
) -> None:
    run, history = recorded(name)
    assert json.loads((DATA / f"{name}.json").read_text())["anomaly"] in first
    found = run_check(run, history)
    assert found and all(isinstance(a, kind) for a in found)
    assert str(found[0]) == first
    clean_run, clean_history = recorded("history_clean")
    assert run_check(clean_run, clean_history) == []


@pytest.mark.parametrize("name", ANOMALY_FILES)
def test_only_the_anomaly_put_in_is_reported(name: str) -> None:
    run, history = recorded(name)
    found = all_anomalies(run, history)
    wanted = json.loads((DATA / f"{name}.json").read_text())["anomaly"]
    assert found, name
    assert {str(a).split(":")[0] for a in found} == {wanted}


def test_resume_anomalies_list_every_event() -> None:
    run, history = recorded("watch_resume_repeated")
    assert [a.event.revision for a in w.resumable(run.watchers[0], history)] == [33, 34, 35]
    run, history = recorded("watch_resume_skipped")
    assert [str(a.event) for a in w.resumable(run.watchers[0], history)] == ["delete '/sim/0001' @19", "delete '/sim/0000' @20"]


# --- hand-made ---------------------------------------------------------------------------------


def ev(rev: int, key: str, value: str | None = None) -> WatchEvent:
    return WatchEvent(rev, key, "put" if value is not None else "delete", value)


HISTORY: KeyHistory = {"/a": [(2, "a1"), (4, "a2"), (6, None)], "/b": [(3, "b1"), (5, "b2")], "/other": [(7, "o")]}
ALL = (ev(2, "/a", "a1"), ev(3, "/b", "b1"), ev(4, "/a", "a2"), ev(5, "/b", "b2"), ev(6, "/a"))


def rec(events: tuple[WatchEvent, ...] = ALL, start: int = 2, reconnects: tuple[Reconnect, ...] = (), prefix: str = "/") -> WatchRecord:
    return WatchRecord("w", prefix, start, events, reconnects)


def test_a_prefix_only_needs_its_own_keys() -> None:
    only_a = rec(tuple(e for e in ALL if e.key == "/a"), prefix="/a")
    assert w.check_watchers([only_a], HISTORY) == []
    assert w.caught_up(only_a, HISTORY, 7) == []
    everything = rec(ALL + (ev(7, "/other", "o"),))
    assert w.check_watchers([everything, only_a], HISTORY) == []


def test_several_events_of_one_revision_are_in_order() -> None:
    # A txn writing two keys: both events carry its revision.
    history: KeyHistory = {"/a": [(2, "a1")], "/b": [(2, "b1")]}
    both = rec((ev(2, "/a", "a1"), ev(2, "/b", "b1")))
    assert w.check_watchers([both], history) == []


def test_a_clean_resume_from_the_next_revision() -> None:
    resumed = rec(ALL, reconnects=(Reconnect(2, 4),))
    assert w.check_watchers([resumed], HISTORY) == []
    # A reconnect that delivered nothing before the next one.
    twice = rec(ALL, reconnects=(Reconnect(2, 4), Reconnect(2, 4)))
    assert w.check_watchers([twice], HISTORY) == []


def test_a_gap_before_the_first_event_counts_from_the_start_revision() -> None:
    late = rec(ALL[1:])
    assert [str(a) for a in w.no_gaps(late, HISTORY)] == ["gap in watch: watcher w never got put '/a'='a1' @2 (@3 after)"]
    assert w.no_gaps(rec(ALL[1:], start=3), HISTORY) == []


def test_the_tail_after_the_last_event_is_judged_by_caught_up() -> None:
    stalled = rec(ALL[:3])
    assert w.no_gaps(stalled, HISTORY) == []  # nothing missing up to the last event seen
    missed = w.caught_up(stalled, HISTORY, 6)
    assert [a.event.revision for a in missed] == [5, 6]
    assert str(missed[0]) == "gap in watch: watcher w never got put '/b'='b2' @5 (it got @4 before)"


def test_an_event_only_other_watchers_saw_is_required() -> None:
    # Revision 8 came from a write whose response was lost: only the other watcher saw it.
    seen = rec(ALL + (ev(7, "/other", "o"), ev(8, "/b", "b3"), ev(9, "/a", "a3")))
    missed = rec(ALL + (ev(7, "/other", "o"), ev(9, "/a", "a3")))
    gaps = w.no_gaps(missed, HISTORY, [seen])
    assert [str(a.event) for a in gaps] == ["put '/b'='b3' @8"]
    assert w.no_gaps(missed, HISTORY) == []  # alone, nothing says revision 8 was a /b write


def test_an_event_that_disagrees_with_the_history_is_inconsistent() -> None:
    wrong = rec(ALL[:1] + (ev(3, "/b", "zzz"),) + ALL[2:] + (ev(7, "/other", "o"),), prefix="/a")
    found = w.consistent(wrong, HISTORY)
    assert [str(a) for a in found] == [
        "inconsistent event: watcher w got put '/b'='zzz' @3 at #1, outside its prefix",
        "inconsistent event: watcher w got put '/b'='b2' @5 at #3, outside its prefix",
        "inconsistent event: watcher w got put '/other'='o' @7 at #5, outside its prefix",
    ]
    found = w.consistent(rec(ALL[:1] + (ev(3, "/b", "zzz"),) + ALL[2:]), HISTORY)
    assert [str(a) for a in found] == ["inconsistent event: watcher w got put '/b'='zzz' @3 at #1; the history has put '/b'='b1' @3"]


def test_reconnect_points_must_index_the_events() -> None:
    with pytest.raises(MalformedHistory, match="reconnect points"):
        rec(ALL, reconnects=(Reconnect(9, 4),))
    record = rec(ALL, reconnects=(Reconnect(2, 4),))
    assert WatchRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


# --- lost writes -------------------------------------------------------------------------------


def test_lost_writes_superseded_or_final() -> None:
    final = {"/b": (5, "b2"), "/other": (7, "o")}
    assert w.lost_writes(HISTORY, final) == []  # /a deleted at 6 after its last put; /b holds its last put
    assert w.lost_writes(HISTORY, {**final, "/a": (8, "a-later")}) == []  # superseded by a write we did not see acked


def test_a_revision_acknowledged_for_two_writes_is_a_lost_write() -> None:
    """A member that lost acknowledged entries in a crash hands their revisions out again: the
    final state alone cannot show it when the key was overwritten since."""
    history: KeyHistory = {"/a": [(7, "a1"), (9, "a2")], "/b": [(7, "b1")]}
    final = {"/a": (9, "a2"), "/b": (7, "b1")}
    lost = w.lost_writes(history, final)
    assert [(x.key, x.revision) for x in lost] == [("/a", 7), ("/b", 7)]
    assert "revision 7 was acknowledged again for /b='b1'" in lost[0].reason
    assert w.lost_writes({"/a": [(7, "a1"), (9, "a2")], "/b": [(8, "b1")]}, {"/a": (9, "a2"), "/b": (8, "b1")}) == []


def test_lost_writes_found() -> None:
    found = w.lost_writes(HISTORY, {"/b": (3, "b1"), "/other": (7, "o")})
    assert [str(a) for a in found] == [
        "lost write: put '/b'='b2' acknowledged at revision 5 is gone: the key holds the older 'b1' from revision 3"
    ]
    found = w.lost_writes({"/c": [(3, "c1")]}, {})
    assert [str(a) for a in found] == [
        "lost write: put '/c'='c1' acknowledged at revision 3 is gone: the key is absent at the end and no delete after it is known"
    ]
    found = w.lost_writes({"/c": [(3, "c1")]}, {"/c": (3, "c-other")})
    assert "holds 'c-other' at that same revision" in str(found[0])


def test_an_absent_key_is_excused_by_a_delete_we_know_of() -> None:
    history: KeyHistory = {"/c": [(3, "c1")]}
    assert w.lost_writes(history, {}, watchers=[rec((ev(3, "/c", "c1"), ev(4, "/c")))]) == []
    assert w.lost_writes(history, {}, uncertain_deletes={"/c"}) == []


def test_acknowledged_writes_from_the_oplog() -> None:
    ops = [
        Op(0, "put", "/a", "a1", 0.0, 0.1, True, 2),
        Op(0, "put", "/a", "a2", 0.2, None, None),  # indeterminate: no revision known
        Op(1, "delete", "/a", None, 0.3, 0.4, True, 3, "a1"),  # deleted "a1" at revision 3
        Op(1, "delete", "/b", None, 0.5, 0.6, True, 3),  # deleted nothing (or not recorded)
        Op(2, "txn", "/b", "b1", 0.7, 0.8, True, 4, None, None, True),
        Op(2, "txn", "/b", "b2", 0.9, 1.0, True, 4, "b1", None, False),
    ]
    assert oplog.acknowledged_writes(ops) == {"/a": [(2, "a1"), (3, None)], "/b": [(4, "b1")]}
    assert oplog.uncertain_deletes(ops) == {"/b"}


# --- completeness, atomicity, progress notifications, prevKV and isCreate ------------------------


def test_a_watcher_that_went_silent_is_incomplete_up_to_the_final_revision() -> None:
    """The defect this replaces: each stream was judged only up to the last event it delivered,
    so a watcher that stopped early passed every check."""
    silent = rec(ALL[:2])
    assert w.check_watchers([silent], HISTORY) == []  # judged only to its last event: nothing to see
    (found,) = w.check_watchers([silent], HISTORY, through_revision=6)
    assert str(found) == ("incomplete watch: watcher w missed 3 event(s) up to the final revision @6 (its last event "
                          "was @3; first missed: put '/a'='a2' @4)")
    assert w.check_watchers([rec()], HISTORY, through_revision=6) == []
    (nothing,) = w.complete(rec(()), HISTORY, 6)
    assert nothing.missed == 5 and "it delivered nothing" in str(nothing)


def detailed(events: tuple[WatchEvent, ...], details: tuple[w.EventDetail, ...], progress: tuple[w.Progress, ...] = (),
             reconnects: tuple[Reconnect, ...] = ()) -> WatchRecord:
    return WatchRecord("w", "/", 2, events, reconnects, details, progress)


CLEAN_DETAILS = (w.EventDetail(1, 2, None, True), w.EventDetail(2, 3, None, True), w.EventDetail(3, 2, "a1", True),
                 w.EventDetail(4, 3, "b1", True), w.EventDetail(5, None, "a2", True))


def test_prev_kv_and_is_create_agree_with_the_history() -> None:
    assert w.check_watchers([detailed(ALL, CLEAN_DETAILS)], HISTORY, through_revision=6) == []
    wrong_prev = CLEAN_DETAILS[:2] + (w.EventDetail(3, 2, "zz", True),) + CLEAN_DETAILS[3:]
    (found,) = w.event_details(detailed(ALL, wrong_prev), HISTORY)
    assert str(found) == ("wrong prevKV: watcher w got put '/a'='a2' @4 at #2 with prevKV 'zz'; the history says 'a1'")
    not_a_create = (w.EventDetail(1, 9, None, True),) + CLEAN_DETAILS[1:]  # created at 9: an update, yet /a was absent
    (found,) = w.event_details(detailed(ALL, not_a_create), HISTORY)
    assert found.what == "isCreate" and found.expected is True


def test_a_prev_kv_a_write_of_unknown_outcome_explains_is_no_anomaly() -> None:
    """A put that timed out may have been applied unseen: the next event's prevKV may be its value,
    and only that value is excused."""
    from harness.validate.oplog import Op, uncertain_values

    timed_out = Op(7, "put", "/a", "zz", 0.1, None, None)
    wrong_prev = CLEAN_DETAILS[:2] + (w.EventDetail(3, 2, "zz", True),) + CLEAN_DETAILS[3:]
    assert w.check_watchers([detailed(ALL, wrong_prev)], HISTORY, through_revision=6,
                            uncertain=uncertain_values([timed_out])) == []
    other = Op(7, "put", "/a", "yy", 0.1, None, None)
    (found,) = w.event_details(detailed(ALL, wrong_prev), HISTORY, uncertain=uncertain_values([other]))
    assert found.what == "prevKV" and found.got == "zz"
    acked = Op(7, "put", "/a", "zz", 0.1, 0.2, True, revision=9)
    assert uncertain_values([acked]) == {}


def test_a_key_no_recorded_write_made_is_judged_only_after_what_the_watchers_saw() -> None:
    """A lease-bound key put before any watcher started (its put unrecorded) and expired while
    they watched: the delete's prevKV is the put's value, which nothing recorded. Not an anomaly;
    a second put and delete the watchers saw are judged."""
    events = (ev(5, "/lease-1", None), ev(6, "/lease-1", "v2"), ev(7, "/lease-1", None))
    details = (w.EventDetail(1, None, "v1", True), w.EventDetail(2, 6, None, True), w.EventDetail(3, None, "v2", True))
    record = WatchRecord("w", "/", 5, events, (), details)
    assert w.event_details(record, {}) == []
    wrong = details[:2] + (w.EventDetail(3, None, "v1", True),)
    (found,) = w.event_details(WatchRecord("w", "/", 5, events, (), wrong), {})
    assert found.what == "prevKV" and found.expected == "v2"
    # A key the history wrote stays judged from its first event: absent before it.
    (found,) = w.event_details(record, {"/lease-1": [(6, "v2")]})
    assert found.what == "prevKV" and found.got == "v1" and found.expected is None


def test_the_events_of_one_revision_come_in_one_response() -> None:
    history: KeyHistory = {"/a": [(2, "a1")], "/b": [(2, "b1")]}
    both = (ev(2, "/a", "a1"), ev(2, "/b", "b1"))
    together = (w.EventDetail(1, 2, None, True), w.EventDetail(1, 2, None, True))
    assert w.atomic(detailed(both, together)) == []
    split = (w.EventDetail(1, 2, None, True), w.EventDetail(2, 2, None, True))
    (found,) = w.atomic(detailed(both, split))
    assert str(found) == "non-atomic watch: watcher w got the events of revision @2 in responses [1, 2]"
    assert w.check_watchers([detailed(both, together)], history) == []


def test_a_progress_notification_must_not_run_ahead_of_the_events() -> None:
    good = detailed(ALL, CLEAN_DETAILS, (w.Progress(3, 4),))  # after @2, @3, @4: everything to 4 was sent
    assert w.progress_notified(good, HISTORY) == []
    early = detailed(ALL, CLEAN_DETAILS, (w.Progress(2, 4),))  # claims @4 while @4 had not been sent
    found = w.progress_notified(early, HISTORY)
    assert [f.why for f in found] == ["was followed by an event at or below it", "came before this event was sent"]
    assert "progress notification @4 to watcher w" in str(found[0])


def test_details_survive_json() -> None:
    record = detailed(ALL, CLEAN_DETAILS, (w.Progress(3, 4),))
    assert WatchRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_a_delete_that_found_an_acknowledged_key_gone_is_a_lost_write() -> None:
    """The defect this replaces: a delete that found nothing made its key "uncertain" forever,
    which excused every lost write of that key."""
    history: KeyHistory = {"/c": [(3, "c1")]}
    put_c = Op(0, "put", "/c", "c1", 0.0, 0.1, True, 3)
    empty = Op(1, "delete", "/c", None, 0.5, 0.6, True, 5, None, deleted=0)
    ops = [put_c, empty]
    assert oplog.uncertain_deletes(ops) == set()  # found nothing: evidence, not doubt
    found = w.lost_writes(history, {}, uncertain_deletes=oplog.uncertain_deletes(ops), deletes=oplog.deletes(ops))
    assert [f.reason for f in found] == ["the key is absent at the end and no delete after it is known",
                                         "a delete at revision 5 found the key already gone, with no delete of it known "
                                         "in between"]
    # An indeterminate delete sent before it returned could have removed the key first.
    doubt = Op(2, "delete", "/c", None, 0.4, None, None)
    assert w.lost_writes(history, {}, uncertain_deletes={"/c"}, deletes=oplog.deletes(ops + [doubt])) == []
    # One sent only after it returned could not.
    late = Op(2, "delete", "/c", None, 0.7, None, None)
    (found,) = w.lost_writes(history, {}, uncertain_deletes={"/c"}, deletes=oplog.deletes(ops + [late]))
    assert "found the key already gone" in found.reason
    # A delete known in between (a watcher saw it) explains the empty one; so does one at the
    # very revision the empty delete answered with (it came right after it, finding nothing).
    assert w.lost_writes(history, {}, watchers=[rec((ev(3, "/c", "c1"), ev(4, "/c")))], deletes=oplog.deletes(ops)) == []
    assert w.lost_writes(history, {}, watchers=[rec((ev(3, "/c", "c1"), ev(5, "/c")))], deletes=oplog.deletes(ops)) == []
