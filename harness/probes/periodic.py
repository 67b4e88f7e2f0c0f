"""A sampler that reads something every `interval` s in a thread of its own until stopped, its
start and stop "probe" events on the scenario's timeline (its samples are the subclass's)."""

from __future__ import annotations

import threading
import time

from harness.timeline import Timeline


class PeriodicSampler:
    """Calls `sample()` every `interval` s from start() to stop(); stop() returns no history (the
    samples are the timeline's events). `samples` counts the calls."""

    target = ""  # what it samples, as its "probe" events name it

    def __init__(self, timeline: Timeline, namespace: str, interval: float) -> None:
        self.timeline, self.namespace, self.interval = timeline, namespace, interval
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"{self.target}-{namespace}", daemon=True)

    def sample(self) -> object:
        raise NotImplementedError

    def start(self) -> PeriodicSampler:
        self._thread.start()
        self.timeline.mark("probe", "start", target=self.target, namespace=self.namespace, interval=self.interval)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.timeline.mark("probe", "stop", target=self.target, namespace=self.namespace, samples=self.samples)

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.sample()
            self.samples += 1
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))
