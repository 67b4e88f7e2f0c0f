"""One recorded load run as a file: the operations, what each watcher got, the final state.

    {"oplog": {"format": "ha-harness/oplog/v1", "fields": [...], "ops": [[...], ...]},
     "watchers": [{"watcher", "prefix", "start_revision", "events": [[rev, key, type, value]],
                   "reconnects": [[at, revision]]}, ...],
     "final": {key: [mod_revision, value], ...}}

"watchers" and "final" are optional. `oplog.load` reads the operations of such a file too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.validate import oplog
from harness.validate.oplog import MalformedHistory, Op
from harness.validate.watch import WatchRecord, final_from_json


@dataclass(frozen=True)
class RecordedRun:
    ops: list[Op]
    watchers: list[WatchRecord] = field(default_factory=list)
    final: dict[str, tuple[int, str]] | None = None  # None: not read

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"oplog": oplog.to_json(self.ops), "watchers": [w.to_json() for w in self.watchers]}
        if self.final is not None:
            d["final"] = {k: [rev, v] for k, (rev, v) in sorted(self.final.items())}
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> RecordedRun:
        if "oplog" not in d:
            raise MalformedHistory('a recorded run needs "oplog"')
        return cls(
            ops=oplog.from_json(d["oplog"]),
            watchers=[WatchRecord.from_json(w) for w in d.get("watchers", ())],
            final=final_from_json(d["final"]) if d.get("final") is not None else None,
        )

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), separators=(",", ":")))

    @classmethod
    def load(cls, path: Path) -> RecordedRun:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise MalformedHistory(f"cannot read recorded run {path}: {exc}") from None
        return cls.from_json(data)
