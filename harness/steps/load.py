"""Steps for load (locust, from a client zone) and cross-zone traffic (GEP-20's appendix)."""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any, Callable

from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.errors import CapabilityMissing, ConfigError, HarnessError
from harness.etcd_gateway import EtcdRequestError
from harness.load.runner import LoadSpec
from harness.probes.traffic import TrafficProbe
from harness.providers.base import EtcdCluster, zone_pair
from harness.timeline import Timeline
from harness.validate import traffic as tv
from harness.wait import wait_for
from harness.steps.holders import Loads

TARGETS = ("the leader", "a follower")
CLIENTS = ("its zone", "another zone", "the other follower's zone")


def target_member(etcd: EtcdCluster, target: str) -> Any:
    """The member a step names (TARGETS), as the cluster stands now."""
    if target not in TARGETS:
        raise ConfigError(f"unknown load target {target!r}; accepted: {', '.join(TARGETS)}")
    leader = etcd.leader(etcd.wait_healthy())
    if target == "the leader":
        return etcd.member(leader)  # type: ignore[arg-type]
    return next(m for m in etcd.members if m.name != leader)


def client_zone(etcd: EtcdCluster, member: Any, where: str) -> str:
    """The zone of a client `where` (CLIENTS) as seen from `member`."""
    if where not in CLIENTS:
        raise ConfigError(f"unknown client placement {where!r}; accepted: {', '.join(CLIENTS)}")
    leader_zone = etcd.member(etcd.leader(etcd.wait_healthy())).zone  # type: ignore[arg-type]
    if where == "the other follower's zone" and member.zone == leader_zone:
        raise ConfigError("a client in the other follower's zone needs a follower as the target")
    return {"its zone": member.zone,
            "another zone": next(z for z in etcd.zones if z != member.zone),
            "the other follower's zone": next((z for z in etcd.zones if z not in (member.zone, leader_zone)), "")}[where]


PUT_LOAD = (r"a load of (?P<rate>[\d.]+) PUT/s with (?P<size>[\d.]+) KiB values against (?P<target>.+?) from a client in "
            r"(?P<where>.+?)(?:, watched (?P<watchers>\d+) times? through (?P<watched>the leader|a follower) from a client in "
            r"(?P<watch_where>.+))?")


@given(parsers.re(PUT_LOAD), target_fixture="load")
@when(parsers.re(PUT_LOAD + " starts"), target_fixture="load")
def _(loads: Loads, etcd: EtcdCluster, rate: str, size: str, target: str, where: str, watchers: str | None,
      watched: str | None, watch_where: str | None) -> Any:
    """GEP-20's `benchmark put` rows; with watchers, as many watch streams of the load's keys through
    one member (GEP-20: a follower serves its watchers without the leader)."""
    member = target_member(etcd, target)
    zone = client_zone(etcd, member, where)
    spec = LoadSpec("put", float(rate), (etcd.client_url(member.name, zone),), int(float(size) * 1024), key_prefix=_prefix(),
                    tls=etcd.tls)
    if watchers is None or watched is None or watch_where is None:
        return loads.start(spec, etcd.client_netns(zone))
    serving = target_member(etcd, watched)
    watch_zone = client_zone(etcd, serving, watch_where)
    spec = dataclasses.replace(spec, watch_hosts=(etcd.client_url(serving.name, watch_zone),) * int(watchers),
                               watch_netns=etcd.client_netns(watch_zone))
    return loads.start(spec, etcd.client_netns(zone), fence_writer(etcd, zone))


@when("the load stops")
def _(loads: Loads, load: Any) -> None:
    """The scenario's load stopped; the steps after judge its history."""
    load.stop(loads.fence_writer)


