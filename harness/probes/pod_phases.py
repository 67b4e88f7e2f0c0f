"""Pods of a namespace counted per zone and phase, sampled in the background while a scenario
runs, each sample a "pods" event on the scenario's timeline (the report draws them beside the
fault windows). Observes only: it never judges and never touches the pods."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from harness.kube.placement import PodPlacement
from harness.probes.periodic import PeriodicSampler
from harness.timeline import Timeline

INTERVAL = 1.0  # s: a zone outage's effects on pods take tens of seconds; more would only load the seed
BUCKETS = ("ready", "not_ready", "pending", "other")  # Running and ready / Running not ready / Pending / the rest
NO_ZONE = "-"  # not bound to a node (yet or any more)
EVENT = "pods"


def bucket(pod: PodPlacement) -> str:
    if pod.phase == "Running":
        return "ready" if pod.serving else "not_ready"  # Ready on a NotReady node is stale
    return "pending" if pod.phase == "Pending" else "other"  # Terminating, Failed, Unknown, Succeeded


def counts(pods: Iterable[PodPlacement]) -> dict[str, dict[str, int]]:
    """zone -> bucket -> pods; a pod without a node counts in zone "-"."""
    out: dict[str, dict[str, int]] = {}
    for p in pods:
        zone = (p.zone or NO_ZONE) if p.node else NO_ZONE
        out.setdefault(zone, dict.fromkeys(BUCKETS, 0))[bucket(p)] += 1
    return dict(sorted(out.items()))


class PodPhaseSampler(PeriodicSampler):
    """Calls `list_pods` every `interval` s in a thread; stop() ends it."""

    target = EVENT

    def __init__(self, list_pods: Callable[[], list[PodPlacement]], timeline: Timeline, namespace: str,
                 interval: float = INTERVAL) -> None:
        super().__init__(timeline, namespace, interval)
        self.list_pods = list_pods

    @classmethod
    def of_seed(cls, kube: Any, namespace: str, timeline: Timeline, interval: float = INTERVAL) -> PodPhaseSampler:
        """Sampling the pods of `namespace` through the seed's API (`kube`: its KubeAccess)."""
        from harness.kube import cluster
        from harness.kube import placement

        api = cluster.connect(kube)
        return cls(lambda: placement.observe(api, namespace), timeline, namespace, interval)

    def sample(self) -> None:
        """One sample: the counts, or why the pods could not be listed (the plot shows a gap)."""
        try:
            zones = counts(self.list_pods())
        except Exception as e:  # the client's errors come in many types: a gap, never a dead sampler
            self.timeline.mark(EVENT, self.namespace, error=f"{type(e).__name__}: {e}"[-200:])
        else:
            self.timeline.mark(EVENT, self.namespace, zones=zones)
