"""chaostoolkit probes: observe and return values; never judge (tolerances.py does, via harness.judge)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from harness.chaostoolkit.context import bounded, environment, positive, settings
from harness.errors import ConfigError
from harness.probes.samples import Sample
from harness.providers.base import Environment
from harness.reference.render import DEFAULT_NAMESPACE
from harness.timeline import Timeline
from harness.validate import availability as av

if TYPE_CHECKING:
    from harness.etcd_gateway import Status

__all__ = ["quorum", "quorum_from", "write_availability", "cross_zone_traffic", "placement", "shoot_api_availability"]

MAX_PROBE_SECONDS = 120.0
ZONE_FAULTS = ("zone-outage", "aws-zone-outage")


class EtcdEnvironment(Environment, Protocol):
    """An environment whose etcd members' status can be asked from a client zone (EtcdMembers)."""

    def status(self, via_zone: str | None = None) -> dict[str, Status | str]: ...
    def leader(self) -> str | None: ...


def _etcd(env: Environment) -> Any:
    if not hasattr(env, "status") or not getattr(env, "members", None):
        raise ConfigError(f"this probe needs the environment's etcd members; the {env.provider} provider has none reachable")
    return env


def _surviving_zone(env: Environment, via_zone: str | None) -> str:
    """`via_zone`; by default the first zone no zone fault of the ledger has cut off; "follower":
    such a zone without the etcd leader (a client that keeps writing while the leader's zone goes)."""
    if via_zone and via_zone != "follower":
        return env.zone(via_zone)
    cut = {e["target"] for e in env.faults() if e["kind"] in ZONE_FAULTS}
    if via_zone == "follower":
        leader = getattr(env, "leader", lambda: None)()
        cut |= {env.member(leader).zone} if leader else set()
    zone = next((z for z in env.zones if z not in cut), None)
    if zone is None:
        raise ConfigError(f"every zone is cut off ({', '.join(sorted(cut))}); name via_zone")
    return zone


