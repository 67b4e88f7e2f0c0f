"""Steps for voluntary disruptions of the shoot control plane under probes (GEP-20: "there should
not be any downtime due to VPA scaling of etcd pods with a pod disruption budget"): evictions
through the Eviction API, as a VPA updater or a drain makes them, and a rolling update of
kube-apiserver."""

from __future__ import annotations

import time

from pytest_bdd import parsers, then, when

from harness import judge
from harness.errors import ConfigError, HarnessError
from harness.faults.runner import FaultRunner
from harness.kube import cluster
from harness.probes.availability import AvailabilityProbe
from harness.providers.base import EtcdCluster
from harness.components import component
from harness.reference.render import replicas
from harness.steps.checks import at_most_elections, elections
from harness.steps.faults import before_faults
from harness.steps.scenario import Outage, Shoot
from harness.timeline import Timeline
from harness.validate import availability as av
from harness.wait import wait_for

PASS_S = 0.2  # between two rounds of eviction requests


def _back(etcd: EtcdCluster, shoot: Shoot, name: str, timeout: float) -> None:
    """Every pod of the component Running and ready again, none left terminating (an evicted pod
    is one until its process has stopped), and its etcd healthy."""
    from harness.kube import placement

    api = cluster.connect(shoot.seed.kube)
    want = replicas(shoot.spec, component(name))

    def left() -> list[str]:
        pods = [p for p in placement.observe(api, shoot.spec.namespace) if p.component == name]
        return ([f"{p.name} {p.state}" for p in pods if p.deleting or not p.serving]
                + ([f"{len(pods)} pods of {want}"] if len(pods) != want else []))

    wait_for(left, lambda pods: not pods, f"every {name} pod Running and ready again", timeout, interval=0.2)
    etcd.wait_healthy(timeout)


@when(parsers.re(r"every (?P<name>etcd-[a-z]+) member is evicted, each as soon as its budget allows"),
      target_fixture="outage")
def _(shoot: Shoot, etcd: EtcdCluster, timeline: Timeline, name: str) -> Outage:
    """As a VPA updater replacing every member: each pod's eviction asked for again every 0.2 s
    until it is granted, followers first, so the budget alone decides how many go at once. The
    window runs from the first granted eviction until every member is back and healthy."""
    c = component(name)
    api = cluster.connect(shoot.seed.kube)
    leader, leader_id, term = before_faults(etcd)
    waiting = cluster.pod_uids(api, shoot.spec.namespace, c.selector)
    order = sorted(waiting, key=lambda pod: pod == leader)  # the leader's pod last
    refused, granted = 0, {}
    deadline = time.monotonic() + etcd.config.timeouts.recovery * 4
    while len(granted) < len(order):
        if time.monotonic() > deadline:
            raise HarnessError(f"evictions of {name} still refused after {etcd.config.timeouts.recovery * 4:g} s: "
                               f"{sorted(set(order) - set(granted))} ({refused} refusals)")
        for pod in order:
            if pod in granted:
                continue
            if cluster.evict(api, shoot.spec.namespace, pod, uid=waiting[pod]):
                granted[pod] = timeline.now()
                timeline.mark("eviction", pod, refused_before=refused)
            else:
                refused += 1
        time.sleep(PASS_S)
    _back(etcd, shoot, c.name, etcd.config.timeouts.recovery * 2)
    timeline.mark("figure", f"evictions of {name} the budget refused", value=refused, unit="")
    outage = Outage([], min(granted.values()), leader, leader_id, term)
    outage.healed_at = timeline.now()
    return outage


@when(parsers.re(r'the (?P<name>etcd-[a-z]+) member in zone "(?P<evicted>[^"]+)" is evicted and the node of the '
                 r'member in zone "(?P<crashed>[^"]+)" fails (?P<moment>while it is away|once it is back)'),
      target_fixture="outage")
def _(shoot: Shoot, etcd: EtcdCluster, faults: FaultRunner, probe: AvailabilityProbe, timeline: Timeline, name: str,
      evicted: str, crashed: str, moment: str) -> Outage:
    """GEP-20's warning: "while an etcd member is being evicted ... another etcd member crashes"
    loses the quorum. The budget counts the eviction but cannot refuse a crash. The member of
    `evicted` goes through the Eviction API; the node of the member of `crashed` fails (its
    processes die) as soon as the evicted pod has stopped (the seed's API no longer has it), or
    once every member is back. The outage starts when the crash took effect; it heals, for the
    figures, when the probe sees the evicted member answer again after the crash (never, when it
    was back before). The failed node stays down until a later step or the scenario's end."""
    view = shoot.etcds[component(name).name]
    chosen = {z: next((m for m in view.members if m.zone == z), None) for z in (evicted, crashed)}
    if evicted == crashed or None in chosen.values():
        raise ConfigError(f"{name} needs a member in each of two different zones; asked for {evicted!r} and "
                          f"{crashed!r}, it has members in {sorted({m.zone for m in view.members})}")
    gone, node = chosen[evicted].name, chosen[crashed].node  # type: ignore[union-attr]
    api = cluster.connect(shoot.seed.kube)
    leader, leader_id, term = before_faults(etcd)
    uid = cluster.pod_uids(api, shoot.spec.namespace, component(name).selector)[gone]
    wait_for(lambda: cluster.evict(api, shoot.spec.namespace, gone, uid=uid), bool,
             f"the budget to let {gone} be evicted", etcd.config.timeouts.recovery, interval=PASS_S)
    timeline.mark("eviction", gone)
    # Away once its process has stopped: a member's status requests go unanswered from the eviction
    # on (its port-forward follows a pod being deleted), while it still votes for seconds.
    wait_for(lambda: cluster.pod_present(api, shoot.spec.namespace, gone, uid), lambda present: not present,
             f"the evicted pod {gone} to stop", etcd.config.timeouts.recovery, interval=0.05)
    away = timeline.now()
    if moment == "once it is back":
        _back(view, shoot, name, etcd.config.timeouts.recovery * 2)
    # The region is not whole on purpose: do not wait for it before the crash.
    crash = faults.inject("node-kill", node, wait_healthy=False)
    outage = Outage([crash], crash.effective_after, leader, leader_id, term, seen=crash.effective_at)
    back = wait_for(lambda: av.first_answer(probe.history.samples, gone, away),
                    lambda t: t is not None, f"the probe to see {gone} answer again", etcd.config.timeouts.recovery * 2)
    if back > outage.start:
        outage.healed_at = back
        outage.returned.append(gone)
        timeline.mark("figure", f"{name}: two members away at once", value=round(back - outage.start, 3), unit="s")
    return outage


