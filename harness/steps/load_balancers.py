"""Steps of KEP-3458 (seed 002): a Service's cloud load balancer kept by the real cloud controller
manager, its node set observed through the cloud API and the controller's calls through the cloud's
request log, connections held through the load balancer, judged through a zone outage, a node's
exclusion label and a node's deletion."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import pytest
from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.errors import CapabilityMissing, ConfigError, HarnessError
from harness.faults.runner import FaultRunner
from harness.kube import cluster
from harness.probes.connections import Connection, ConnectionProbe, node_of
from harness.probes.load_balancer import ELB_UPDATES, NodeSetProbe, NodeSetSample
from harness.providers.base import CloudLoadBalancers, CloudRequestLog, Environment
from harness.topology import Seed
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.validate import load_balancer as lb_validate
from harness.wait import Polled, first_within, poll_within, wait_for
from harness.steps.holders import Probes

NAMESPACE = "kep3458"
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


SETTLED_S = 5.0
CLOSING_READ_S = 10.0  # s: how long a read begun after a window's end may take to come in


def _quiet_for(env: Environment, key: str) -> float:
    """Seconds since the controller's last call that changed a load balancer (in the last minute)."""
    now = time.time()
    last = max((r["t"] for r in _cloud(env).cloud_requests(now - 60) if r["key"] == key and r["action"] in ELB_UPDATES),
               default=now - 60)
    return now - last


def _cloud(env: Environment) -> Any:
    if not isinstance(env, CloudLoadBalancers) or not isinstance(env, CloudRequestLog):
        raise CapabilityMissing(f"the {env.provider} environment runs no cloud controller manager for its seed")
    return env


@given(parsers.re(r"the cloud controller manager(?: of cloud-provider-aws (?P<version>v[\d.]+)(?P<before>, from before "
                  r"KEP-3458,)?)? keeps the load balancers of the seed's services"), target_fixture="cloud_controller")
def _(env: Environment, seed: Seed, cloud: Any, version: str | None, before: str | None) -> dict[str, Any]:
    """k8s.io/cloud-provider-aws's controller against the environment's cloud (started on first use),
    of the current release or the one named; one said to be from before the KEP must be."""
    record = dict(_cloud(env).start_cloud_controller(version))
    if before and record.get("stable_node_set", True):
        raise ConfigError(f"cloud-provider-aws {record.get('version')} keeps NotReady nodes (KEP-3458): it is not from "
                          "before the KEP")
    return record


