"""Steps of GEP-20's machines during a zone outage: the seed's nodes as Machines of gardener's
machine-controller-manager (real, its machine controller driving the environment's EC2 API), and
their phases as the seed's API says them (GEP-20's tables: Unknown, Terminating,
CrashLoopBackOff, Pending with no node)."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_bdd import given, parsers, then, when

from harness import judge
from harness.errors import CapabilityMissing
from harness.kube import cluster
from harness.kube import machine_controller as mc
from harness.providers.base import Environment, MachineControllers
from harness.topology import Seed
from harness.steps.scenario import Outage
from harness.timeline import Timeline
from harness.wait import poll_within

PHASES = ("Pending", "Available", "Running", "Unknown", "Failed", "Terminating", "CrashLoopBackOff")


def _controllers(env: Environment) -> Any:
    if not isinstance(env, MachineControllers):
        raise CapabilityMissing(f"the {env.provider} environment runs no machine-controller-manager for its seed")
    return env


def _phase(phase: str) -> str:
    judge.holds(phase in PHASES, f"a machine phase out of {', '.join(PHASES)}", seen=phase)
    return phase


@given(parsers.parse("the seed's nodes are machines of machine-controller-manager, declared failed after {seconds:g} s "
                     "unhealthy"), target_fixture="machine_namespace")
def _(env: Environment, seed: Seed, cloud: Any, faults: Any, request: pytest.FixtureRequest, seconds: float) -> str:
    """Every node's instance its Machine's, a MachineSet per zone, every Machine Running. Stopped at
    teardown before the faults heal (the faults fixture came first): with its credentials back,
    MCM would replace the machines it declared failed and terminate their instances."""
    controllers = _controllers(env)
    request.addfinalizer(controllers.stop_machine_controllers)  # also after a start that failed halfway
    return str(controllers.start_machine_controllers(seconds, seconds))


def _of_nodes(env: Environment, zone: str) -> list[dict[str, Any]]:
    """The Machines of the zone's own nodes (named after them)."""
    names = {n.name for n in env.nodes_in(env.zone(zone))}  # type: ignore[attr-defined]
    return [m for m in _controllers(env).machines() if m["name"] in names]


@then(parsers.parse('within {limit:g} s the machines of zone "{zone}"\'s nodes are {phase}'))
def _(env: Environment, outage: Outage, timeline: Timeline, limit: float, zone: str, phase: str) -> None:
    """Every Machine of the zone's nodes in that phase (machine-controller-manager's own), first
    seen within the bound."""
    _phase(phase)

    def others() -> list[str]:
        found = _of_nodes(env, zone)
        return [f"{m['name']} {m['phase'] or 'new'}" for m in found if m["phase"] != phase] or ([] if found else ["none"])

    polled = poll_within(others, lambda left: not left, f"the machines of {zone}'s nodes {phase}", limit)
    timeline.mark("figure", f"machines of {zone}'s nodes {phase}, after the outage", unit="s",
                  value=round(timeline.now() - outage.start, 2))
    judge.within(polled, f"every machine of {zone}'s nodes {phase}", show=lambda left: f"not {phase}: {left}")


@when(parsers.re(r'zone "(?P<zone>[^"]+)" is asked for (?P<count>\d+) more machines?, as the cluster autoscaler does '
                 r'for Pending pods'))
def _(env: Environment, seed: Seed, machine_namespace: str, timeline: Timeline, zone: str, count: str) -> None:
    """Its MachineSet scaled up (GEP-20: kube-scheduler "must wait for Cluster-Autoscaler to scale
    the node group and then for the Machine-Controller-Manager to provision a new node")."""
    from kubernetes import client as k8s

    custom = k8s.CustomObjectsApi(cluster.connect(seed.kube))
    z = env.zone(zone)
    with cluster.api_errors(f"scaling the machine set of {z}"):
        current = custom.get_namespaced_custom_object(mc.GROUP, mc.VERSION, machine_namespace, "machinesets", z)
        replicas = int(current["spec"]["replicas"]) + int(count)
        custom.patch_namespaced_custom_object(mc.GROUP, mc.VERSION, machine_namespace, "machinesets", z,
                                              {"spec": {"replicas": replicas}})
    timeline.mark("client", f"the machine set of {z} scaled to {replicas}")


@then(parsers.parse('within {limit:g} s a new machine of zone "{zone}" is {phase}'))
def _(env: Environment, outage: Outage, timeline: Timeline, limit: float, zone: str, phase: str) -> None:
    """A Machine its zone's MachineSet made in place of one of the nodes' (its name is no node's)."""
    _phase(phase)
    z = env.zone(zone)
    nodes = {n.name for n in env.nodes}  # type: ignore[attr-defined]

    def new() -> list[dict[str, Any]]:
        return [m for m in _controllers(env).machines() if m["zone"] == z and m["name"] not in nodes]

    polled = poll_within(new, lambda made: any(m["phase"] == phase for m in made), f"a new machine of {zone} {phase}",
                         limit)
    timeline.mark("figure", f"a new machine of {zone} {phase}, after the outage", unit="s",
                  value=round(timeline.now() - outage.start, 2))
    judge.within(polled, f"a new machine of {zone} {phase}",
                 show=lambda made: str([f"{m['name']} {m['phase'] or 'new'}" for m in made]))


@then(parsers.parse('the machines of every zone but "{zone}" are Running'))
def _(env: Environment, zone: str) -> None:
    """Every Machine outside the zone in phase Running."""
    z = env.zone(zone)
    others = [m for m in _controllers(env).machines() if m["zone"] != z]
    judge.holds(bool(others), f"machines outside {z}", seen=others)
    judge.none_of([f"{m['name']} {m['phase'] or 'new'}" for m in others if m["phase"] != "Running"],
                  f"machines outside {z} not Running")
