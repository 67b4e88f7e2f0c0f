"""The one wrapper every fault goes through.

It records start and end on the timeline, checks health before and after, enforces a
timeout, writes the heal ledger before touching anything, and keeps the heal so that
teardown (or `harness heal` after a crash) removes the fault whatever happened.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from harness.errors import FaultError, HarnessError
from harness.faults import get_fault
from harness.faults.base import Fault
from harness.providers.base import Environment
from harness.timeline import Event, Timeline

_ids = itertools.count(1)


@dataclass
class ActiveFault:
    id: str
    kind: str
    target: str
    fault: Fault
    data: dict[str, Any]
    event: Event
    started: float = field(default_factory=time.monotonic)


def _with_timeout(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """Run fn in a worker thread; a hang becomes a FaultError (the caller heals)."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=work, name=what, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise FaultError(f"{what} did not finish within {timeout:.1f}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


class FaultRunner:
    def __init__(self, env: Environment, timeline: Timeline) -> None:
        self.env = env
        self.timeline = timeline
        self.active: list[ActiveFault] = []

    def inject(self, kind: str, target: str) -> ActiveFault:
        fault = get_fault(kind)
        reason = fault.available(self.env)
        if reason:
            raise FaultError(f"fault {kind} is not available here: {reason}")
        target = fault.validate(self.env, target)
        if any(a.kind == kind and a.target == target for a in self.active):
            raise FaultError(f"fault {kind} on {target} is already active")
        self._check_before(kind, target)
        fid = f"{kind}:{target}:{next(_ids)}"
        # Ledger first: if we die inside inject, `harness heal` still knows what to undo.
        self.env.record_fault({"id": fid, "kind": kind, "target": target, "data": {}})
        event = self.timeline.begin("fault", kind, target=target, id=fid)
        timeout = self.env.config.timeouts.fault_apply
        try:
            data = _with_timeout(lambda: fault.inject(self.env, target), timeout, f"inject {kind} on {target}")
        except BaseException as e:
            # Nothing stays half-applied: heal what may have been done, then report.
            try:
                fault.heal(self.env, target, {})
            finally:
                self.env.forget_fault(fid)
                self.timeline.finish(event, error=f"{type(e).__name__}: {e}")
            if isinstance(e, HarnessError):
                raise FaultError(f"injecting {kind} on {target} failed and was rolled back: {e}") from e
            raise
        event.data["injected_at"] = self.timeline.now()
        self.env.update_fault(fid, data or {})
        active = ActiveFault(fid, kind, target, fault, data or {}, event)
        self.active.append(active)
        return active

    def _check_before(self, kind: str, target: str) -> None:
        self.timeline.mark("health", "before", fault=kind, target=target, statuses=self.env.health())
        if not self.active and not self.env.faults():
            try:
                self.env.wait_healthy(self.env.config.timeouts.member_ready)
            except HarnessError as e:
                raise FaultError(f"region is not healthy before injecting {kind} on {target}: {e}") from None

    def heal(self, active: ActiveFault | None = None, wait: bool = True) -> None:
        """Heal one fault (default: all, newest first); then, with no fault left, wait for health."""
        targets = [active] if active else list(reversed(self.active))
        errors = []
        for a in targets:
            try:
                _with_timeout(lambda: a.fault.heal(self.env, a.target, a.data), self.env.config.timeouts.heal, f"heal {a.kind} on {a.target}")
            except BaseException as e:  # keep healing the others
                errors.append(f"{a.id}: {e}")
                continue
            self.timeline.finish(a.event, healed_at=self.timeline.now())
            self.env.forget_fault(a.id)
            self.active.remove(a)
        if errors:
            raise FaultError("could not heal: " + "; ".join(errors) + "; run `harness heal`")
        if wait and not self.active:
            with self.timeline.span("health", "after"):
                try:
                    self.env.wait_healthy(self.env.config.timeouts.recovery)
                except HarnessError as e:
                    raise FaultError(f"region did not recover after healing: {e}") from None


def heal_everything(env: Environment) -> list[str]:
    """After a crash: heal every ledger entry, then sweep for any fault effect left anyway."""
    done: list[str] = []
    for entry in env.faults():
        fault = get_fault(entry["kind"])
        fault.heal(env, entry["target"], entry.get("data") or {})
        env.forget_fault(entry["id"])
        done.append(f"healed {entry['id']}")
    return done + env.sweep()
