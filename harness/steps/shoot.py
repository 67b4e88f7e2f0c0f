"""Steps of the GEP-20 experiment: the reference control plane running for real on the local seed,
its etcd clusters and its API probed through the outage, judged like GEP-20's tables."""

from __future__ import annotations

from typing import Any

from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.errors import CapabilityMissing, ConfigError
from harness.kube import cluster, placement
from harness.probes.etcd_status import EtcdStatusSampler
from harness.probes.pod_phases import PodPhaseSampler
from harness.probes.shoot_api import NAMESPACE, ShootApiProbe, configmap_name, gone_on_read_back, read_back_errors
from harness.providers.base import EtcdCluster, Environment, SeedBackupStore, shoot_etcd
from harness.topology import Seed
from harness.components import ETCDS, component
from harness.reference.render import ReferenceSpec
from harness.steps.placement import record_pods
from harness.steps.scenario import Outage, Shoot, last_fault, mark_first_held
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.validate.history import lost_writes
from harness.wait import first_within, poll_within
from harness.steps.holders import Loads, Probes, Shoots


@given(parsers.parse('the reference control plane with failure tolerance "{tolerance}" in the {form} form runs for real'),
       target_fixture="shoot")
def _(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment, tolerance: str, form: str) -> Shoot:
    """The reference control plane deployed on the seed in its own namespace, its etcds and
    kube-apiservers running for real on the node agents (the form: gep20, conventions, or
    gardener, where Gardener's own webhook places it); every member healthy before it hands on."""
    spec = ReferenceSpec(tolerance, env.zones, form, namespace=f"shoot--harness--{tolerance}-{form}",
                         storage_class=seed.storage_class, real=True)
    return _run_for_real(shoots, probes, timeline, seed, env, spec)


@given(parsers.parse('the reference control plane with failure tolerance "{tolerance}" in the {form} form runs for real, '
                     'its etcd clusters of {members:d} members'), target_fixture="shoot")
def _(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment, tolerance: str, form: str,
      members: int) -> Shoot:
    """GEP-20's future enhancement running: five members tolerate two failures."""
    spec = ReferenceSpec(tolerance, env.zones, form, namespace=f"shoot--harness--{tolerance}-{form}",
                         storage_class=seed.storage_class, real=True, etcd_members=members)
    return _run_for_real(shoots, probes, timeline, seed, env, spec)


@given(parsers.parse('the reference control plane with failure tolerance "{tolerance}" in the {form} form runs for real, '
                     'its etcd-main backed up with a delta snapshot every {delta:g} s'), target_fixture="shoot")
def _(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment, tolerance: str, form: str,
      delta: float) -> Shoot:
    """A backup sidecar in each etcd-main pod, run by the node agents beside the member, writing to
    the bucket of the environment's cloud under the shoot's own prefix (seed 003)."""
    if not isinstance(env, SeedBackupStore):
        raise CapabilityMissing(f"the {env.provider} environment has no object store for the seed's backups")
    spec = ReferenceSpec(tolerance, env.zones, form, namespace=f"shoot--harness--{tolerance}-{form}",
                         storage_class=seed.storage_class, real=True, delta_snapshot_period_s=delta)
    return _run_for_real(shoots, probes, timeline, seed, env, spec, env.seed_backup_store())


@given(parsers.parse('the reference control plane with failure tolerance "{tolerance}" in the gardener form runs for '
                     'real, its etcds made by etcd-druid'), target_fixture="shoot")
def _(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment, tolerance: str) -> Shoot:
    """etcd-main and etcd-events as gardenlet's own code makes their Etcd resources, and etcd-druid
    (real, started on the seed) their StatefulSets, whose pods the node agents run with druid's
    configuration (harness.kube.druid_pods); the rest as in the gardener form."""
    spec = ReferenceSpec(tolerance, env.zones, "gardener", namespace=f"shoot--harness--{tolerance}-druid",
                         storage_class=seed.storage_class, real=True, druid=True)
    return _run_for_real(shoots, probes, timeline, seed, env, spec)