def quorum(via_zone: str | None = None, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Members that answer a client in `via_zone` (default: a zone no zone fault cut off;
    "follower": such a zone without the etcd leader), and the leader(s) they name:
    {"via_zone", "members", "healthy", "unreachable", "leaders"}."""
    env = _etcd(environment(configuration))
    rounds = 2 if via_zone == "follower" else 1  # "follower" asks every member once more for the leader
    limit = env.config.timeouts.status_request * (rounds * len(env.members) + 1) + 5
    return bounded(lambda: quorum_from(env, via_zone), limit, "etcd member status")


def quorum_from(env: EtcdEnvironment, via_zone: str | None = None) -> dict[str, Any]:
    """probes.quorum's figures for `env`. Asked from each member's own zone instead of the client's,
    every member of a cut-off zone would still answer and a majority would hold through any outage."""
    zone = _surviving_zone(env, via_zone)
    statuses = env.status(zone)
    by_id = {s.member_id: name for name, s in statuses.items() if not isinstance(s, str)}
    healthy = sorted(by_id.values())
    leaders = sorted({by_id.get(s.leader, str(s.leader)) for s in statuses.values() if not isinstance(s, str) and s.leader})
    return {"via_zone": zone, "members": len(env.members), "healthy": healthy,
            "unreachable": {n: s for n, s in statuses.items() if isinstance(s, str)}, "leaders": leaders}


def _gap_figures(samples: list[Sample], start: float, end: float, via_zone: str) -> dict[str, Any]:
    gap = av.longest_write_gap(samples, start, end)
    acked, failed = av.writes_failed_between(samples, start, end)
    return {
        "seconds": round(end - start, 3),
        "via_zone": via_zone,
        "acked": acked,
        "failed": failed,
        # The longest gap still open when the window ended: writes had not resumed by then.
        "resumed": not gap.open,
        "longest_gap_s": round(gap.length, 3),
    }


def _gaps_over(probe: Any, timeline: Timeline, duration: float, zone: str) -> dict[str, Any]:
    """Run a write probe for `duration` seconds; its gap figures."""
    start = timeline.now()
    probe.start()
    try:
        time.sleep(duration)
    finally:
        history = probe.stop()
    return _gap_figures(history.samples, start, timeline.now(), zone)


def write_availability(seconds: float = 3.0, via_zone: str | None = None,
                       configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Probe writes (a new key every 10 ms, failing over between members) for `seconds` from a client
    in `via_zone` (default: a zone no zone fault cut off); the longest stretch without an acknowledged
    write, the writes acknowledged and failed."""
    from harness.probes.availability import AvailabilityProbe

    env = _etcd(environment(configuration))
    duration = positive(seconds, "seconds", MAX_PROBE_SECONDS)
    zone = _surviving_zone(env, via_zone)

    def run() -> dict[str, Any]:
        timeline = Timeline()
        return _gaps_over(AvailabilityProbe(env, timeline, zone), timeline, duration, zone)

    return bounded(run, duration + env.config.timeouts.status_request * len(env.members) + 10, "write availability probe")


def cross_zone_traffic(seconds: float = 3.0, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Cross-zone KiB/s over `seconds` (router counters, and etcd's peer metrics): {"total_kib_s", "pairs"},
    and the "gaps" and "resets" (failed scrapes, counters that went down) that left a figure None."""
    from harness.probes.traffic import TrafficProbe
    from harness.validate.traffic import rates

    env = _etcd(environment(configuration))
    duration = positive(seconds, "seconds", MAX_PROBE_SECONDS)

    def run() -> dict[str, Any]:
        figures = rates(*TrafficProbe(env).window(duration))
        return {"seconds": figures["seconds"], "total_kib_s": figures["total_kib_s"]["wire"],
                "total_metrics_kib_s": figures["total_kib_s"]["metrics"],
                "pairs": {p: v["wire_kib_s"] for p, v in figures["pairs"].items()},
                # None above where a counter could not be read at both ends; here which and why.
                "gaps": figures["gaps"], "resets": figures["resets"]}

    return bounded(run, duration + 20, "cross-zone traffic probe")


def placement(namespace: str = DEFAULT_NAMESPACE, component: str = "etcd-main", domain: str = "zone",
              configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where the seed placed a component's pods: {"per_domain": {zone: running pods}, "running",
    "pending", "pods"} (harness.kube.placement against the seed)."""
    from harness.kube.cluster import connect
    from harness.kube import placement as pl

    _, provider = settings(configuration)
    env = environment(configuration)

    def run() -> dict[str, Any]:
        seed = provider.seed(env)
        pods = [p for p in pl.of(pl.observe(connect(seed.kube), namespace), component) if not p.deleting]
        running = [p for p in pods if p.phase == "Running"]
        return {"component": component, "domain": domain, "per_domain": dict(pl.per_domain(running, domain)),
                "running": len(running), "pending": len(pl.pending(pods)),
                "pods": [{"name": p.name, "phase": p.phase, "node": p.node, "zone": p.zone, "reason": p.reason}
                         for p in pods]}

    return bounded(run, env.config.timeouts.kube_request * 2 + 5, f"placement of {component} in {namespace}")


def shoot_api_availability(seconds: float = 3.0, via_zone: str | None = None, namespace: str = DEFAULT_NAMESPACE,
                           configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """ConfigMaps created through the shoot API's load balancer every 100 ms for `seconds` from a
    client zone; the longest stretch without an acknowledged write (like write_availability)."""
    from harness.probes.shoot_api import ShootApiProbe

    _, provider = settings(configuration)
    env = environment(configuration)
    duration = positive(seconds, "seconds", MAX_PROBE_SECONDS)
    zone = _surviving_zone(env, via_zone)

    def run() -> dict[str, Any]:
        timeline = Timeline()
        probe = ShootApiProbe(provider.seed(env), namespace, timeline, env, zone)
        try:
            return _gaps_over(probe, timeline, duration, zone)
        finally:
            probe.close()

    return bounded(run, duration + env.config.timeouts.kube_request + 10, "shoot API availability probe")
