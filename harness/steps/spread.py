"""Steps for GEP-20's topology spread constraint findings (its appendix), on the real scheduler: a
Deployment with the GEP's two constraints is applied, scaled one replica at a time or rolled out
again and again, and judged by where its pods are."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from pytest_bdd import parsers, then, when

from harness import judge
from harness.config import Config
from harness.errors import ConfigError
from harness.kube import cluster, placement
from harness.topology import Seed
from harness.reference import deploy, spread
from harness.reference.spread import SpreadSpec
from harness.timeline import Timeline
from harness.wait import wait_for


@dataclass
class Spread:
    seed: Seed
    spec: SpreadSpec
    settle_s: float
    rollouts: list[Counter[str]] = field(default_factory=list)  # the pods per zone after each rollout

    def api(self) -> Any:
        return cluster.connect(self.seed.kube)

    def settle(self, replicas: int, what: str) -> None:
        wait_for(lambda: spread.unsettled(self.api(), self.spec, replicas), lambda left: left is None,
                 f"{self.spec.name} {what}: every pod Running or held Pending by the scheduler", self.settle_s,
                 interval=0.2)

    def placed(self) -> list[placement.PodPlacement]:
        return spread.pods(self.api(), self.spec)


def _named(s: Spread, name: str) -> Spread:
    if s.spec.name != name:
        raise ConfigError(f"the scenario's Deployment is {s.spec.name!r}; the step names {name!r}")
    return s


@when(parsers.re(r'a Deployment "(?P<name>[\w-]+)" of (?P<replicas>\d+) replicas? is spread by GEP-20\'s zone and '
                 r'hostname constraints(?: with zone max skew (?P<skew>\d+))?(?P<scoped>, each scoped to its revision)?'),
      target_fixture="spread_workload")
def _(request: pytest.FixtureRequest, seed: Seed, harness_config: Config, timeline: Timeline, name: str,
      replicas: str, skew: str | None, scoped: str | None) -> Spread:
    """Applied to a namespace of its own, deleted at the scenario's end; the step ends once every
    pod runs or the scheduler holds it Pending."""
    spec = SpreadSpec(name, f"spread-{name}", int(replicas), zone_skew=int(skew or 1), per_revision=bool(scoped))
    s = Spread(seed, spec, harness_config.timeouts.deploy)
    api = s.api()
    deploy.await_namespace_gone(api, spec.namespace, harness_config.timeouts.deploy)
    request.addfinalizer(lambda: deploy.undeploy(seed, spec.namespace, harness_config.timeouts.deploy))
    deploy.apply(api, spread.manifests(spec))
    with timeline.span("spread", f"{name} applied", replicas=spec.replicas):
        s.settle(spec.replicas, f"at {spec.replicas} replicas")
    return s


@when(parsers.parse('"{name}" is scaled up one replica at a time to {replicas:d}'))
def _(spread_workload: Spread, timeline: Timeline, name: str, replicas: int) -> None:
    """As an autoscaler adds them: each replica placed (or held Pending) before the next is asked for."""
    s = _named(spread_workload, name)
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(s.api())
    for count in range(s.spec.replicas + 1, replicas + 1):
        with cluster.api_errors(f"scaling {s.spec.namespace}/{name} to {count}"):
            apps.patch_namespaced_deployment_scale(name, s.spec.namespace, {"spec": {"replicas": count}})
        with timeline.span("spread", f"{name} scaled to {count}"):
            s.settle(count, f"at {count} replicas")


@when(parsers.re(r'"(?P<name>[\w-]+)" is rolled out again (?P<times>\d+) times?'))
def _(spread_workload: Spread, timeline: Timeline, name: str, times: str) -> None:
    """`kubectl rollout restart`, each rollout complete and its old pods gone before the next;
    where the new pods are is recorded after each."""
    s = _named(spread_workload, name)
    for i in range(1, int(times) + 1):
        cluster.restart_deployment(s.api(), s.spec.namespace, name)
        with timeline.span("spread", f"{name} rollout {i}") as event:
            wait_for(lambda: cluster.rollout_left(s.api(), s.spec.namespace, name), lambda left: left is None,
                     f"rollout {i} of {name}", s.settle_s, interval=0.2)
            s.settle(s.spec.replicas, f"after rollout {i}")
            zones = spread.per_zone(s.placed())
            event.data["zones"] = dict(zones)
        s.rollouts.append(zones)


@then(parsers.re(r'(?P<count>\d+) replicas? of "(?P<name>[\w-]+)" (runs?|are Running)'))
def _(spread_workload: Spread, count: str, name: str) -> None:
    """Exactly that many replicas of the workload Running, ready and on a Ready node."""
    pods = _named(spread_workload, name).placed()
    running = [p for p in pods if p.serving]
    judge.equal(len(running), int(count), f"Running replicas of {name}\n{placement.table(pods)}")


@then(parsers.re(r'(?P<count>\d+) replicas? of "(?P<name>[\w-]+)" stays? Pending because "(?P<reason>[^"]+)"'))
def _(spread_workload: Spread, count: str, name: str, reason: str) -> None:
    """Exactly that many Pending replicas of the workload, each with the reason's text in its
    scheduling condition."""
    stuck = placement.pending(_named(spread_workload, name).placed())
    judge.equal(len(stuck), int(count), f"Pending replicas of {name} ({[p.name for p in stuck]})")
    for p in stuck:
        judge.holds(reason in (p.reason or ""), f"{p.name} is Pending because {reason!r}", seen=p.reason)


@then(parsers.parse('"{name}" runs in one zone on {nodes:d} different nodes'))
def _(spread_workload: Spread, name: str, nodes: int) -> None:
    """Every placed replica of the workload in one zone, on exactly that many nodes."""
    pods = [p for p in _named(spread_workload, name).placed() if p.node]
    judge.equal(len(placement.per_domain(pods, "zone")), 1, f"zones holding {name} replicas\n{placement.table(pods)}")
    judge.equal(len(placement.per_domain(pods, "node")), nodes, f"nodes holding {name} replicas")


@then(parsers.parse('"{name}" is within max skew {zone:d} over zones and {node:d} over nodes'))
def _(spread_workload: Spread, name: str, zone: int, node: int) -> None:
    """The workload's placed replicas: no zone more than the zone skew above another, no node more
    than the node skew."""
    s = _named(spread_workload, name)
    pods = [p for p in s.placed() if p.node]
    seen = spread.skews(pods, spread.domains(s.api()))
    judge.holds(seen["zone"] <= zone and seen["node"] <= node,
                f"{name}'s skew at most {zone} over zones and {node} over nodes\n{placement.table(pods)}", seen=seen)


def _rollout_skews(s: Spread) -> list[int]:
    zones = spread.domains(s.api())["zone"]
    judge.holds(bool(s.rollouts), f"{s.spec.name} was rolled out")
    return [placement.max_skew(counts, zones) for counts in s.rollouts]


@then(parsers.parse('a rollout left "{name}" skewed by more than {skew:d} over zones'))
def _(spread_workload: Spread, name: str, skew: int) -> None:
    """Kubernetes issue 98215: the old revision's pods count while the new one is placed."""
    s = _named(spread_workload, name)
    seen = _rollout_skews(s)
    judge.holds(max(seen) > skew, f"a rollout of {name} left its zones skewed by more than {skew}",
                seen=[dict(c) for c in s.rollouts])


@then(parsers.parse('every rollout left "{name}" within max skew {skew:d} over zones'))
def _(spread_workload: Spread, name: str, skew: int) -> None:
    """After each rollout, the workload's zones within the skew."""
    s = _named(spread_workload, name)
    seen = _rollout_skews(s)
    judge.holds(max(seen) <= skew, f"every rollout of {name} left its zones within max skew {skew}",
                seen=[dict(c) for c in s.rollouts])