def measure(env: Any, etcd: EtcdCluster, timeline: Timeline, seconds: float, label: str = "measure",
            during: Callable[[], object] | None = None) -> dict[str, Any]:
    """Cross-zone traffic over `seconds` (with `during()` run inside the window), on the timeline
    as a "traffic" span named `label`, each pair's figure marked."""
    kube = env.kube()
    if kube is not None:  # an earlier scenario's control plane, still stopping, would be counted too
        from harness.kube import cluster

        wait_for(lambda: cluster.terminating_namespaces(cluster.connect(kube)), lambda left: not left,
                 "the namespaces being deleted on the seed to be gone", env.config.timeouts.deploy)
    probe = TrafficProbe(env, etcd)
    time.sleep(1.0)  # past the load's start-up
    with timeline.span("traffic", label, seconds=seconds) as event:
        figures = tv.rates(*probe.window(seconds, during))
        event.data.update(figures)
    # The wire's figures where the environment counts them; else the peer metrics', named so.
    source, suffix = ("metrics", " (peer metrics)") if "wire" in figures.get("not_available", {}) else ("wire", "")
    named = "" if label == "measure" else f" {label}"
    for pair, kib in figures["pairs"].items():
        timeline.mark("figure", f"cross-zone {pair}{named}{suffix}", value=kib[f"{source}_kib_s"], unit="KiB/s")
    timeline.mark("figure", f"cross-zone total{named}{suffix}", value=figures["total_kib_s"][source], unit="KiB/s")
    return figures


@when(parsers.re(r'cross-zone traffic is measured for (?P<seconds>[\d.]+) s(?: as "(?P<label>[^"]+)")?'), target_fixture="traffic")
def _(env: Any, etcd: EtcdCluster, timeline: Timeline, seconds: str, label: str | None) -> dict[str, Any]:
    """The bytes between each pair of zones over that long, from the router's counters (the wire)
    and from the members' peer metrics, as the traffic steps' figures; with a label, kept apart
    for a comparison."""
    return measure(env, etcd, timeline, float(seconds), label or "measure")


def _counted(traffic: dict[str, Any], source: str) -> None:
    """Judge only what was counted: a failed scrape or a reset counter leaves its pairs without a
    figure, and a judgement on the rest would pass on partial data."""
    __tracebackhide__ = True
    if source in traffic.get("not_available", {}):
        raise CapabilityMissing(f"this check judges the bytes on the {source}: {traffic['not_available'][source]}")
    what = {"wire": "router counters not counted over the measurement",
            "metrics": "peer metrics not counted over the measurement (a member whose scrape failed or that "
                       "restarted leaves its zone's pairs without an estimate)"}[source]
    judge.none_of(tv.uncounted(traffic, source), what)


@then(parsers.parse("cross-zone traffic stays below {limit:g} KiB/s"))
def _(traffic: dict[str, Any], limit: float) -> None:
    """The wire's total between zones over the measurement, below the bound (every pair counted)."""
    _counted(traffic, "wire")
    judge.holds(traffic["total_kib_s"]["wire"] < limit, f"cross-zone traffic below {limit:g} KiB/s",
                seen=traffic["total_kib_s"])


@then(parsers.parse("cross-zone traffic is about {expected:g} KiB/s, within {tolerance:g} %"))
def _(traffic: dict[str, Any], expected: float, tolerance: float) -> None:
    """The wire's total between zones within the tolerance of the figure."""
    _counted(traffic, "wire")
    wire = traffic["total_kib_s"]["wire"]
    judge.holds(abs(wire - expected) <= expected * tolerance / 100,
                f"cross-zone traffic {wire:g} KiB/s within {tolerance:g} % of {expected:g} KiB/s", seen=traffic["pairs"])


@then(parsers.parse('traffic between zone "{a}" and zone "{b}" stays below {limit:g} KiB/s'))
def _(traffic: dict[str, Any], etcd: EtcdCluster, a: str, b: str, limit: float) -> None:
    """Both directions between the two zones on the wire, below the bound."""
    _counted(traffic, "wire")
    both = tv.between(traffic, etcd.zone(a), etcd.zone(b))
    judge.holds(both["wire_kib_s"] < limit, f"traffic between {a} and {b} below {limit:g} KiB/s", seen=both)


