"""The history of client operations on an etcd key-value store, as load generators record it.

One `Op` per request a client made, stamped on the run's timeline (seconds, one monotonic
clock for every client). The linearizability check (`linearizability.py`, Porcupine) and
the watch checks (`watch.py`) read it.

Rules a recorder follows:

- Every written value is unique in the history (put and txn values; a counter or the
  client id plus a sequence number will do). Reads then name the write they saw.
- `invoke` is taken before the request is sent, `ret` when its response arrived (or when
  the client gave up on it: for an indeterminate write the checks treat the end as open).
- `ok=True`: a response arrived. `ok=False`: the request definitely had no effect (it was
  never sent, or etcd rejected it before applying it). `ok=None`: indeterminate - a write
  that failed or timed out may or may not have been applied. It is modelled as Porcupine
  and etcd's robustness tests do: its return time is open (it may take effect at any time
  after its invocation, or never) and its response unknown. Reads that fail have no
  effect and are ignored.
- `revision`: the response header's revision. For a put (and a succeeded txn) that is
  the revision the write created; for a get, the store revision it was served at.
- `result`: for a get, the value read (None: the key was absent); for a delete, the value
  it deleted when the recorder asked for prev_kv (None: nothing deleted, or not
  recorded); for a failed txn, the value its else-branch read, if it had one.
- `deleted`: for an acknowledged delete, how many keys it removed (0: the key was already
  absent, which is evidence too); None when not recorded.
- `serializable`: a get served from one member's own state without consulting the leader;
  such a read may be stale by design, so the linearizability check leaves it out unless it
  is asked to hold it to the linearizable standard.
- A txn is a compare-and-put: `if value(key) == expect then put(key, value)`, with
  `expect=None` meaning "the key does not exist" (create revision 0); `succeeded` is the
  response's flag. Other transactions are not modelled.
- Keys start absent: record under a prefix of its own for each run.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessError

Kind = Literal["put", "get", "delete", "txn"]
KINDS: tuple[Kind, ...] = ("put", "get", "delete", "txn")
WRITES = frozenset({"put", "delete", "txn"})
FORMAT = "ha-harness/oplog/v1"

# key -> [(revision, value)] in revision order; value None is a delete that removed the key.
KeyHistory = dict[str, list[tuple[int, str | None]]]


class MalformedHistory(HarnessError):
    """A recorded history breaks the rules of the oplog format (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Op:
    client: int
    kind: Kind
    key: str
    value: str | None  # put, txn: the value written
    invoke: float
    ret: float | None  # None: not recorded; only an op with ok=True needs it
    ok: bool | None  # None: indeterminate
    revision: int | None = None
    result: str | None = None
    expect: str | None = None  # txn: the value compared against; None = "key absent"
    succeeded: bool | None = None  # txn: whether the comparison held
    deleted: int | None = None  # delete: keys it removed (0: it found nothing)
    serializable: bool = False  # get: served from the member's own state

    @property
    def is_write(self) -> bool:
        return self.kind in WRITES

    @property
    def indeterminate(self) -> bool:
        """A write that may or may not have taken effect."""
        return self.ok is None and self.is_write

    @property
    def acknowledged(self) -> bool:
        return self.ok is True

    @property
    def writes_value(self) -> bool:
        """Whether this op may have set `value` (a put, or a txn that did or may have succeeded)."""
        if self.kind == "put":
            return self.ok is not False
        if self.kind == "txn":
            return self.ok is None or (self.ok is True and self.succeeded is True)
        return False

    def __str__(self) -> str:
        what = {
            "put": f"put({self.key!r}, {self.value!r})",
            "get": f"get({self.key!r})",
            "delete": f"delete({self.key!r})",
            "txn": f"txn(if {self.key!r} == {self.expect!r} then put {self.value!r})",
        }[self.kind]
        if self.ok is None:
            outcome = "? (indeterminate)" if self.is_write else "? (failed)"
        elif not self.ok:
            outcome = "failed"
        elif self.kind == "get":
            outcome = "<absent>" if self.result is None else repr(self.result)
        elif self.kind == "txn":
            outcome = "succeeded" if self.succeeded else "failed comparison"
        else:
            outcome = "ok"
        rev = f" @{self.revision}" if self.revision is not None and self.ok else ""
        end = "open" if self.ret is None or self.ok is None else f"{self.ret:.3f}"
        return f"client {self.client} {what} -> {outcome}{rev} [{self.invoke:.3f}, {end}]"


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Op))


def validate(ops: Sequence[Op]) -> None:
    """Raise MalformedHistory naming every broken rule (at most 20 shown)."""
    problems: list[str] = []
    writer: dict[str, int] = {}
    for i, op in enumerate(ops):
        if op.kind not in KINDS:
            problems.append(f"op #{i}: unknown kind {op.kind!r}; one of {', '.join(KINDS)}")
            continue
        if not math.isfinite(op.invoke):
            problems.append(f"op #{i}: invoke time {op.invoke!r} is not a finite number")
        if op.ret is not None and op.ret < op.invoke:
            problems.append(f"op #{i}: returned at {op.ret} before its invocation at {op.invoke}")
        if op.ok is True and op.ret is None:
            problems.append(f"op #{i}: ok without a return time")
        if op.kind in ("put", "txn"):
            if op.value is None:
                problems.append(f"op #{i}: {op.kind} without a value")
            elif op.value in writer:
                problems.append(
                    f"op #{i}: value {op.value!r} was already written by op #{writer[op.value]}; written values must be unique"
                )
            else:
                writer[op.value] = i
        if op.kind == "txn" and op.ok is True and op.succeeded is None:
            problems.append(f"op #{i}: acknowledged txn without `succeeded`")
        if op.kind != "txn" and (op.expect is not None or op.succeeded is not None):
            problems.append(f"op #{i}: `expect`/`succeeded` are for txn only")
        if op.kind != "delete" and op.deleted is not None:
            problems.append(f"op #{i}: `deleted` is for delete only")
        if op.kind != "get" and op.serializable:
            problems.append(f"op #{i}: `serializable` is for get only")
        if op.deleted == 0 and op.result is not None:
            problems.append(f"op #{i}: a delete that removed nothing cannot have deleted {op.result!r}")
    if problems:
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise MalformedHistory("malformed operation history: " + "; ".join(problems[:20]) + more)