@when(parsers.re(r"the (?P<name>kube-apiserver) Deployment rolls out again"), target_fixture="outage")
def _(shoot: Shoot, etcd: EtcdCluster, timeline: Timeline, name: str) -> Outage:
    """`kubectl rollout restart`: every replica replaced under the Deployment's own strategy; the
    window runs until the rollout is complete."""
    api = cluster.connect(shoot.seed.kube)
    leader, leader_id, term = before_faults(etcd)
    start = timeline.now()
    cluster.restart_deployment(api, shoot.spec.namespace, component(name).name)
    wait_for(lambda: cluster.rollout_left(api, shoot.spec.namespace, name), lambda left: left is None,
             f"the rollout of {name}", etcd.config.timeouts.deploy, interval=0.2)
    outage = Outage([], start, leader, leader_id, term)
    outage.healed_at = timeline.now()
    return outage


@then("no write is acknowledged while the evicted member and the crashed one are both away")
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline) -> None:
    """GEP-20's loss of quorum: no write begun between the crash's effect and the probe seeing the
    evicted member answer again was acknowledged before that answer (one begun before the crash
    may have been committed before it)."""
    crash, back = max(f.effective_at for f in outage.faults), outage.healed_at
    judge.holds(back is not None, "the evicted member and the crashed one were away at once",
                seen="the evicted member answered again before the crash")
    begun = av.writes_begun(probe.history.samples, crash, back)  # type: ignore[arg-type]
    acked = [s for s in begun if s.ok and s.end <= back]  # type: ignore[operator]
    timeline.mark("figure", "writes acknowledged while two members were away", value=len(acked), unit="writes",
                  begun=len(begun))
    judge.holds(len(begun) > 0, "writes were begun while the evicted member and the crashed one were both away",
                seen=f"none in {back - crash:.2f} s")  # type: ignore[operator]
    judge.equal(len(acked), 0, f"writes acknowledged in the {back - crash:.2f} s while the evicted member and the "  # type: ignore[operator]
                f"crashed one were both away (of {len(begun)} begun)")


@then(parsers.re(r"at most (?P<count>\d+) (?P<name>etcd-[a-z]+) members? (?:is|are) away at a time"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: str, name: str) -> None:
    """GEP-20: no more than one member unavailable, the quorum intact. A member is away while
    nothing shows it there: neither its status requests (its client port) nor its /health (what
    its readiness probe asks: a leader, and a linearizable read served) answered (av.most_away).
    Either alone misreads a member that is there: a member just restarted is in the quorum
    before its client port takes connections, and every member's /health fails while the
    leadership changes hands. A count over the bound only because one request timed out between
    two answered ones is inconclusive (the probe cannot tell slow from gone)."""
    component(name)
    others = [m for m in probe.history.members if not m.startswith(f"{name}-")]
    if others:
        raise ConfigError(f"'at most N {name} members away' is judged on the probe's etcd, whose members are "
                          f"{', '.join(probe.history.members)}: name that etcd, or probe {name} (\"And {name} of the shoot "
                          "control plane is the etcd under test\" before the probes' step)")
    if not any(s.kind == "health" for s in probe.history.samples):
        raise ConfigError("'members away at a time' needs each member's /health as well as its status: add \"And "
                          "each member's health is checked every 100 ms, as its readiness probe does\" after the "
                          "probes' step")
    window = (probe.history.samples, outage.start, outage.healed_at or timeline.now(), ("status", "health"))
    most, at, who = av.most_away(*window)
    timeline.mark("figure", f"{name} members away at once, at most", value=most, unit="")
    what = f"at most {count} {name} member(s) away at a time"
    seen = f"{most} were{f' ({who}, at {at:.2f} s)' if at is not None else ''}"
    if most > int(count) and av.most_away(*window, lone_timeouts=False)[0] <= int(count):
        raise judge.Inconclusive(f"{what}: inconclusive, {seen}, but one of them only for a single request that "
                                 "timed out between two answered ones: a slow answer the probe cannot tell from "
                                 "an absent member")
    judge.holds(most <= int(count), f"{what}: {seen}", seen=most)


@then(parsers.parse("the leadership moves at most {count:d} times"))
def _(probe: AvailabilityProbe, outage: Outage, timeline: Timeline, count: int) -> None:
    """Each leader elected after the outage began is a move (a re-election of the same member too),
    counted as checks.elections counts them: more seen, or more the reports cannot rule out, fail."""
    found, _ = elections(probe, outage, timeline)
    at_most_elections(found, count, f"the leadership moved at most {count} times")