def _run_for_real(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment,
                  spec: ReferenceSpec, backup_store: Any = None) -> Shoot:
    shoot = shoots.deploy(seed, spec, backup_store, env)
    # Pods per zone and phase on the timeline until the scenario ends (the report's pods panel).
    probes.add(PodPhaseSampler.of_seed(seed.kube, spec.namespace, timeline).start())
    if spec.druid:  # the operator's own view of its etcds, a vantage beside the members' answers
        shoot.etcd_status = probes.add(EtcdStatusSampler.of_seed(seed.kube, spec.namespace, ETCDS, timeline).start())
    # Taken while every member runs: a member keeps its address wherever its volume lets it go.
    shoot.etcds = {name: shoot_etcd(env, seed, spec.namespace, name) for name in ETCDS}
    for view in shoot.etcds.values():
        view.wait_healthy()
    return shoot


@given(parsers.parse('the reference control plane with failure tolerance "{tolerance}" in the {form} form runs for real, '
                     'its kube-apiservers given only the etcd members in zone "{zone}"'), target_fixture="shoot")
def _(shoots: Shoots, probes: Probes, timeline: Timeline, seed: Seed, env: Environment, tolerance: str, form: str,
      zone: str) -> Shoot:
    """The configuration an apiserver started with the members scheduled at that moment had: it
    keeps that list for its lifetime and loses etcd when those members are cut off."""
    spec = ReferenceSpec(tolerance, env.zones, form, namespace=f"shoot--harness--{tolerance}-{form}",
                         storage_class=seed.storage_class, real=True, apiserver_etcd_zones=(env.zone(zone),))
    return _run_for_real(shoots, probes, timeline, seed, env, spec)


@given(parsers.re(r"(?P<name>etcd-[a-z]+) of the shoot control plane is the etcd under test"), target_fixture="etcd")
def _(shoot: Shoot, name: str) -> EtcdCluster:
    """The steps about etcd (probes, leaders, catch-up, lost writes) judge that etcd of the shoot."""
    component(name)
    return shoot.etcds[name]


@given(parsers.parse('the shoot API is written every {ms:d} ms through its load balancer from a client in zone "{zone}"'),
       target_fixture="shoot_probe")
def _(shoot: Shoot, probes: Probes, env: Any, timeline: Timeline, ms: int, zone: str) -> ShootApiProbe:
    """A ConfigMap created every interval through the shoot's load balancer, from the zone's client,
    as a client of the control plane sees it."""
    # The shoot's etcd view stands where its clients stand (a zone's namespace, or its vantage pod).
    probe = ShootApiProbe(shoot.seed, shoot.spec.namespace, timeline, shoot.etcds["etcd-main"], env.zone(zone), ms / 1000)
    return probes.add(probe.start())


@when(parsers.parse('the node of the {name} member in zone "{zone}" fails'), target_fixture="outage")
def _(shoot: Shoot, etcd: Any, faults: Any, name: str, zone: str) -> Outage:
    """The node's processes die (its agent, kwok and pods too) until the scenario ends."""
    from harness.steps.faults import _apply

    node = next((m.node for m in shoot.etcds[component(name).name].members if m.zone == zone), None)
    if node is None:
        raise ConfigError(f"{name} has no member in zone {zone!r}")
    return _apply(etcd, faults, "node-kill", [node], 0)


@then(parsers.parse("within {limit:g} s no {name} member runs on the failed node"))
def _(shoot: Shoot, outage: Outage, limit: float, name: str) -> None:
    """Every member of that etcd bound elsewhere than the failed node, first seen within the bound
    (each read's begin and end kept: a read across the bound is inconclusive)."""
    failed = {f.target for f in outage.faults}

    def still_there() -> list[str]:
        pods = placement.of(placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace), component(name).name)
        return [p.name for p in pods if p.node in failed]

    polled = poll_within(still_there, lambda there: not there, f"{name} members to leave {', '.join(failed)}", limit)
    judge.within(polled, f"no {name} member bound to {', '.join(sorted(failed))}",
                 show=lambda there: f"still bound there: {there}")


