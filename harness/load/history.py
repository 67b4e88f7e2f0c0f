"""What a load run recorded (harness/load/locustfile.py), as the validators read it: the
key-value operations as a history (harness.validate.oplog) and each watcher's events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.validate.oplog import Op
from harness.validate.watch import EventDetail, Progress, Reconnect, WatchEvent, WatchRecord

# Checked for linearizability: range reads answer a count, lease-bound keys expire unrecorded.
CHECKED = ("put", "get", "delete", "txn")


def _records(directory: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(directory.glob("ops-*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


def _merged(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An operation's invocation line and its return line as one record; an invocation with no
    return (its process stopped while the request was in flight) stays open: for a write,
    indeterminate (it may have been applied); a read without an answer is no evidence."""
    out: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}
    for r in records:
        op = r.get("op")
        if op is None:
            out.append(r)  # a record written whole (older recordings, the fence)
        elif "kind" in r:
            pending[op] = dict(r)
            out.append(pending[op])
        elif op in pending:
            pending[op].update(r)
    for r in pending.values():
        r.setdefault("ok", None)
        r.setdefault("ret", None)
    return out


def operations(directory: Path) -> list[Op]:
    ops = []
    for r in _merged(_records(directory)):
        if r.get("kind") not in CHECKED:
            continue
        ops.append(Op(client=int(r["client"]), kind=r["kind"], key=r["key"], value=r.get("value"),
                      invoke=float(r["invoke"]), ret=r.get("ret"), ok=r.get("ok"),
                      revision=r.get("revision") or None, result=r.get("result"),
                      expect=r.get("expect"), succeeded=r.get("succeeded"), deleted=r.get("deleted"),
                      serializable=bool(r.get("serializable"))))
    return ops


def watchers(directory: Path) -> list[WatchRecord]:
    """Each watcher's events in the order they came, with where it started and resumed, its
    progress notifications and what it recorded of each event (response, create revision,
    previous value)."""
    raw: dict[str, dict[str, Any]] = {}
    for r in _records(directory):
        name = r.get("watch")
        if name is None:
            continue
        w = raw.setdefault(str(name), {"prefix": "", "start": None, "events": [], "reconnects": [], "details": [],
                                       "progress": []})
        if "start" in r:
            w["prefix"], w["start"] = r["prefix"], int(r["start"])
        elif "resume" in r:
            w["reconnects"].append(Reconnect(len(w["events"]), int(r["resume"])))
        elif "progress" in r:
            w["progress"].append(Progress(len(w["events"]), int(r["progress"]), len(w["reconnects"])))
        elif "revision" in r:
            w["events"].append(WatchEvent(int(r["revision"]), r["key"], r["type"], r.get("value")))
            # Older recordings carry no details: then none is judged.
            w["details"].append(EventDetail(r.get("response"), r.get("created"), r.get("prev"), "prev" in r))
    return [WatchRecord(name, w["prefix"], w["start"], tuple(w["events"]), tuple(w["reconnects"]),
                        tuple(w["details"]) if all(d.response is not None for d in w["details"]) else (),
                        tuple(w["progress"]))
            for name, w in raw.items() if w["start"] is not None]


def tag(value: str | None) -> str | None:
    """A written value's unique part (`<client>-<seq>`), without the padding to the value size."""
    return value.rsplit("-", 1)[0] if value else value