# --- JSON ---------------------------------------------------------------------------------


def to_json(ops: Iterable[Op]) -> dict[str, Any]:
    """{"format", "fields", "ops": [[...], ...]}: one row per op, compact for long runs."""
    row = operator.attrgetter(*FIELDS)
    return {"format": FORMAT, "fields": list(FIELDS), "ops": [row(op) for op in ops]}


def from_json(data: Mapping[str, Any]) -> list[Op]:
    fmt = data.get("format", FORMAT)
    if fmt != FORMAT:
        raise MalformedHistory(f"unknown history format {fmt!r}; this harness reads {FORMAT!r}")
    names = data.get("fields")
    rows = data.get("ops")
    if not isinstance(names, list) or not isinstance(rows, list):
        raise MalformedHistory('an operation history needs "fields" (a list of names) and "ops" (a list of rows)')
    unknown = set(names) - set(FIELDS)
    if unknown:
        raise MalformedHistory(f"unknown fields {sorted(unknown)}; known: {', '.join(FIELDS)}")
    ops: list[Op] = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(names):
            raise MalformedHistory(f"op #{i}: expected {len(names)} values ({', '.join(names)}), got {row!r}")
        try:
            ops.append(Op(**dict(zip(names, row))))
        except TypeError as exc:
            raise MalformedHistory(f"op #{i}: {exc}") from None
    return ops


def dumps(ops: Iterable[Op]) -> str:
    return json.dumps(to_json(ops), separators=(",", ":"))


def dump(ops: Iterable[Op], path: Path) -> None:
    path.write_text(dumps(ops))


def load(path: Path) -> list[Op]:
    """Read a history file: an oplog document, or one with the oplog under "oplog"."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise MalformedHistory(f"cannot read operation history {path}: {exc}") from None
    if isinstance(data, dict) and "oplog" in data:
        data = data["oplog"]
    if not isinstance(data, dict):
        raise MalformedHistory(f"{path} holds no operation history")
    return from_json(data)


# --- derived views ------------------------------------------------------------------------


def acknowledged_writes(ops: Iterable[Op]) -> KeyHistory:
    """Each key's revision history from the acknowledged writes that carry a revision.

    A put or succeeded txn is (revision, value); a delete is (revision, None) only when it
    removed the key (it recorded the value it deleted, or a count above 0; a delete of an
    absent key creates no revision).
    """
    out: KeyHistory = {}
    for op in ops:
        if not op.acknowledged or op.revision is None:
            continue
        if op.writes_value:
            out.setdefault(op.key, []).append((op.revision, op.value))
        elif op.kind == "delete" and (op.result is not None or (op.deleted or 0) > 0):
            out.setdefault(op.key, []).append((op.revision, None))
    for versions in out.values():
        versions.sort(key=lambda rv: rv[0])
    return out


def uncertain_deletes(ops: Iterable[Op]) -> set[str]:
    """Keys a delete may have removed without the history showing at which revision: an
    indeterminate delete, or an acknowledged one that recorded neither what nor how much it
    removed. A delete that says it removed nothing is evidence, not doubt."""
    return {
        op.key
        for op in ops
        if op.kind == "delete" and (op.ok is None or (op.ok and op.revision is None)
                                    or (op.ok and op.result is None and op.deleted is None))
    }


def uncertain_values(ops: Iterable[Op]) -> dict[str, set[str]]:
    """Per key, the values of writes whose outcome the client never learnt (indeterminate: timed
    out or cut off): each may be in the store without the history showing at which revision."""
    out: dict[str, set[str]] = {}
    for op in ops:
        if op.is_write and op.ok is None and op.value is not None:
            out.setdefault(op.key, set()).add(op.value)
    return out


def deletes(ops: Iterable[Op]) -> list[Op]:
    """Every delete, in the order they were sent."""
    return sorted((op for op in ops if op.kind == "delete"), key=lambda op: op.invoke)


def linearizable_reads_only(ops: Iterable[Op]) -> list[Op]:
    """The history without its serializable reads (allowed to be stale)."""
    return [op for op in ops if not op.serializable]


def as_linearizable(ops: Iterable[Op]) -> list[Op]:
    """The history with its serializable reads held to the linearizable standard."""
    return [replace(op, serializable=False) if op.serializable else op for op in ops]


def by_key(ops: Iterable[Op]) -> dict[str, list[Op]]:
    out: dict[str, list[Op]] = {}
    for op in ops:
        out.setdefault(op.key, []).append(op)
    return out
