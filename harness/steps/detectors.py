"""Steps on the control plane's own detectors: when each saw the fault (time to detect), and the
"healthy but broken" case where they saw nothing while clients failed."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then

from harness import judge
from harness.errors import ConfigError
from harness.probes import detectors as det
from harness.probes.availability import AvailabilityProbe
from harness.providers.base import EtcdCluster
from harness.topology import Seed
from harness.report import figures
from harness.steps.scenario import Outage, Shoot
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.validate import detection
from harness.steps.holders import Probes


@given("etcd's detectors are watched", target_fixture="detectors")
def _(probes: Probes, etcd: EtcdCluster, timeline: Timeline) -> det.DetectorProbe:
    """etcd's own detectors sampled over time (per member: its /health, and from its metrics
    whether it has a leader and how many of its peers' streams are active): when each one said
    failing, for the time-to-detect steps."""
    return probes.add(det.DetectorProbe(det.etcd_sources(etcd), timeline).start())


@given("the shoot control plane's detectors are watched", target_fixture="detectors")
def _(probes: Probes, etcd: EtcdCluster, shoot: Shoot, seed: Seed, env: Any, timeline: Timeline) -> det.DetectorProbe:
    """etcd's detectors and the shoot's: each kube-apiserver's /readyz from its own zone, the load
    balancer's verdict on them where the environment can say it, and the seed's nodes."""
    sources = det.etcd_sources(etcd) + det.shoot_sources(seed, shoot.spec.namespace, env)
    return probes.add(det.DetectorProbe(sources, timeline).start())


@given("the seed's zones are watched for an outage", target_fixture="detectors")
def _(probes: Probes, seed: Seed, timeline: Timeline) -> det.DetectorProbe:
    """GEP-20's "Identify a Zone outage", per zone of the seed: failing while every node of the
    zone is NotReady or Unknown and tainted unreachable."""
    return probes.add(det.DetectorProbe(det.zone_sources(seed), timeline).start())


def _in_zone(found: list[detection.Detection], kind: str, zone: str) -> list[detection.Detection]:
    if kind not in det.KINDS:
        raise ConfigError(f"no detector kind {kind!r}; the kinds: {', '.join(det.KINDS)}")
    chosen = [d for d in found if d.kind == kind and d.zone == zone]
    judge.holds(bool(chosen), f"a {kind} detector watched in zone {zone}",
                sorted({f"{d.kind} in {d.zone}" for d in found}))
    return chosen


def _judge_detected(chosen: list[detection.Detection], since: float, limit: float, what: str,
                    timeline: Timeline) -> None:
    for d in chosen:
        figures.mark(timeline, f"{d.name} detected after {what}", d.after(since), "s")
        judge.holds(d.before == det.OK, f"{d.name} said ok when {what} happened", d.before)
        judge.holds(d.at is not None, f"{d.name} said failing within {limit:g} s of {what}",
                    f"it never did up to {limit:g} s after it")
        blind = d.blind_before(d.at or 0.0)
        judge.holds(blind is None, f"{d.name} read without a gap until it said failing",
                    f"unreadable from {blind[0]:.3f} s to {blind[1]:.3f} s" if blind else None)
        judge.at_most(d.after(since), limit, f"{d.name}'s time to detect after {what}")


@then(parsers.parse('detector "{kind}" sees zone "{zone}" fail within {limit:g} s of the outage\'s effect'))
def _(detectors: det.DetectorProbe, outage: Outage, timeline: Timeline, kind: str, zone: str, limit: float) -> None:
    """Each detector of that kind in the zone said ok before, read without a gap, and said failing
    within the bound after the outage's effect."""
    end = outage.window_end(timeline, limit)
    found = detection.detections(timeline.events, outage.start, min(end, outage.start + limit))
    _judge_detected(_in_zone(found, kind, zone), outage.start, limit, "the outage's effect", timeline)


