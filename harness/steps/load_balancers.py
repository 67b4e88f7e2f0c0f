"""Steps of KEP-3458 (seed 002): a Service's cloud load balancer kept by the real cloud controller
manager, its node set observed through the cloud API and the controller's calls through the cloud's
request log, judged through a zone outage and a node's exclusion label."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.errors import CapabilityMissing
from harness.kube import cluster
from harness.probes.load_balancer import ELB_UPDATES, NodeSetProbe, NodeSetSample
from harness.providers.base import CloudLoadBalancers, CloudRequestLog, Environment, Seed
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.wait import first_within, wait_for

NAMESPACE = "kep3458"
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"


SETTLED_S = 5.0


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


@given("the cloud controller manager keeps the load balancers of the seed's services", target_fixture="cloud_controller")
def _(env: Environment, seed: Seed, cloud: Any) -> dict[str, Any]:
    """k8s.io/cloud-provider-aws's controller against the environment's cloud (started on first use)."""
    return dict(_cloud(env).start_cloud_controller())


@given(parsers.parse('a service "{name}" of type LoadBalancer'), target_fixture="lb")
def _(env: Environment, seed: Seed, cloud_controller: dict[str, Any], probes: Any, timeline: Timeline,
      request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    """Made in its own namespace, given its load balancer with every node, then its node set sampled
    until the scenario ends. The namespace goes at teardown, and the controller deletes the ELB."""
    from kubernetes import client as k8s

    from harness.reference.deploy import await_namespace_gone

    api = cluster.connect(seed.kube)
    core = k8s.CoreV1Api(api)
    await_namespace_gone(api, NAMESPACE, env.config.timeouts.deploy)  # an earlier scenario's, still going
    with cluster.api_errors(f"creating the Service {NAMESPACE}/{name}"):
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        request.addfinalizer(lambda: core.delete_namespace(NAMESPACE))
        core.create_namespaced_service(NAMESPACE, {"metadata": {"name": name}, "spec": {
            "type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]}})
    every = sorted(n.name for n in env.nodes)
    wait_for(lambda: _cloud(env).load_balancer_nodes(NAMESPACE, name), lambda nodes: nodes == every,
             f"the load balancer of {NAMESPACE}/{name} holding every node", env.config.timeouts.deploy)
    # Settled: no call of the controller's changing a load balancer for a while (a controller
    # started a moment ago syncs the nodes it has just seen change once more).
    wait_for(lambda: _quiet_for(env, cloud_controller["key"]), lambda quiet: quiet >= SETTLED_S,
             f"the cloud controller to make no load balancer update for {SETTLED_S:g} s", env.config.timeouts.deploy)
    probe = probes.add(NodeSetProbe(lambda: _cloud(env).load_balancer_nodes(NAMESPACE, name), timeline, name).start())
    return {"service": name, "probe": probe, "key": cloud_controller["key"]}


@when(parsers.parse('node "{node}" is labelled for exclusion from external load balancers'), target_fixture="exclusion")
def _(seed: Seed, timeline: Timeline, request: pytest.FixtureRequest, node: str) -> dict[str, Any]:
    """node.kubernetes.io/exclude-from-external-load-balancers, taken off again at teardown."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(cluster.connect(seed.kube))
    with cluster.api_errors(f"labelling node {node}"):
        core.patch_node(node, {"metadata": {"labels": {EXCLUDE_LABEL: "true"}}})
    request.addfinalizer(lambda: core.patch_node(node, {"metadata": {"labels": {EXCLUDE_LABEL: None}}}))
    at = timeline.now()
    timeline.mark("label", f"{node} excluded from external load balancers")
    return {"node": node, "at": at}


def _window(samples: list[NodeSetSample], start: float, end: float) -> list[NodeSetSample]:
    return [s for s in samples if start <= s.t <= end]


@then(parsers.parse('the load balancer of service "{name}" keeps all {count:d} nodes during the outage'))
def _(lb: dict[str, Any], outage: Outage, timeline: Timeline, name: str, count: int) -> None:
    """Every read of its node set from the outage's effect until now: all `count` nodes, the same
    set throughout; a read that failed is a violation, not a gap to skip."""
    end = timeline.now()
    seen = _window(lb["probe"].snapshot(), outage.start, end)
    judge.holds(bool(seen) and seen[-1].t >= end - 2 * lb["probe"].interval,
                f"reads of the load balancer's nodes up to the end of the window ({end:.1f} s)",
                seen=[(round(s.t, 1), s.nodes) for s in seen[-3:]])
    first = seen[0].nodes
    wrong = [f"{s.t:.1f} s: {s.error or (list(s.nodes) if s.nodes is not None else 'no load balancer')}"
             for s in seen if s.error or s.nodes is None or len(s.nodes) != count or s.nodes != first]
    timeline.mark("figure", f"node set changes of {name}'s load balancer during the outage", value=len(wrong),
                  unit="reads")
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
def _(lb: dict[str, Any], exclusion: dict[str, Any], timeline: Timeline, limit: float, node: str, name: str) -> None:
    def left() -> float | None:
        gone = [s for s in lb["probe"].snapshot() if s.t >= exclusion["at"] and s.nodes is not None
                and not s.error and node not in s.nodes]
        return gone[0].t - exclusion["at"] if gone else None

    took = first_within(left, f"{node} out of {name}'s load balancer", limit + 0.5)
    timeline.mark("figure", f"time from the exclusion label to {node} leaving the load balancer", value=took, unit="s")
    judge.at_most(took, limit, f"time until {node} left {name}'s load balancer",
                  seen=[s.nodes for s in lb["probe"].snapshot()[-1:]])