@then(parsers.parse("traffic between the followers' zones stays below {limit:g} KiB/s"))
def _(traffic: dict[str, Any], etcd: EtcdCluster, limit: float) -> None:
    """Both directions between the two followers' zones on the wire, below the bound (GEP-20:
    followers hardly talk to each other)."""
    _counted(traffic, "wire")
    leader = etcd.leader(etcd.status())
    zones = [m.zone for m in etcd.members if m.name != leader]
    both = tv.between(traffic, zones[0], zones[1])
    judge.holds(both["wire_kib_s"] < limit, f"traffic between the followers' zones {zones} below {limit:g} KiB/s",
                seen=both)


@then(parsers.parse("traffic from each follower's zone to the other's stays below {limit:g} KiB/s"))
def _(traffic: dict[str, Any], etcd: EtcdCluster, limit: float) -> None:
    """GEP-20's "follower to follower max egress", one direction at a time."""
    _counted(traffic, "wire")
    leader = etcd.leader(etcd.status())
    a, b = [m.zone for m in etcd.members if m.name != leader]
    seen = {pair: traffic["pairs"][pair]["wire_kib_s"] for pair in (zone_pair(a, b), zone_pair(b, a))}
    judge.holds(max(seen.values()) < limit, f"traffic from each follower's zone to the other's below {limit:g} KiB/s",
                seen=seen)


@then(parsers.parse('cross-zone traffic "{more}" exceeds "{less}" by {low:g} to {high:g} %'))
def _(timeline: Timeline, more: str, less: str, low: float, high: float) -> None:
    """Two measurements of one scenario (`... is measured for N s as "NAME"`), compared."""
    totals = {}
    for label in (more, less):
        spans = timeline.find("traffic", label)
        if not spans:
            measured = sorted({e.name for e in timeline.find("traffic")})
            raise ConfigError(f"no cross-zone traffic measured as {label!r}; measured: {', '.join(measured) or 'none'}")
        _counted(spans[-1].data, "wire")
        totals[label] = spans[-1].data["total_kib_s"]["wire"]
    excess = 100 * (totals[more] - totals[less]) / totals[less] if totals[less] else float("inf")
    timeline.mark("figure", f'cross-zone traffic "{more}" over "{less}"', value=round(excess, 1), unit="%")
    judge.holds(low <= excess <= high, f'cross-zone traffic "{more}" exceeds "{less}" by {excess:.0f} % '
                f"(between {low:g} and {high:g} %)", seen=totals)


@then(parsers.parse("the peer metrics account for {low:g} to {high:g} % of the wire bytes"))
def _(traffic: dict[str, Any], low: float, high: float) -> None:
    """etcd's own peer byte counters, as a share of what the router counted on the wire."""
    _counted(traffic, "wire")
    _counted(traffic, "metrics")
    total = traffic["total_kib_s"]
    share = 100 * total["metrics"] / total["wire"] if total["wire"] else 0.0
    judge.holds(low <= share <= high, f"peer metrics {share:.0f} % of the wire bytes (between {low:g} and {high:g} %)",
                seen=total)


def _prefix() -> str:
    """Keys under a prefix of the load's own: they start absent (the checks rely on it)."""
    return f"/load/{uuid.uuid4().hex[:8]}/"


def fence_writer(etcd: EtcdCluster, zone: str) -> Callable[[str, str], int]:
    """The fence write of a load's watchers: a put from `zone` through the first member that takes it."""
    def put(key: str, value: str) -> int:
        errors = []
        for m in etcd.members:
            client = etcd.client(m.name, zone, timeout=2.0)
            try:
                return client.put(key, value)
            except EtcdRequestError as e:
                errors.append(f"{m.name}: {e}")
            finally:
                client.close()
        raise HarnessError(f"no member took the fence write {key}: {'; '.join(errors)}")
    return put


@given(parsers.parse("a mixed load of {rate:g} ops/s with a watcher from a client in another zone"), target_fixture="load")
def _(loads: Loads, etcd: EtcdCluster, target_zone: str, rate: float) -> Any:
    """Every member takes requests; the client and its watcher's member sit outside the target zone."""
    zone = next(z for z in etcd.zones if z != target_zone)
    watched = next(m for m in etcd.members if m.zone == zone)
    spec = LoadSpec("mixed", rate, tuple(etcd.client_url(m.name, zone) for m in etcd.members), users=20,
                    watch_hosts=(etcd.client_url(watched.name, zone),), key_prefix=_prefix(), tls=etcd.tls)
    return loads.start(spec, etcd.client_netns(zone), fence_writer(etcd, zone))


