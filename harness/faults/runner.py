"""The one wrapper every fault goes through.

It records start and end on the timeline, checks health before and after, enforces a
timeout, writes the heal ledger before touching anything (and lets the fault add to it
before each change it makes), arms a watchdog that heals the fault at its maximum duration
even when this process is gone, and keeps the heal so that teardown (or `harness heal`
after a crash) removes the fault whatever happened.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

from harness.errors import ConfigError, FaultError, FaultUnavailable, HarnessError
from harness.faults import get_fault, watchdog
from harness.faults.base import Fault, Injection, Observable, Planned, WaitsOnPurpose, reads_back_late
from harness.providers.base import Cloud, Environment
from harness.timeline import Event, Timeline
from harness.wait import bounded

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

    @property
    def effective_at(self) -> float:
        """When the fault was first seen in effect, on the timeline: the latest it took effect."""
        return float(self.event.data.get("effective_at", self.event.data.get("injected_at", self.event.start)))

    @property
    def effective_after(self) -> float:
        """The earliest it may have taken effect (effect_began)."""
        return effect_began(self.event)


def effect_began(event: Event) -> float:
    """The earliest a fault (its timeline event) may have taken effect: when the last look that did
    not see it began, else when it recorded its first change, else when it was asked for. A bound
    counted from the effect is judged from here, so an effect seen late (the AWS API path: 0.8-1.2
    s) does not flatter it."""
    return float(event.data.get("effective_after", event.data.get("changing_from", event.start)))


EFFECT_POLL = 0.005  # seconds between looks at a fault's effect


def _with_timeout(fn: Callable[[], Any], timeout: float, what: str,
                  overran: Callable[[threading.Thread], None] | None = None) -> Any:
    """A hang becomes a FaultError (the caller heals); `overran` is told of a worker still running."""
    return bounded(fn, timeout, what, FaultError, overran)


class FaultRunner:
    def __init__(self, env: Environment, timeline: Timeline) -> None:
        self.env = env
        self.timeline = timeline
        self.active: list[ActiveFault] = []

    def _chosen(self, kind: str, target: str, options: dict[str, Any] | None) -> tuple[Fault, str]:
        fault = get_fault(kind, **(options or {}))
        reason = fault.available(self.env)
        if reason:
            raise FaultUnavailable(f"fault {kind} is not available here: {reason}")
        return fault, fault.validate(self.env, target)

    def plan(self, kind: str, target: str, options: dict[str, Any] | None = None) -> str:
        """What inject would do (a dry run): validated like inject, and nothing is changed."""
        fault, target = self._chosen(kind, target, options)
        text = fault.plan(self.env, target) if isinstance(fault, Planned) else None  # None: nothing more to say
        if text is None:
            return f"Apply {kind} on {target} in the {self.env.provider} environment.\nDry run: nothing was changed."
        return str(text)

    def inject(self, kind: str, target: str, options: dict[str, Any] | None = None,
               max_duration: float | None = None, wait_healthy: bool = True) -> ActiveFault:
        """Apply a fault; it heals itself after `max_duration` seconds (default: timeouts.fault_max_duration).
        `wait_healthy=False`: a schedule of faults that waits on its own terms between them (a
        member killed again as soon as the last one answers) does not wait for the whole region."""
        fault, target = self._chosen(kind, target, options)
        if any(a.kind == kind and a.target == target for a in self.active):
            raise FaultError(f"fault {kind} on {target} is already active")
        max_duration = self.env.config.timeouts.fault_max_duration if max_duration is None else max_duration
        if max_duration <= 0:
            raise ConfigError(f"a fault's maximum duration must be positive, got {max_duration}")
        self._check_before(kind, target, wait_healthy)
        n = next(_ids)
        fid = f"{kind}:{target}:{n}"
        # Unique across processes and usable in AWS names and tags.
        base: dict[str, Any] = {"run_id": f"hh-{int(time.time() * 1000)}-{os.getpid()}-{n}"}
        # Ledger first: if we die inside inject, `harness heal` still knows what to undo.
        self.env.record_fault({"id": fid, "kind": kind, "target": target, "options": options or {}, "data": base})
        if self.env.durable:  # a ledger in memory is healed by its owner, not by a watchdog
            base["watchdog"] = watchdog.arm(self.env.config, fid, time.time() + max_duration)
            self.env.update_fault(fid, base)
        # The event's start is when the fault was asked for; `effective_at` when it was seen in place.
        event = self.timeline.begin("fault", kind, target=target, id=fid, max_duration=max_duration)

        def record(data: dict[str, Any]) -> None:
            # A fault records its heal data before each change it makes: before the first, its
            # effect cannot have begun (the bracket's lower end, when no look narrows it more).
            event.data.setdefault("changing_from", self.timeline.now())
            self.env.update_fault(fid, {**data, **base})

        ctx = Injection(base["run_id"], record)
        timeouts = self.env.config.timeouts
        # A fault that waits on purpose (a drain retrying evictions) gets that wait on top.
        timeout = timeouts.fault_apply + (float(fault.waits_up_to(timeouts)) if isinstance(fault, WaitsOnPurpose) else 0.0)
        still_running: list[threading.Thread] = []
        try:
            data = _with_timeout(lambda: fault.inject(self.env, target, ctx), timeout, f"inject {kind} on {target}",
                                 still_running.append)
            event.data["injected_at"] = self.timeline.now()
            data = {**(data or {}), **base}
            self.env.update_fault(fid, data)
            self._observe_effect(fault, kind, target, data, event)
        except BaseException as e:
            self._roll_back(fault, fid, target, base, event, e, still_running[0] if still_running else None)
            if isinstance(e, HarnessError):
                raise FaultError(f"injecting {kind} on {target} failed and was rolled back: {e}") from e
            raise
        active = ActiveFault(fid, kind, target, fault, data, event)
        self.active.append(active)
        return active

    def inject_together(self, what: list[tuple[str, str, dict[str, Any] | None]]) -> list[ActiveFault]:
        """Faults that strike at one moment (two pods' volumes lost at once): one after the other
        they would leave the survivors time to elect a leader between them, which a loss "at once"
        never does. Each is validated first, so bad input changes nothing; the region is checked
        healthy once; then they are injected side by side. One that fails was rolled back by its
        own injection; the others are healed and the first error is raised."""
        if not what:
            return []
        for kind, target, options in what:
            self._chosen(kind, target, options)
        self._check_before(" + ".join(kind for kind, _, _ in what), ", ".join(target for _, target, _ in what))
        done: list[ActiveFault | BaseException] = [RuntimeError("not run")] * len(what)

        def one(i: int) -> None:
            kind, target, options = what[i]
            try:
                done[i] = self.inject(kind, target, options, wait_healthy=False)
            except BaseException as e:  # raised below, in the caller's thread
                done[i] = e

        workers = [threading.Thread(target=one, args=(i,), name=f"inject {kind} on {target}", daemon=True)
                   for i, (kind, target, _) in enumerate(what)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        errors = [d for d in done if isinstance(d, BaseException)]
        if errors:
            for d in done:
                if isinstance(d, ActiveFault):
                    self.heal(d, wait=False)
            raise errors[0]
        return [d for d in done if isinstance(d, ActiveFault)]

    def _observe_effect(self, fault: Fault, kind: str, target: str, data: dict[str, Any], event: Event) -> None:
        """When the fault took effect, as observed (the router dropping the zone's packets, the
        process gone), not when it was asked for, as a bracket: `effective_after`, when the last
        look that did not see it began (never, for a fault whose look reads back late; see
        ActiveFault.effective_after), and `effective_at`, when the first look that did see it ended. A fault
        whose effect cannot be observed is taken as in place once applied, and says so."""
        if not isinstance(fault, Observable):
            event.data.update(effective_at=event.data["injected_at"],
                              effect={"observed": False, "why": "not observable; taken as in place once applied"})
            return
        bound = self.env.config.timeouts.fault_effect
        began = time.monotonic()
        last: Any = None
        while True:
            looked, failed = self.timeline.now(), False
            try:
                evidence = fault.effect(self.env, target, data)
            except HarnessError as e:  # an observation that failed is no evidence, either way
                evidence, last, failed = None, f"{type(e).__name__}: {e}", True
            if evidence:
                event.data.update(effective_at=self.timeline.now(), effect={"observed": True, **evidence})
                return
            if not failed and not reads_back_late(fault):
                event.data["effective_after"] = looked  # it looked, and the fault was not in effect yet
            if time.monotonic() - began > bound:
                raise FaultError(f"{kind} on {target} was applied, but its effect was not observed within "
                                 f"{bound:g} s (last: {last or 'no evidence yet'})")
            time.sleep(EFFECT_POLL)

    def _roll_back(self, fault: Fault, fid: str, target: str, base: dict[str, Any], event: Event, error: BaseException,
                   worker: threading.Thread | None) -> None:
        """Nothing stays half-applied: heal what may have been done. An injection that overran its
        bound may still be changing things: its ledger entry and watchdog stay until it ended and
        was healed once more (in the background), so a crash meanwhile is still healed."""
        try:
            fault.heal(self.env, target, self._ledger_data(fid, base))
            if worker is None:
                event.data["healed_at"] = self.timeline.now()
        finally:
            self.timeline.finish(event, error=f"{type(error).__name__}: {error}")
            if worker is None:
                self.env.forget_fault(fid)
                watchdog.disarm(base.get("watchdog"))
            else:
                event.data["overran"] = True
                threading.Thread(target=self._heal_after, args=(fault, fid, target, base, event, worker),
                                 name=f"heal {fid} after its injection", daemon=True).start()

    def _heal_after(self, fault: Fault, fid: str, target: str, base: dict[str, Any], event: Event,
                    worker: threading.Thread) -> None:
        worker.join()
        try:
            fault.heal(self.env, target, self._ledger_data(fid, base))
        except Exception as e:  # the ledger and the watchdog keep it; `harness heal` can finish it
            event.data["late_heal_error"] = f"{type(e).__name__}: {e}"
            return
        event.data["late_healed_at"] = self.timeline.now()
        self.env.forget_fault(fid)
        watchdog.disarm(base.get("watchdog"))

    def _ledger_data(self, fid: str, base: dict[str, Any]) -> dict[str, Any]:
        """What the fault recorded before it failed (heal works from partial data)."""
        entry = next((e for e in self.env.faults() if e["id"] == fid), None)
        return {**((entry or {}).get("data") or {}), **base}

    def _check_before(self, kind: str, target: str, wait_healthy: bool = True) -> None:
        self.timeline.mark("health", "before", fault=kind, target=target, statuses=self.env.health())
        if wait_healthy and not self.active and not self.env.faults():
            try:
                self.env.wait_healthy(self.env.config.timeouts.member_ready)
            except HarnessError as e:
                raise FaultError(f"region is not healthy before injecting {kind} on {target}: {e}") from None

    def heal(self, active: ActiveFault | None = None, wait: bool = True) -> None:
        """Heal one fault (default: all, newest first); then, with no fault left, wait for health."""
        targets = [active] if active else list(reversed(self.active))
        errors = []
        held = max((time.monotonic() - a.started for a in targets), default=0.0)
        for a in targets:
            try:
                _with_timeout(lambda: a.fault.heal(self.env, a.target, a.data), self.env.config.timeouts.heal, f"heal {a.kind} on {a.target}")
            except BaseException as e:  # keep healing the others
                errors.append(f"{a.id}: {e}")
                continue
            self.timeline.finish(a.event, healed_at=self.timeline.now())
            self.env.forget_fault(a.id)
            watchdog.disarm(a.data.get("watchdog"))
            self.active.remove(a)
        if errors:
            raise FaultError("could not heal: " + "; ".join(errors) + "; run `harness heal`")
        lasting = [a.id for a in targets if a.data.get("irreversible")]
        if wait and lasting:  # data destroyed comes back from the backups or a new region, not a heal
            self.timeline.mark("health", "after: not awaited", irreversible=lasting)
        elif wait and not self.active:
            with self.timeline.span("health", "after"):
                try:
                    # Connections that met silence for T s back off: TCP's next retransmission,
                    # the first packet peers hear again, comes up to about T after the heal
                    # (benchmarks/rejoin_after_outage.py: 24 s after a 30 s cut).
                    self.env.wait_healthy(self.env.config.timeouts.recovery + held)
                except HarnessError as e:
                    raise FaultError(f"region did not recover after healing: {e}") from None


def heal_everything(env: Environment, dry_run: bool = False) -> list[str]:
    """After a crash: heal every ledger entry, then sweep for any fault effect left anyway: the
    environment's own sweep, then (an environment with an AWS account) every AWS fault effect the
    harness tagged. `dry_run` lists what would be done and changes nothing."""
    if dry_run:
        entries = env.faults()
        runs = {str((e.get("data") or {}).get("run_id")) for e in entries}
        return ([f"would heal {e['id']} (from the ledger)" for e in entries]
                + [f"would run the {env.provider} environment's own sweep (not listed here)"]
                + _aws_sweep(env, dry_run=True, skip_runs=runs))
    done: list[str] = []
    for entry in env.faults():
        data = entry.get("data") or {}
        fault = get_fault(entry["kind"], **(entry.get("options") or {}))
        fault.heal(env, entry["target"], data)
        env.forget_fault(entry["id"])
        watchdog.disarm(data.get("watchdog"))
        done.append(f"healed {entry['id']}")
    return done + env.sweep() + _aws_sweep(env)


def _aws_sweep(env: Environment, dry_run: bool = False, skip_runs: Collection[str] = ()) -> list[str]:
    """The AWS fault effects the harness tagged, undone (or listed); nothing without an account."""
    access = env.aws() if isinstance(env, Cloud) else None
    if access is None:
        return []
    from harness.aws.sweep import sweep

    return sweep(access, dry_run=dry_run, skip_runs=skip_runs)
