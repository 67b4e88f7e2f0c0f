"""The node set of a Service's cloud load balancer over time, as the cloud API says it (KEP-3458),
sampled in the background; each change is an "lb-nodes" event on the scenario's timeline. Observes
only: a read that failed is a sample of its own (an error), never skipped, and the judge decides."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from harness.timeline import Timeline

INTERVAL = 0.5  # s: the controller syncs a node change within a few seconds
EVENT = "lb-nodes"
# The classic ELB API calls that change a load balancer (its node set, listeners, health check,
# subnets, itself), as the cloud's request log names them; the rest only read.
ELB_UPDATES = frozenset({"CreateLoadBalancer", "DeleteLoadBalancer", "RegisterInstancesWithLoadBalancer",
                         "DeregisterInstancesFromLoadBalancer", "CreateLoadBalancerListeners",
                         "DeleteLoadBalancerListeners", "ConfigureHealthCheck", "ApplySecurityGroupsToLoadBalancer",
                         "AttachLoadBalancerToSubnets", "DetachLoadBalancerFromSubnets"})


@dataclass(frozen=True)
class NodeSetSample:
    t: float  # timeline time of the read's start
    wall: float  # unix time of the same moment (the cloud's request log is in those)
    nodes: tuple[str, ...] | None  # None: the Service has no load balancer
    error: str | None = None  # the read failed: what it said
    ended: float = 0.0  # timeline time the read returned: what it saw held at some moment in [t, ended]

    def seen(self) -> str:
        """What the read saw, as a verdict quotes it."""
        return self.error or (str(list(self.nodes)) if self.nodes is not None else "no load balancer")


class NodeSetProbe:
    """Calls `read` (the nodes of the Service's load balancer, or None) every `interval` s."""

    def __init__(self, read: Callable[[], list[str] | None], timeline: Timeline, service: str,
                 interval: float = INTERVAL) -> None:
        self.read, self.timeline, self.service, self.interval = read, timeline, service, interval
        self.samples: list[NodeSetSample] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"lb-nodes-{service}", daemon=True)

    def start(self) -> NodeSetProbe:
        self.timeline.mark("probe", "start", target=EVENT, service=self.service, interval=self.interval)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """Stops sampling; the record of every read, for the run's file (samples_of reads it back)."""
        self._stop.set()
        self._thread.join(timeout=10)
        return {"probe": EVENT, "service": self.service, "samples": [asdict(s) for s in self.snapshot()]}

    def snapshot(self) -> list[NodeSetSample]:
        with self._lock:
            return list(self.samples)

    def through(self, t: float, timeout: float) -> list[NodeSetSample]:
        """The samples once one that began at or after timeline time `t` is in (the stretch up to
        `t` is then covered), or as they are after `timeout` s: the judge decides what is missing."""
        deadline = time.monotonic() + timeout
        while True:
            samples = self.snapshot()
            if (samples and samples[-1].t >= t) or time.monotonic() >= deadline or not self._thread.is_alive():
                return samples
            time.sleep(self.interval / 5)

    def _loop(self) -> None:
        last: tuple[str, ...] | None | str = "unread"
        while not self._stop.is_set():
            began, wall = self.timeline.now(), time.time()
            try:
                found = self.read()
                sample = NodeSetSample(began, wall, tuple(found) if found is not None else None,
                                       ended=self.timeline.now())
            except Exception as e:  # a read that failed is an observation too
                sample = NodeSetSample(began, wall, None, f"{type(e).__name__}: {e}", self.timeline.now())
            with self._lock:
                self.samples.append(sample)
            seen = sample.error or sample.nodes
            if seen != last:
                self.timeline.mark(EVENT, self.service, nodes=list(sample.nodes or ()), error=sample.error)
                last = seen
            self._stop.wait(max(0.0, self.interval - (self.timeline.now() - began)))


def samples_of(record: dict[str, Any]) -> list[NodeSetSample]:
    """The reads of a record NodeSetProbe.stop() wrote."""
    return [NodeSetSample(**{**s, "nodes": tuple(s["nodes"]) if s["nodes"] is not None else None})
            for s in record["samples"]]