@given(parsers.re(r"a (?P<profile>mixed|put|write) load of (?P<rate>[\d.]+) ops/s on (?P<keys>\d+) shared keys from a client "
                  r"in every zone with a member, each through that member and watching it"), target_fixture="load")
def _(loads: Loads, etcd: EtcdCluster, profile: str, rate: str, keys: str) -> Any:
    """One client per zone that has a member, each reading and writing the same keys through that
    member (the one a zone outage cuts off included: its serializable reads are then served stale,
    its writes hang) and watching it: what lets the history show a stale read or a lost write.
    mixed: Kubernetes-like; put: 80 % overwrites, 20 % reads; write: overwrites only (what a
    failpoint holds is then always a write, never a read in flight)."""
    prefix, rate, keys = _prefix(), float(rate), int(keys)
    members = [next(m for m in etcd.members if m.zone == z) for z in etcd.zones if etcd.members_in(z)]
    fence = fence_writer(etcd, members[0].zone)
    return [loads.start(LoadSpec(profile, rate / len(members), (etcd.client_url(m.name, m.zone),), users=8,
                                 shared_keys=keys, watch_hosts=(etcd.client_url(m.name, m.zone),), key_prefix=prefix,
                                 tls=etcd.tls),
                        etcd.client_netns(m.zone), fence)
            for m in members]


@when("the load's watchers stop")
def _(loads: Loads) -> None:
    """Its watch processes die while its writers go on, as a client whose watch went away."""
    for run in loads.runs:
        run.stop_watchers()


def stop_loads(loads: Loads, timeline: Timeline) -> None:
    """Every load of the scenario stopped (its writers, then its watchers behind the fence), its
    figures on the timeline once."""
    _load_figures(timeline, loads.stop_all())


def _load_figures(timeline: Timeline, stats: list[dict[str, Any]]) -> None:
    for i, run in enumerate(stats):
        if timeline.find("figure", f"load ops/s{f' ({i})' if i else ''}"):
            continue  # an earlier Then-step of the scenario marked it
        timeline.mark("figure", f"load ops/s{f' ({i})' if i else ''}", value=run.get("ops_per_s"), unit="ops/s")


def _linearizable(loads: Loads, timeline: Timeline, include_serializable: bool) -> None:
    __tracebackhide__ = True
    from harness.load.history import operations
    from harness.validate.linearizability import check

    stop_loads(loads, timeline)
    ops = [op for run in loads.runs for op in operations(run.history_dir)]
    reads = sum(op.kind == "get" and op.ok is True and (include_serializable or not op.serializable) for op in ops)
    judge.holds(reads > 0, "the load recorded acknowledged reads to check", seen=len(ops))
    verdict = check(ops, loads.directory / "porcupine.html", include_serializable=include_serializable)
    what = "every read, serializable ones included," if include_serializable else "the history"
    timeline.mark("figure", "operations checked for linearizability", value=verdict.operations, unit="ops")
    if not verdict.ok:
        timeline.mark("anomaly", "not linearizable", verdict=str(verdict)[:2000])
    judge.holds(verdict.ok, f"{what} of {len(ops)} operations is linearizable\n{verdict}")


@then("the history is linearizable")
def _(loads: Loads, timeline: Timeline) -> None:
    """Porcupine over every client's operations; serializable reads (stale by design) left out."""
    _linearizable(loads, timeline, include_serializable=False)


@then("every read, serializable ones included, is linearizable")
def _(loads: Loads, timeline: Timeline) -> None:
    """A stronger statement than etcd makes: a member cut off from the others serves serializable
    reads from its own, stale state. True only while no member was cut off."""
    _linearizable(loads, timeline, include_serializable=True)


