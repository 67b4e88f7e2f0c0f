"""The probes' clocks kept clear of the garbage collector's full passes.

A full collection walks every object the process holds with the GIL held, and every probe thread
(the canary too) waits it out: 0.15-0.23 s in a scenario on the AWS API on an idle 2-core machine
(gc.callbacks around each pass), many times that when the machine is busy, where a write probe's
gap is judged against a 3 s bound. While any probe runs, what the process held when the first one
began is frozen (gc.freeze), so a pass walks only what came after; it is thawed when the last one
stops, so nothing stays out of the collector's reach.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

_lock = threading.Lock()
_running = 0


def hold() -> Callable[[], None]:
    """Freeze the heap for a probe that starts now; call what it returns when the probe stops
    (once or more: the first call counts)."""
    global _running
    with _lock:
        _running += 1
        if _running == 1:
            gc.collect()  # before the window: what is garbage now is not frozen with the rest
            gc.freeze()
    released = threading.Event()

    def release() -> None:
        global _running
        with _lock:
            if released.is_set():
                return
            released.set()
            _running -= 1
            if _running == 0:
                gc.unfreeze()

    return release


def frozen() -> bool:
    """Whether a running probe holds the heap frozen now."""
    with _lock:
        return _running > 0