@then(parsers.parse('within {limit:g} s the nodes of zone "{zone}" are NotReady and tainted unreachable'))
def _(env: Environment, seed: Seed, timeline: Timeline, limit: float, zone: str) -> None:
    """Every node of the zone NotReady with the unreachable taint, as the seed's node lifecycle
    controller marks a lost zone, first seen within the bound."""
    names = {n.name for n in env.nodes_in(zone)}  # type: ignore[attr-defined]

    def healthy_ones() -> list[str]:
        views = [v for v in cluster.node_views(cluster.connect(seed.kube)) if v.name in names]
        return [v.name for v in views if v.ready or not any(t.startswith("node.kubernetes.io/unreachable") for t in v.taints)]

    began = timeline.now()
    polled = poll_within(healthy_ones, lambda healthy: not healthy, f"the nodes of {zone} NotReady and tainted", limit)
    mark_first_held(timeline, f"the nodes of {zone} NotReady and tainted unreachable, after the fault took effect",
                    polled, began, last_fault(timeline)[0])
    judge.within(polled, f"every node of {zone} NotReady and tainted unreachable",
                 show=lambda healthy: f"still Ready or not tainted unreachable: {healthy}")


@then(parsers.parse("within {limit:g} s every pod of the shoot control plane is Running"))
def _(shoot: Shoot, timeline: Timeline, limit: float) -> None:
    """Every pod of the shoot's namespace Running, ready and on a Ready node, first seen within the bound."""
    def observe() -> list[placement.PodPlacement]:
        return placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace)

    def not_running(pods: list[placement.PodPlacement]) -> list[str]:
        return [f"{p.name}: {p.state}" for p in pods if not p.serving]

    began = timeline.now()
    polled = poll_within(observe, lambda pods: bool(pods) and not not_running(pods), "every pod Running and ready", limit)
    if polled.reads[-1].value is not None:
        record_pods(shoot, timeline, f"within {limit:g} s, every pod of the shoot control plane Running",
                    polled.reads[-1].value)
    mark_first_held(timeline, "every pod of the shoot control plane Running, after the return", polled, began,
                    last_fault(timeline)[1])
    judge.within(polled, "every pod of the shoot control plane Running and ready",
                 show=lambda pods: f"not Running and ready: {not_running(pods)}")


@then(parsers.re(r"(?P<name>etcd-[a-z]+) keeps quorum with (?P<count>\d+) members"))
def _(shoot: Shoot, outage: Outage, name: str, count: str) -> None:
    """That many of its members are outside the zones that are down, and they agree on a leader
    among them within [timeouts] member_ready."""
    view = shoot.etcds[component(name).name]
    survivors = [m.name for m in view.members if m.zone not in outage.zones]
    judge.equal(len(survivors), int(count), f"{name} members outside the zones that are down")

    def leader() -> str | None:
        statuses = view.status()
        found = view.leader({n: statuses[n] for n in survivors})
        return found if found in survivors else None

    found = first_within(leader, f"{name}'s surviving members to agree on a leader", view.config.timeouts.member_ready)
    judge.holds(found is not None, f"{name}'s surviving members agree on a leader among them", seen=view.status())


def _druid_status(shoot: Shoot, name: str) -> EtcdStatusSampler:
    component(name)
    if shoot.etcd_status is None:
        raise ConfigError(f"etcd-druid runs no etcd of {shoot.spec.namespace}: its steps need the Given "
                          "'... in the gardener form runs for real, its etcds made by etcd-druid'")
    return shoot.etcd_status  # type: ignore[no-any-return]


@then(parsers.re(r"etcd-druid reports (?P<name>etcd-[a-z]+) quorate throughout the outage"))
def _(shoot: Shoot, outage: Outage, timeline: Timeline, name: str) -> None:
    """Every read of the Etcd's status from the outage's effect to this step's own read (to the
    return, when it came first) has druid's Ready condition True (a majority of members ready,
    from their leases); a failed read counts against it, and so does a status druid has not
    updated for 45 s (druid not running: it reports nothing). No contrary read but a stretch of more
    than 5 s no read covered: inconclusive. druid takes a member as NotReady only a minute after
    its lease stopped being renewed: a shorter loss of quorum is not what it reports."""
    from harness.validate.etcd_status import quorate_throughout

    sampler = _druid_status(shoot, name)
    sampler.sample(name)
    seen = quorate_throughout(sampler.of(name), outage.start,
                              timeline.now() if outage.healed_at is None else outage.healed_at)
    judge.throughout(seen.contrary, seen.reads, seen.unread,
                     f"etcd-druid reports {name} quorate from {seen.start:.1f}s to {seen.end:.1f}s")