@then("every watcher saw every event in order")
def _(loads: Loads, timeline: Timeline) -> None:
    """Ordered, unique, atomic, reliable, resumable, progress notifications, prevKV and isCreate,
    and complete: every watcher delivered every event up to the fence written after the load."""
    from harness.load.history import operations, watchers
    from harness.validate.oplog import acknowledged_writes, uncertain_values
    from harness.validate.watch import check_watchers

    stop_loads(loads, timeline)
    runs = [run.history_dir for run in loads.runs]
    records = [w for d in runs for w in watchers(d)]
    expected = sum(len(run.spec.watch_hosts) for run in loads.runs)
    judge.holds(expected > 0 and len(records) == expected, "every watcher of the load recorded its start",
                seen={"watchers": len(records), "expected": expected})
    fence = loads.fence or {}
    judge.holds("revision" in fence, "the fence write every watcher is judged against was made", seen=fence)
    ops = [op for d in runs for op in operations(d)]
    anomalies = check_watchers(records, acknowledged_writes(ops), through_revision=fence["revision"],
                               uncertain=uncertain_values(ops))
    timeline.mark("figure", "watch events delivered", value=sum(len(r.events) for r in records), unit="events")
    for anomaly in anomalies[:50]:
        timeline.mark("anomaly", "watch", detail=str(anomaly)[:400])
    judge.none_of([str(a) for a in anomalies],
                  "watch anomalies (out of order, duplicated, missed, incomplete, resumed wrong)")


@then("no acknowledged write of the load is lost")
def _(loads: Loads, etcd: EtcdCluster, timeline: Timeline) -> None:
    """Once the loads stopped and the members converged: every acknowledged put of the load's
    history is in the final state or was superseded by a later write of its key, and no delete
    found it gone before anything removed it."""
    from harness.load.history import operations, tag, watchers
    from harness.probes.converge import converged
    from harness.validate.oplog import acknowledged_writes, deletes, uncertain_deletes
    from harness.validate.watch import lost_writes, missing_from_history

    stop_loads(loads, timeline)
    converged(etcd, etcd.config.timeouts.recovery)
    runs = [run.history_dir for run in loads.runs]
    ops = [op for d in runs for op in operations(d)]
    judge.holds(any(op.acknowledged and op.is_write for op in ops), "the load had acknowledged writes to check",
                seen=len(ops))
    prefixes = sorted({run.spec.key_prefix for run in loads.runs})
    acked = acknowledged_writes(ops)
    first = min((rev for versions in acked.values() for rev, _ in versions), default=1)
    seen_by_watchers = [w for d in runs for w in watchers(d)]
    doubtful, deleted = uncertain_deletes(ops), deletes(ops)
    found: dict[str, list[Any]] = {}
    unreplayed = 0
    # Every member's own final state (serializable reads of each) and its own history since the
    # load's first write: one that lost a write is caught even if the others kept it, and a write
    # overwritten since is caught too.
    for member in etcd.members:
        client = etcd.client(member.name, timeout=5.0)
        try:
            final = {k: (rev, tag(v) or "") for p in prefixes for k, (rev, v) in client.items(p).items()}
            writes, oldest = client.history(first, client.status().revision)
        except EtcdRequestError as e:
            judge.holds(False, f"{member.name} answered the read-back of the load's keys and history", seen=str(e))
        finally:
            client.close()
        held: dict[str, list[tuple[int, str | None]]] = {}
        for rev, key, value in writes:
            if any(key.startswith(p) for p in prefixes):
                held.setdefault(key, []).append((rev, tag(value)))
        unreplayed = max(unreplayed, sum(rev < oldest for versions in acked.values() for rev, _ in versions))
        found[member.name] = (lost_writes(acked, final, watchers=seen_by_watchers, uncertain_deletes=doubtful,
                                          deletes=deleted)
                              + missing_from_history(acked, held, oldest))
    timeline.mark("figure", "lost writes of the load", value=max(len(v) for v in found.values()), unit="writes")
    if unreplayed:  # compacted away: those are judged by the final state alone, and said so
        timeline.mark("figure", "acknowledged writes of the load no history holds (compacted)", value=unreplayed,
                      unit="writes")
    judge.none_of({m: [str(x) for x in v[:10]] for m, v in found.items() if v},
                  "members missing acknowledged writes of the load")
