"""One monotonic clock per run: load ops, fault windows and probe samples share its base."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator
from contextlib import contextmanager


@dataclass
class Event:
    """Something that happened over [start, end] seconds since the timeline base (end None: ongoing)."""

    kind: str
    name: str
    start: float
    end: float | None = None
    data: dict[str, Any] = field(default_factory=dict)


class Timeline:
    """Events and samples stamped against one time.monotonic() base.

    CLOCK_MONOTONIC is shared by every process on the machine (and network namespaces),
    so samples taken by child processes can be stamped with `at(monotonic)`.
    """

    def __init__(self, base: float | None = None) -> None:
        self.base = time.monotonic() if base is None else base
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.base

    def at(self, monotonic: float) -> float:
        return monotonic - self.base

    def mark(self, kind: str, name: str, **data: Any) -> Event:
        event = Event(kind, name, self.now(), self.now(), data)
        with self._lock:
            self.events.append(event)
        return event

    def begin(self, kind: str, name: str, **data: Any) -> Event:
        event = Event(kind, name, self.now(), None, data)
        with self._lock:
            self.events.append(event)
        return event

    def finish(self, event: Event, **data: Any) -> Event:
        event.end = self.now()
        event.data.update(data)
        return event

    @contextmanager
    def span(self, kind: str, name: str, **data: Any) -> Iterator[Event]:
        event = self.begin(kind, name, **data)
        try:
            yield event
        except BaseException as e:
            event.data["error"] = f"{type(e).__name__}: {e}"
            raise
        finally:
            self.finish(event)

    def find(self, kind: str, name: str | None = None) -> list[Event]:
        with self._lock:
            return [e for e in self.events if e.kind == kind and (name is None or e.name == name)]

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {"base_monotonic": self.base, "events": [asdict(e) for e in self.events]}

    def write(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = self.to_dict() | (extra or {})
        path.write_text(json.dumps(payload, indent=1, default=str))
        return path