@then(parsers.parse("within {limit:g} s etcd-druid reports {name} ready with every member ready"))
def _(shoot: Shoot, timeline: Timeline, limit: float, name: str) -> None:
    """druid's status of the Etcd says ready, every replica ready and AllMembersReady, first at a
    read within the bound (counted from the step's start; the time from the return is a figure)."""
    sampler = _druid_status(shoot, name)
    began = timeline.now()
    polled = poll_within(lambda: sampler.sample(name)[0], lambda read: read.all_ready,
                         f"etcd-druid to report {name} ready, every member ready", limit, interval=1.0)
    mark_first_held(timeline, f"etcd-druid reports {name} ready, every member ready, after the return", polled,
                    began, last_fault(timeline)[1])
    judge.within(polled, f"etcd-druid reports {name} ready with every member ready", show=lambda read: read.says())


@then(parsers.re(r"(?P<name>etcd-[a-z]+) members end with equal HashKV"))
def _(shoot: Shoot, probes: Probes, loads: Loads, timeline: Timeline, name: str) -> None:
    """Once every writer stopped, that etcd's members reach one revision and agree on HashKV at it."""
    from harness.steps.checks import equal_hashes
    from harness.steps.load import stop_loads

    probes.stop_all()  # "once writes stopped": a probe or a load still writing keeps the members apart
    stop_loads(loads, timeline)
    equal_hashes(shoot.etcds[component(name).name], f"{name} members")


@then(parsers.parse("the shoot API is writable again within {limit:g} s of the outage"))
def _(shoot_probe: ShootApiProbe, outage: Outage, timeline: Timeline, limit: float) -> None:
    """The longest stretch without an acknowledged shoot API write from the outage's effect, an open
    one counted to the bound's end, is within the bound; missed by no more than the harness
    stalled or its writer could place the first write that worked: inconclusive."""
    samples = shoot_probe.history.samples
    gap = av.longest_write_gap(samples, outage.start, outage.window_end(timeline, limit))
    timeline.mark("figure", "shoot API write gap", value=gap.length, unit="s", open=gap.open)
    # Missed by no more than the harness stalled, or than its one writer (a request may take its
    # whole timeout) could place the first write that worked: inconclusive, as the etcd probe's.
    judge.gap_at_most(gap, limit, "the shoot API's longest write gap since the outage took effect",
                      *av.gap_resolution(samples, gap))


@then(parsers.re(r"the 99th percentile of shoot API write latency during the outage is "
                 r"(?P<how>under|at least) (?P<limit>\d+(\.\d+)?) ms"))
def _(shoot_probe: ShootApiProbe, outage: Outage, timeline: Timeline, how: str, limit: str) -> None:
    """Through the load balancer, as a client sees it: a failed write is slower than any."""
    from harness.steps.checks import p99_at_least, p99_under, write_p99

    p99 = write_p99(shoot_probe, outage, timeline, "shoot API write latency", how)
    (p99_under if how == "under" else p99_at_least)(p99, float(limit), "shoot API write latency")


@then("no acknowledged shoot API write is lost")
def _(shoot_probe: ShootApiProbe, probes: Probes, timeline: Timeline) -> None:
    """Lost: an acknowledged ConfigMap a read-back found gone (404) or the final listing lacks. A
    read-back that failed otherwise (timeout, 5xx) says nothing about the write (the write-gap
    step judges the outage); a final listing that fails is an error of this step, not a pass."""
    probes.stop_all()
    acked = shoot_probe.history.acked()
    judge.holds(len(acked) > 0, "the shoot API probe had acknowledged writes to check", seen=len(acked))
    lost = lost_writes(acked, shoot_probe.present(), gone_on_read_back(shoot_probe.history))
    timeline.mark("figure", "lost shoot API writes", value=len(lost), unit="writes",
                  read_back_errors=len(read_back_errors(shoot_probe.history)))
    judge.none_of([f"{NAMESPACE}/{configmap_name(shoot_probe.history.prefix, seq)}" for seq in lost],
                  "acknowledged shoot API writes missing (gone on a read-back or at the end)")
