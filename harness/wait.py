"""One generic wait: poll a condition, show progress, fail with the last observed state."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, TextIO, TypeVar

from harness.errors import HarnessError, WaitAbandoned, WaitTimeout

T = TypeVar("T")


def wait_for(
    observe: Callable[[], T],
    done: Callable[[T], bool],
    description: str,
    timeout: float,
    interval: float = 0.05,
    progress_every: float = 5.0,
    out: TextIO | None = None,
    give_up: Callable[[], str | None] | None = None,
    say: Callable[[str], None] | None = None,
) -> T:
    """Call `observe` until `done(observed)` is true; return the observation.

    Exceptions from `observe` count as "not yet" and become the last observed state.
    Every `progress_every` seconds a line says what is awaited and for how long (to `say`, or
    to `out`). `give_up()` returning a reason (the process that should answer has exited) ends
    the wait at once with WaitAbandoned: no point waiting out the timeout.
    """
    out = out if out is not None else sys.stderr
    start = time.monotonic()
    next_report = start + progress_every
    last: object = "nothing observed yet"
    while True:
        reason = give_up() if give_up is not None else None
        if reason is not None:
            raise WaitAbandoned(description, reason, last)
        try:
            value = observe()
            if done(value):
                return value
            last = value
        except Exception as e:  # a failed observation is a state too
            last = f"{type(e).__name__}: {e}"
        now = time.monotonic()
        if now - start >= timeout:
            raise WaitTimeout(description, timeout, last)
        if now >= next_report:
            line = f"waiting for {description}: {now - start:.0f}s of {timeout:.0f}s; last: {last!r}"[:300]
            say(line) if say is not None else print(f"[harness] {line}", file=out)
            next_report = now + progress_every
        time.sleep(min(interval, max(0.0, timeout - (now - start))))


def wait_serving(serving: Callable[[], str | None], gone: Callable[[], str | None], description: str, timeout: float,
                 interval: float = 0.1, say: Callable[[str], None] | None = None, progress_every: float = 10.0) -> None:
    """A process just started, until it serves or dies: `serving()` says what it saw (None: it
    serves), `gone()` why it will never serve (it exited). WaitAbandoned or WaitTimeout otherwise."""
    wait_for(serving, lambda seen: seen is None, description, timeout, interval, progress_every, give_up=gone, say=say)


def first_within(observe: Callable[[], T | None], description: str, timeout: float, interval: float = 0.05) -> T | None:
    """The first non-None observation within `timeout`, or None: for figures that a judge then
    holds against a limit (a missing figure is a verdict, not an error)."""
    try:
        return wait_for(observe, lambda v: v is not None, description, timeout, interval)
    except WaitTimeout:
        return None


@dataclass(frozen=True)
class Reading:
    """One read of a polled condition: when it began and ended (monotonic), what it saw, whether
    that was what was awaited, and the error of a read that raised (it saw nothing)."""

    began: float
    ended: float
    value: object
    held: bool
    error: str | None = None


@dataclass(frozen=True)
class Polled(Generic[T]):
    """The reads of a condition awaited for `limit` s from `start`: up to the first that held, or
    the first begun after the limit (the one that closes the window: a read begun before it
    cannot say the condition was still false at the limit)."""

    start: float
    limit: float
    reads: tuple[Reading, ...]

    @property
    def held(self) -> Reading | None:
        return next((r for r in self.reads if r.held), None)

    def first_held(self) -> tuple[float, float] | None:
        """When the condition first held, as far as the reads place it, in seconds from the start:
        after the last read that said no began (it saw "no" at some moment of that read), and by
        the end of the first that said yes. None when none said yes."""
        for i, r in enumerate(self.reads):
            if r.held:
                return (self.reads[i - 1].began - self.start if i else 0.0), r.ended - self.start
        return None


def poll_within(observe: Callable[[], T], done: Callable[[T], bool], description: str, limit: float,
                interval: float = 0.05, progress_every: float = 5.0, start: float | None = None) -> Polled[T]:
    """Read `observe()` until `done` holds for what it saw or a read begun after `limit` s said
    no, every read recorded (for harness.judge.within: when it first held, how closely the reads
    could place that). Exceptions from `observe` are reads that did not hold. `start`: the
    monotonic time the limit counts from (a fault's effect, a request sent), default now."""
    start = time.monotonic() if start is None else start
    deadline, next_report = start + limit, start + progress_every
    reads: list[Reading] = []
    while True:
        began = time.monotonic()
        value: object = None
        try:
            value = observe()
            held, error = bool(done(value)), None  # type: ignore[arg-type]
        except Exception as e:  # a failed read is a read that did not see it
            held, error = False, f"{type(e).__name__}: {e}"
        now = time.monotonic()
        reads.append(Reading(began, now, value, held, error))
        if held or began >= deadline:
            return Polled(start, limit, tuple(reads))
        if now >= next_report:
            print(f"[harness] waiting for {description}: {now - start:.0f}s of {limit:.0f}s; last: {error or value!r}"[:300],
                  file=sys.stderr)
            next_report = now + progress_every
        time.sleep(min(interval, max(0.0, deadline - now)))


def bounded(fn: Callable[[], T], timeout: float, what: str, error: type[HarnessError] = WaitTimeout,
            overran: Callable[[threading.Thread], None] | None = None) -> T:
    """Run `fn` in a worker thread; if it has not returned within `timeout` seconds, raise `error`
    (the worker is left to die with the process: for calls that may hang on a cut-off network).
    `overran(worker)` is told of a worker still running, for callers that must wait it out."""
    box: dict[str, object] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=work, name=what, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        if overran is not None:
            overran(worker)
        raise error(f"{what} did not finish within {timeout:.1f}s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")  # type: ignore[return-value]