@given(parsers.parse('a service "{name}" of type LoadBalancer'), target_fixture="lb")
def _(env: Environment, seed: Seed, cloud_controller: dict[str, Any], probes: Probes, timeline: Timeline,
      request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    """Made in its own namespace with an echo pod per zone behind it (harness.kube.echo_service);
    given once its load balancer holds every node, the controller has settled and the load
    balancer's own health checks have every node in service. Its node set is then sampled until
    the scenario ends. The namespace goes at teardown, and the controller deletes the ELB."""
    from kubernetes import client as k8s

    from harness.kube import echo_service
    from harness.reference.deploy import await_namespace_gone

    api = cluster.connect(seed.kube)
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    await_namespace_gone(api, NAMESPACE, env.config.timeouts.deploy)  # an earlier scenario's, still going
    with cluster.api_errors(f"creating the namespace {NAMESPACE}"):
        core.create_namespace({"metadata": {"name": NAMESPACE}})
    request.addfinalizer(lambda: core.delete_namespace(NAMESPACE))
    cluster.apply(api, echo_service.manifests(NAMESPACE, name, len(env.zones)))
    every = sorted(n.name for n in env.nodes)
    timeout = env.config.timeouts.deploy
    wait_for(lambda: _cloud(env).load_balancer_nodes(NAMESPACE, name), lambda nodes: nodes == every,
             f"the load balancer of {NAMESPACE}/{name} holding every node", timeout)
    # Settled: no call of the controller's changing a load balancer for a while (a controller
    # started a moment ago syncs the nodes it has just seen change once more).
    wait_for(lambda: _quiet_for(env, cloud_controller["key"]), lambda quiet: quiet >= SETTLED_S,
             f"the cloud controller to make no load balancer update for {SETTLED_S:g} s", timeout)
    wait_for(lambda: apps.read_namespaced_deployment(name, NAMESPACE).status.ready_replicas or 0,
             lambda ready: ready == len(env.zones), f"{len(env.zones)} echo pods of {NAMESPACE}/{name} ready", timeout)
    wait_for(lambda: _cloud(env).load_balancer_health(NAMESPACE, name),
             lambda health: sorted(n for n, state in health.items() if state == "InService") == every,
             f"every node in service in the health checks of {NAMESPACE}/{name}'s load balancer", timeout)
    # PreferSameZone holds only once every ready endpoint carries its zone's hint: until then
    # kube-proxy sends a zone's traffic to every zone's pod.
    wait_for(lambda: _hinted_zones(api, name), lambda zones: zones == sorted(env.zones),
             f"one ready endpoint of {NAMESPACE}/{name} per zone, each hinted for its own zone", timeout)
    probe = probes.add(NodeSetProbe(lambda: _cloud(env).load_balancer_nodes(NAMESPACE, name), timeline, name).start())
    return {"service": name, "probe": probe, "key": cloud_controller["key"]}


@given(parsers.parse('{count:d} connections are held through the load balancer of service "{name}"'),
       target_fixture="connections")
def _(env: Environment, seed: Seed, lb: dict[str, Any], probes: Probes, timeline: Timeline, count: int,
      name: str) -> dict[str, Any]:
    """Opened from the internet (where the environment says its clients stand), each naming the pod
    it reached; spoken on every 0.5 s until the scenario ends. Given once every one reached the
    pod of the zone it went through (held_in_zone, up to the deploy timeout). The zone each went
    through is taken now, while every pod it reached is still where it was."""
    endpoint = _cloud(env).load_balancer_endpoint(NAMESPACE, name)
    if endpoint is None:
        raise CapabilityMissing(f"the load balancer of {NAMESPACE}/{name} has no address a client can reach")
    probe, paths = held_in_zone(lambda: ConnectionProbe(endpoint, count, timeline, name).start(),
                                lambda probe: _paths(env, seed, probe.snapshot()), timeline,
                                f"the load balancer of {NAMESPACE}/{name}", env.config.timeouts.deploy)
    probes.add(probe)
    return {"probe": probe, "zones": {i: through for i, (through, _) in paths.items()}}


@when(parsers.parse('node "{node}" is labelled for exclusion from external load balancers'), target_fixture="node_change")
def _(seed: Seed, timeline: Timeline, request: pytest.FixtureRequest, node: str) -> dict[str, Any]:
    """node.kubernetes.io/exclude-from-external-load-balancers, taken off again at teardown."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(cluster.connect(seed.kube))
    with cluster.api_errors(f"labelling node {node}"):
        core.patch_node(node, {"metadata": {"labels": {EXCLUDE_LABEL: "true"}}})
    request.addfinalizer(lambda: core.patch_node(node, {"metadata": {"labels": {EXCLUDE_LABEL: None}}}))
    at = timeline.now()
    timeline.mark("label", f"{node} excluded from external load balancers")
    return {"node": node, "at": at, "what": "the exclusion label"}


@when(parsers.parse('node "{node}" is deleted'), target_fixture="node_change")
def _(faults: FaultRunner, node: str) -> dict[str, Any]:
    """The node-delete fault: the node object gone (made again at heal), as after its machine was."""
    applied = faults.inject("node-delete", node)
    return {"node": node, "at": applied.effective_after, "what": "the deletion"}


def _window(samples: list[NodeSetSample], start: float, end: float) -> list[NodeSetSample]:
    return [s for s in samples if start <= s.t <= end]


def _awaited(probe: NodeSetProbe, timeline: Timeline, start: float, limit: float,
             held: Callable[[NodeSetSample], bool], what: str) -> Polled[NodeSetSample]:
    """The probe's reads begun from `start` up to the first that saw `held`, or the first begun
    after `limit` s that did not (it closes the window): judged by harness.judge.within, which
    places the moment between the last read that said no and the first that said yes."""
    got = first_within(lambda: lb_validate.reads_until(probe.snapshot(), start, limit, held), what,
                       max(0.5, start + limit - timeline.now()) + CLOSING_READ_S)
    judge.holds(got is not None, f"reads of the load balancer's nodes up to {limit:g} s after {start:.1f} s",
                seen=[(round(s.t, 1), s.seen()) for s in probe.snapshot()[-3:]])
    return Polled(start, limit, got or ())


@then(parsers.parse('the load balancer of service "{name}" keeps all {count:d} nodes during the outage'))
def _(lb: dict[str, Any], outage: Outage, timeline: Timeline, name: str, count: int) -> None:
    """Every read of its node set from the outage's effect until now, and the first read begun
    after now that closes the window: all `count` nodes, the same set throughout; a read that
    failed is a violation, not a gap to skip."""
    end = timeline.now()
    probe = lb["probe"]
    seen = _window(probe.through(end, CLOSING_READ_S), outage.start, math.inf)
    judge.holds(bool(seen) and seen[-1].t >= end,
                f"reads of the load balancer's nodes up to the end of the window ({end:.1f} s)",
                seen=[(round(s.t, 1), s.nodes) for s in seen[-3:]])
    wrong = lb_validate.changed(seen, count)
    timeline.mark("figure", f"reads of {name}'s load balancer without all {count} nodes during the outage",
                  value=len(wrong), unit="reads")
    judge.none_of(wrong, f"reads of {name}'s load balancer without all {count} nodes of the outage's start")


@then("the controller makes no load balancer update during the outage")
def _(env: Environment, lb: dict[str, Any], outage: Outage, timeline: Timeline) -> None:
    """From the cloud's request log: no call of the controller's key that changes a load balancer,
    from the outage's effect until now."""
    since = time.time() - (timeline.now() - outage.start)
    calls = [f"{r['action']} at {r['t'] - since:.1f} s" for r in _cloud(env).cloud_requests(since)
             if r["key"] == lb["key"] and r["action"] in ELB_UPDATES]
    timeline.mark("figure", "load balancer update calls during the outage", value=len(calls), unit="calls")
    judge.none_of(calls, "load balancer update calls by the cloud controller manager during the outage")


@then(parsers.parse('within {limit:g} s node "{node}" leaves the load balancer of service "{name}"'))
def _(lb: dict[str, Any], node_change: dict[str, Any], timeline: Timeline, limit: float, node: str, name: str) -> None:
    """From the node's exclusion label, or its deletion in effect."""
    polled = _awaited(lb["probe"], timeline, node_change["at"], limit,
                      lambda s: s.nodes is not None and not s.error and node not in s.nodes,
                      f"{node} out of {name}'s load balancer")
    when = polled.first_held()
    timeline.mark("figure", f"time from {node_change['what']} to {node} leaving the load balancer",
                  value=when[1] if when else None, unit="s")
    judge.within(polled, f"time until {node} left {name}'s load balancer", show=NodeSetSample.seen)


Paths = dict[int, tuple[str | None, str | None]]  # connection index -> (zone went through, zone of the pod reached)


def held_in_zone(open_probe: Callable[[], ConnectionProbe], paths_of: Callable[[ConnectionProbe], Paths],
                 timeline: Timeline, what: str, timeout: float) -> tuple[ConnectionProbe, Paths]:
    """Connections opened through `what` until each reached the pod of the zone it went through
    (each node's kube-proxy applies the zone hints on its own sync), all opened again after a
    second while one did not; the probe holding them and their paths. One that cannot be opened
    or placed ends the wait at once."""
    held: list[tuple[ConnectionProbe, Paths]] = []
    failed: list[str] = []

    def attempt() -> Paths | None:
        """Those that reached another zone than they went through."""
        try:
            probe = open_probe()
            try:
                paths = paths_of(probe)
            except BaseException:
                probe.stop()
                raise
        except (HarnessError, OSError) as e:
            failed.append(f"{type(e).__name__}: {e}")
            return None
        timeline.mark("connection", f"{probe.service}: the zones the connections went through and reached",
                      paths={c.index: [c.pod, c.peer, *paths[c.index]] for c in probe.snapshot()})
        crossed = {i: path for i, path in paths.items() if path[0] != path[1]}
        if crossed:
            probe.stop()
        else:
            held.append((probe, paths))
        return crossed

    wait_for(attempt, lambda crossed: crossed == {}, f"every connection through {what} to reach the pod of the zone it "
             "went through (trafficDistribution: PreferSameZone)", timeout, interval=1.0,
             give_up=lambda: failed[0] if failed else None)
    return held[0]


def _paths(env: Environment, seed: Seed, connections: list[Connection]) -> Paths:
    """Connection index -> (the zone of the node it went through, the zone of the pod it reached)."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(cluster.connect(seed.kube))
    with cluster.api_errors(f"listing the pods of {NAMESPACE}"):
        pods = {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(NAMESPACE).items}
    zones = {n.name: n.zone for n in env.nodes}
    addresses = {n.name: n.address for n in env.nodes}
    return {c.index: (zones.get(node_of(c, addresses, pods.get) or ""), zones.get(pods.get(c.pod) or ""))
            for c in connections}


def _hinted_zones(api: Any, name: str) -> list[str] | None:
    from kubernetes import client as k8s

    return hinted_zones(k8s.DiscoveryV1Api(api).list_namespaced_endpoint_slice(
        NAMESPACE, label_selector=f"kubernetes.io/service-name={name}").items)


def hinted_zones(slices: list[Any]) -> list[str] | None:
    """The zones of the ready endpoints of a Service's EndpointSlices, or None while one of them
    is not hinted for its own zone alone (kube-proxy then spreads every zone's traffic)."""
    zones = []
    for endpoint in (e for s in slices for e in s.endpoints or [] if e.conditions and e.conditions.ready):
        hinted = [z.name for z in endpoint.hints.for_zones or []] if endpoint.hints else []
        if hinted != [endpoint.zone]:
            return None
        zones.append(endpoint.zone)
    return sorted(zones)


def _connections_through(connections: dict[str, Any], outage: Outage, zone: str) -> list[Connection]:
    held = [c for c in connections["probe"].snapshot() if c.opened <= outage.start]
    mine = [c for c in held if connections["zones"].get(c.index) == zone]
    judge.holds(bool(mine), f"connections through zone {zone} held when the outage began",
                seen={c.index: [c.pod, c.peer, connections["zones"].get(c.index)] for c in held})
    return mine


@then(parsers.parse('no established connection through zone "{zone}" is reset or stalls for more than {limit:g} s'))
def _(connections: dict[str, Any], outage: Outage, timeline: Timeline, zone: str, limit: float) -> None:
    """Every connection opened before the outage through a node of `zone`: still open, and echoing
    with no silence longer than `limit` from the outage's effect until now (the silence still
    open at the end counts up to the end)."""
    end = timeline.now()
    mine = _connections_through(connections, outage, zone)
    timeline.mark("figure", f"connections through {zone} during the outage", value=len(mine), unit="connections")
    ended = lb_validate.ended_by(mine, end)
    silent = [(c, *c.longest_silence(outage.start, end)) for c in mine if c.ended is None or c.ended > end]
    silent = [(c, a, b) for c, a, b in silent if b - a > limit]
    timeline.mark("figure", f"connections through {zone} reset or stalled during the outage",
                  value=len(ended) + len(silent), unit="connections")
    what = f"connections through zone {zone} reset, closed or silent for more than {limit:g} s"
    if silent and not ended:  # an echo seen late by a stalled probe makes a silence it did not have
        probe: ConnectionProbe = connections["probe"]
        _, a, b = max(silent, key=lambda cab: cab[2] - cab[1] - limit - probe.stalled(cab[1], cab[2]))
        judge.resolved(b - a - limit, probe.stalled(a, b), what,
                       "; ".join(f"#{c.index} silent from {a:.1f} s to {b:.1f} s" for c, a, b in silent))
    judge.none_of(ended + [f"#{c.index} via {c.pod}: silent for {b - a:.1f} s" for c, a, b in silent], what)


@then(parsers.parse('within {limit:g} s the health checks of the load balancer of service "{name}" take the nodes '
                    'of zone "{zone}" out of service'))
def _(env: Environment, outage: Outage, timeline: Timeline, limit: float, name: str, zone: str) -> None:
    """The load balancer's own view (DescribeInstanceHealth): the zone's nodes OutOfService, every
    other node InService, within `limit` of the outage's effect."""
    theirs = sorted(n.name for n in env.nodes if n.zone == zone)

    def out_of_service(health: dict[str, str]) -> bool:
        return sorted(n for n, state in health.items() if state == "OutOfService") == theirs

    polled = poll_within(lambda: _cloud(env).load_balancer_health(NAMESPACE, name), out_of_service,
                         f"the nodes of {zone} out of service in {name}'s load balancer", limit, interval=0.25,
                         start=timeline.base + outage.start)
    when = polled.first_held()
    timeline.mark("figure", f"time until the health checks took {zone}'s nodes out of service",
                  value=when[1] if when else None, unit="s")
    judge.within(polled, f"time until exactly the nodes of {zone} were out of service in {name}'s load balancer")


@then(parsers.parse('no connection through zone "{zone}" is closed by the load balancer during the outage'))
def _(connections: dict[str, Any], outage: Outage, timeline: Timeline, zone: str) -> None:
    """KEP-3458's point: a NotReady node stays in the set, so what goes through it is not cut (it
    may go silent while its zone is away)."""
    ended = lb_validate.ended_by(_connections_through(connections, outage, zone), timeline.now())
    judge.none_of(ended, f"connections through zone {zone} ended during the outage")


@then(parsers.parse('within {limit:g} s every connection through zone "{zone}" is closed by the load balancer'))
def _(connections: dict[str, Any], outage: Outage, timeline: Timeline, limit: float, zone: str) -> None:
    """The cut KEP-3458 describes: the node taken out of the set, its connections closed at once.
    The time is the last of them, from the outage's effect."""
    indexes = {m.index for m in _connections_through(connections, outage, zone)}

    when = first_within(lambda: lb_validate.last_ended([c for c in connections["probe"].snapshot() if c.index in indexes]),
                        f"every connection through {zone} closed", max(0.5, limit - (timeline.now() - outage.start)) + 0.5)
    took = when[1] - outage.start if when else None
    timeline.mark("figure", f"time until every connection through {zone} was closed", value=took, unit="s")
    # The last end came after the probe's look before the one that saw it: that much earlier, maybe.
    judge.at_most(took, limit, f"time until every connection through zone {zone} was closed",
                  sampled=when[1] - when[0] if when else 0.0,
                  seen=[(c.index, c.how, c.ended) for c in connections["probe"].snapshot() if c.index in indexes])


@then(parsers.parse('within {limit:g} s the nodes of zone "{zone}" leave the load balancer of service "{name}"'))
def _(env: Environment, lb: dict[str, Any], outage: Outage, timeline: Timeline, limit: float, zone: str,
      name: str) -> None:
    """The churn before KEP-3458: the first read after the outage's effect that holds every node
    but the zone's."""
    rest = tuple(sorted(n.name for n in env.nodes if n.zone != zone))
    polled = _awaited(lb["probe"], timeline, outage.start, limit, lambda s: not s.error and s.nodes == rest,
                      f"the nodes of {zone} out of {name}'s load balancer")
    when = polled.first_held()
    timeline.mark("figure", f"time until the nodes of {zone} left the load balancer", value=when[1] if when else None,
                  unit="s")
    judge.within(polled, f"time until the nodes of {zone} left {name}'s load balancer", show=NodeSetSample.seen)


@then(parsers.parse("the controller makes {count:d} or more load balancer updates during the outage"))
def _(env: Environment, lb: dict[str, Any], outage: Outage, timeline: Timeline, count: int) -> None:
    """The cloud's request log: how many ELB update calls the cloud controller manager made with
    its key since the outage's effect."""
    since = time.time() - (timeline.now() - outage.start)
    calls = [r["action"] for r in _cloud(env).cloud_requests(since) if r["key"] == lb["key"] and r["action"] in ELB_UPDATES]
    timeline.mark("figure", "load balancer update calls during the outage", value=len(calls), unit="calls", calls=calls)
    judge.holds(len(calls) >= count, f"{count} or more load balancer update calls by the cloud controller manager "
                "during the outage", seen=calls)
