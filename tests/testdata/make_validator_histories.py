"""Write the recorded runs the linearizability and watch validators are tested on.

    .venv/bin/python tests/testdata/make_validator_histories.py   # rewrites tests/testdata/history_*.json, watch_*.json

history_clean.json is a simulated run of a linearizable store (harness/validate/simulate.py:
4 clients, 8 keys, 5 s, 2% of writes timed out and indeterminate, two watchers, one of them
reconnecting twice). Every other file is that run with one anomaly put in, described in its
"anomaly" field:

- history_stale_read.json    a read, after a newer put was acknowledged, returns the old value
- history_lost_write.json    an acknowledged put is never visible: later reads and the final
                             state show the value before it
- watch_duplicate_event.json a watcher gets one event twice
- watch_reordered_event.json a watcher gets two events in the wrong order
- watch_gap.json             a watcher misses one event mid-stream
- watch_resume_repeated.json a watcher resumes from too early and gets three events again
- watch_resume_skipped.json  a watcher resumes from too late and misses two events
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.validate.oplog import Op, acknowledged_writes
from harness.validate.recorded import RecordedRun
from harness.validate.simulate import WatcherSpec, simulate
from harness.validate.watch import Reconnect, WatchEvent, WatchRecord

HERE = Path(__file__).resolve().parent


def clean() -> RecordedRun:
    return simulate(
        duration_s=5.0, rate=40.0, clients=4, keys=8, hot_keys=2, hot_share=0.3, indeterminate=0.02, seed=7,
        watchers=(WatcherSpec("w-all", "/sim/", 0.5, (2.0, 3.5)), WatcherSpec("w-0003", "/sim/0003", 0.0)),
    )


def write(name: str, run: RecordedRun, anomaly: str | None) -> None:
    doc: dict[str, Any] = {"anomaly": anomaly, **run.to_json()}
    (HERE / name).write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")


def _end(run: RecordedRun) -> tuple[float, int]:
    t = max(o.ret or o.invoke for o in run.ops)
    rev = max(o.revision or 0 for o in run.ops)
    rev = max([rev] + [e.revision for w in run.watchers for e in w.events])
    return round(t + 0.1, 6), rev


def _key_with_value(run: RecordedRun) -> tuple[str, str, int]:
    """A key present at the end whose value an acknowledged put wrote, and no write of it was
    indeterminate (one could have landed at any time, and excuse what follows)."""
    uncertain = {o.key for o in run.ops if o.indeterminate}
    acked = {o.value for o in run.ops if o.kind == "put" and o.ok}
    key = next(k for k, (_, v) in sorted((run.final or {}).items()) if k not in uncertain and v in acked)
    rev, value = (run.final or {})[key]
    return key, value, rev


def stale_read(run: RecordedRun) -> RecordedRun:
    t, rev = _end(run)
    key, old, _ = _key_with_value(run)
    new = "stale-read-new"
    ops = [
        Op(0, "put", key, new, t, t + 0.004, True, rev + 1),
        Op(1, "get", key, None, t + 0.010, t + 0.012, True, rev + 1, new),
        Op(2, "get", key, None, t + 0.020, t + 0.023, True, rev + 1, old),  # stale: the put returned before
        Op(3, "get", key, None, t + 0.030, t + 0.032, True, rev + 1, new),
    ]
    final = dict(run.final or {})
    final[key] = (rev + 1, new)
    watchers = [
        replace(w, events=w.events + (WatchEvent(rev + 1, key, "put", new),)) if w.covers(key) else w
        for w in run.watchers
    ]
    return RecordedRun(run.ops + ops, watchers, final)


def lost_write(run: RecordedRun) -> RecordedRun:
    t, rev = _end(run)
    key, old, _ = _key_with_value(run)
    ops = [
        Op(0, "put", key, "lost-write", t, t + 0.004, True, rev + 1),  # acknowledged, then gone
        Op(1, "get", key, None, t + 0.010, t + 0.012, True, rev + 1, old),
        Op(2, "get", key, None, t + 0.020, t + 0.023, True, rev + 1, old),
    ]
    return RecordedRun(run.ops + ops, run.watchers, run.final)


def _with_watcher(run: RecordedRun, watcher: WatchRecord) -> RecordedRun:
    return RecordedRun(run.ops, [watcher if w.watcher == watcher.watcher else w for w in run.watchers], run.final)


def _acked(run: RecordedRun) -> set[tuple[int, str]]:
    return {(rev, key) for key, versions in acknowledged_writes(run.ops).items() for rev, _ in versions}


def duplicate_event(run: RecordedRun) -> RecordedRun:
    w = run.watchers[0]
    i = len(w.events) // 6
    assert i + 1 < w.reconnects[0].at
    return _with_watcher(run, _insert(w, i + 1, (w.events[i],)))


def reordered_event(run: RecordedRun) -> RecordedRun:
    w = run.watchers[0]
    i = len(w.events) // 5
    assert i + 1 < w.reconnects[0].at
    events = list(w.events)
    events[i], events[i + 1] = events[i + 1], events[i]
    assert events[i].revision > events[i + 1].revision
    return _with_watcher(run, replace(w, events=tuple(events)))


def gap(run: RecordedRun) -> RecordedRun:
    w = run.watchers[0]
    seg = w.segments()[1]
    acked = _acked(run)
    i = next(seg.offset + j for j in range(len(seg.events) // 2, len(seg.events)) if seg.events[j].ident in acked)
    return _with_watcher(run, _remove(w, i, 1))


def resume_repeated(run: RecordedRun) -> RecordedRun:
    w = run.watchers[0]
    at = w.reconnects[1].at
    again = w.events[at - 3:at]
    w = _insert(w, at, again, shift_reconnect_at=False)
    reconnects = list(w.reconnects)
    reconnects[1] = Reconnect(at, again[0].revision)
    return _with_watcher(run, replace(w, reconnects=tuple(reconnects)))


def resume_skipped(run: RecordedRun) -> RecordedRun:
    w = run.watchers[0]
    at = w.reconnects[0].at
    acked = _acked(run)
    assert w.events[at].ident in acked and w.events[at + 1].ident in acked
    w = _remove(w, at, 2)
    reconnects = list(w.reconnects)
    reconnects[0] = Reconnect(at, w.events[at].revision)
    return _with_watcher(run, replace(w, reconnects=tuple(reconnects)))


def _insert(w: WatchRecord, i: int, events: tuple[Any, ...], shift_reconnect_at: bool = True) -> WatchRecord:
    n = len(events)
    # Reconnects after position i move with the events; one exactly at i keeps its place
    # unless the inserted events belong to the new stream (shift_reconnect_at=False).
    rc = tuple(
        Reconnect(r.at + n, r.revision) if r.at > i or (r.at == i and shift_reconnect_at) else r for r in w.reconnects
    )
    return replace(w, events=w.events[:i] + events + w.events[i:], reconnects=rc)


def _remove(w: WatchRecord, i: int, n: int) -> WatchRecord:
    rc = tuple(Reconnect(r.at - n, r.revision) if r.at > i else r for r in w.reconnects)
    return replace(w, events=w.events[:i] + w.events[i + n:], reconnects=rc)


def main() -> None:
    run = clean()
    write("history_clean.json", run, None)
    write("history_stale_read.json", stale_read(run), "stale read")
    write("history_lost_write.json", lost_write(run), "lost write")
    write("watch_duplicate_event.json", duplicate_event(run), "duplicate event")
    write("watch_reordered_event.json", reordered_event(run), "reordered event")
    write("watch_gap.json", gap(run), "gap in watch")
    write("watch_resume_repeated.json", resume_repeated(run), "resume repeated an event")
    write("watch_resume_skipped.json", resume_skipped(run), "resume skipped an event")


if __name__ == "__main__":
    main()