@then(parsers.parse('detector "{kind}" sees zone "{zone}" fail within {limit:g} s of the first failed {path} write'))
def _(detectors: det.DetectorProbe, outage: Outage, timeline: Timeline, request: Any, kind: str, zone: str,
      path: str, limit: float) -> None:
    """As the outage's detection, counted from the first failed write of the etcd or shoot API probe
    after the effect: what a client saw first."""
    probes = {"etcd": "probe", "shoot API": "shoot_probe"}
    if path not in probes:
        raise ConfigError(f"no write probe of {path!r}; the paths: {', '.join(probes)}")
    probe = request.getfixturevalue(probes[path])
    first = detection.first_failure(probe.history.samples, outage.start)
    judge.holds(first is not None, f"a {path} write failed after the outage took effect",
                "none did: nothing to detect from the clients' side")
    assert first is not None
    end = outage.window_end(timeline, first - outage.start + limit)
    found = detection.detections(timeline.events, outage.start, min(end, first + limit))
    figures.mark(timeline, f"first failed {path} write after the outage's effect", first - outage.start, "s")
    chosen = _in_zone(found, kind, zone)
    for d in chosen:  # a detector that saw it before the clients did is within any bound
        if d.at is not None and d.at < first:
            figures.mark(timeline, f"{d.name} detected before the first failed {path} write", d.at - first, "s")
    _judge_detected([d for d in chosen if d.at is None or d.at >= first], first, limit,
                    f"the first failed {path} write", timeline)


@then(parsers.parse('detector "{kind}" never sees zone "{zone}" fail during the outage'))
def _(detectors: det.DetectorProbe, outage: Outage, timeline: Timeline, kind: str, zone: str) -> None:
    """A fault the detector does not see (a load balancer keeping a sick zone's kube-apiserver):
    ok from the outage's effect to its end, read all along."""
    end = outage.healed_at or timeline.now()
    for d in _in_zone(detection.detections(timeline.events, outage.start, end), kind, zone):
        judge.holds(d.before == det.OK and d.at is None, f"{d.name} saying ok from the outage to {end:.3f} s",
                    f"before: {d.before}, failing at {d.at}")
        judge.holds(not d.unreadable, f"{d.name} read all along", d.unreadable)


@then(parsers.parse("no write is acknowledged for {limit:g} s while every member's /health says healthy"))
def _(detectors: det.DetectorProbe, probe: AvailabilityProbe, outage: Outage, timeline: Timeline,
      limit: float) -> None:
    """Kubernetes #72796's gap: the clients fail, and etcd's own health check sees nothing."""
    end = outage.window_end(timeline, limit)
    gap = av.longest_write_gap(probe.history.samples, outage.start, end)
    figures.mark(timeline, "longest write gap during the outage", gap.length, "s", open=gap.open)
    judge.holds(gap.length >= limit, f"writes failing for {limit:g} s", gap.describe())
    found = [d for d in detection.detections(timeline.events, outage.start, end) if d.kind == "etcd-health"]
    judge.holds(bool(found), "etcd-health detectors watched", "none")
    for d in found:
        judge.holds(d.before == det.OK and d.at is None, f"{d.name} saying healthy from the outage to {end:.3f} s",
                    f"before: {d.before}, failing at {d.at}")
        judge.holds(not d.unreadable, f"{d.name} read all along", d.unreadable)


@then(parsers.parse('GEP-20\'s zone outage of zone "{zone}" is declared within {limit:g} s of the outage\'s effect, '
                    'its state seen for {hold:g} s'))
def _(detectors: det.DetectorProbe, outage: Outage, timeline: Timeline, zone: str, limit: float, hold: float) -> None:
    """GEP-20: "if the above state is observed for an extended period of time (beyond a threshold
    that could be defined), then it can be deduced that there is a zone outage". Declared once the
    zone-outage detector has said failing for `hold` s on end, read all along."""
    end = outage.window_end(timeline, limit)
    found = _in_zone(detection.detections(timeline.events, outage.start, min(end, outage.start + limit)),
                     "zone-outage", zone)
    for d in found:
        declared = detection.held(d, hold)
        figures.mark(timeline, f"zone outage of {zone} declared after the outage's effect", None if declared is None
                     else declared - outage.start, "s", held_s=hold)
        judge.holds(d.before == det.OK, f"{d.name} said ok when the outage took effect", d.before)
        judge.holds(declared is not None, f"the zone outage of {zone} declared within {limit:g} s of the outage's "
                    f"effect (its state seen for {hold:g} s on end)",
                    f"failing at {d.at}, ok again at {d.recovered}, unreadable {list(d.unreadable)}")
        judge.at_most((declared or 0.0) - outage.start, limit, f"the zone outage of {zone} declared")
