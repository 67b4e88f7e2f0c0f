"""Steps about the reference control plane: deploy it to the seed, judge where the scheduler put it."""

from __future__ import annotations

from collections import Counter
from typing import Callable

from pytest_bdd import given, parsers, then

from harness import judge
from harness.errors import ConfigError
from harness.kube import cluster, placement
from harness.providers.base import Environment
from harness.topology import Seed
from harness.components import component
from harness.reference.render import ReferenceSpec
from harness.steps.region import zone_names
from harness.steps.scenario import Shoot, last_fault, mark_first_held
from harness.timeline import Timeline
from harness.wait import poll_within
from harness.steps.holders import Shoots


def record_pods(shoot: Shoot, timeline: Timeline, name: str, pods: list[placement.PodPlacement]) -> None:
    """What a step saw of the control plane, as GEP-20's appendix shows it: the pods, then the
    seed's nodes with their zones (a "placement" event: the report's table, `harness run`'s)."""
    try:
        nodes = "\n\n" + placement.nodes_table(cluster.node_views(cluster.connect(shoot.seed.kube)))
    except Exception as e:  # the pods are what the step judged; the nodes only go with them
        nodes = f"\n\n(the seed's nodes could not be read: {e})"
    timeline.mark("placement", name, pods=placement.records(pods), table=placement.table(pods) + nodes)


def _pods(shoot: Shoot, name: str) -> list[placement.PodPlacement]:
    component(name)
    return placement.of(placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace), name)


@given(parsers.parse("a fresh seed with {nodes:d} nodes per zone"), target_fixture="env")
def _(region_factory: Callable[..., Environment], nodes: int) -> Environment:
    """A region of the scenario's own whose seed has that many nodes in each zone."""
    return region_factory(nodes_per_zone=nodes)


@given(parsers.parse("a fresh seed with {nodes:d} nodes per zone on {hosts:d} hosts per zone"), target_fixture="env")
def _(region_factory: Callable[..., Environment], nodes: int, hosts: int) -> Environment:
    """As a fresh seed with N nodes per zone, the nodes of a zone sharing its hosts round-robin (seed 004)."""
    return region_factory(nodes_per_zone=nodes, hosts_per_zone=hosts)


@given(parsers.parse("a fresh seed with {nodes:d} nodes in each of {zones:d} zones"), target_fixture="env")
def _(region_factory: Callable[..., Environment], nodes: int, zones: int) -> Environment:
    """As a fresh seed with N nodes per zone, over that many zones (zone-a, zone-b, ...)."""
    return region_factory(nodes_per_zone=nodes, zones=zone_names(zones))


@given(parsers.re(r"a fresh seed whose zones have (?P<counts>\d+(?:, \d+)* and \d+) nodes"), target_fixture="env")
def _(region_factory: Callable[..., Environment], counts: str) -> Environment:
    """Zones of unequal size, in zone order: "3, 2 and 1" is zone-a 3 nodes, zone-b 2, zone-c 1."""
    nodes = tuple(int(n) for n in counts.replace(" and ", ", ").split(", "))
    return region_factory(zone_nodes=nodes, zones=zone_names(len(nodes)))


@given(parsers.re(r'the reference control plane with failure tolerance "(?P<tolerance>\w+)" in the (?P<form>\w+) form'
                  r'(?:, its etcd clusters of (?P<members>\d+) members)?(?P<two>, on two zones against GEP-20\'s advice)?'),
       target_fixture="shoot")
def _(shoots: Shoots, seed: Seed, env: Environment, tolerance: str, form: str, members: str | None,
      two: str | None) -> Shoot:
    """The reference control plane handed to the seed's scheduler (its pods on kwok's nodes, not
    running for real): what the placement steps judge. Optionally five-member etcds, or two zones
    only, against GEP-20's advice."""
    spec = ReferenceSpec(tolerance, env.zones, form, namespace=f"shoot--harness--{tolerance}-{form}",
                         storage_class=seed.storage_class, etcd_members=int(members) if members else None,
                         two_zones=bool(two))
    return shoots.deploy(seed, spec, env=env)


@then(parsers.re(r"(?P<name>[\w-]+) has one (member|replica) in each of (?P<zones>\d+) zones"))
def _(shoot: Shoot, name: str, zones: str) -> None:
    """Exactly one pod of the component in each of that many zones."""
    pods = _pods(shoot, name)
    counts = placement.per_domain(pods, "zone")
    judge.equal(sorted(counts.values()), [1] * int(zones), f"{name} pods per zone ({dict(counts)})\n{placement.table(pods)}")


@then(parsers.re(r"(?P<name>[\w-]+) replicas span (?P<zones>\d+) zones with max skew (?P<skew>\d+)"))
def _(shoot: Shoot, name: str, zones: str, skew: str) -> None:
    """The component's pods in exactly that many zones, no zone more than the skew above another."""
    zones_, skew_ = int(zones), int(skew)
    counts = placement.per_domain(_pods(shoot, name), "zone")
    judge.equal(len(counts), zones_, f"zones holding {name} replicas ({dict(counts)})")
    judge.holds(placement.max_skew(counts, shoot.spec.zones) <= skew_, f"{name} skew across zones at most {skew_}",
                seen=dict(counts))


@then(parsers.re(r"no two (?P<name>[\w-]+) (members|replicas) share an? (?P<domain>[\w./-]+)"))
def _(shoot: Shoot, name: str, domain: str) -> None:
    """No two placed pods of the component on the same value of the topology key (a zone, a node,
    a host); a node without that label fails too."""
    pods = [p for p in _pods(shoot, name) if p.node]
    judge.holds(bool(pods), f"{name} has placed members to compare", seen=pods)
    missing = [p.name for p in pods if p.domain(domain) is None]
    judge.none_of(missing, f"{name} members on nodes without a {domain}")
    shared = {d: n for d, n in placement.per_domain(pods, domain).items() if n > 1}
    judge.none_of(shared, f"{domain}s with more than one {name} member")


@then(parsers.re(r"all (?P<name>[\w-]+) (members|replicas) run in one zone on (?P<nodes>\d+) different nodes?"))
def _(shoot: Shoot, name: str, nodes: str) -> None:
    """Every pod of the component in one zone, on exactly that many nodes."""
    pods = _pods(shoot, name)
    judge.equal(len(placement.per_domain(pods, "zone")), 1, f"zones holding {name} members")
    judge.equal(len(placement.per_domain(pods, "node")), int(nodes), f"nodes holding {name} members")


@then(parsers.parse('{count:d} {name} pod stays Pending because "{reason}"'))
@then(parsers.parse('{count:d} {name} pods stay Pending because "{reason}"'))
def _(shoot: Shoot, count: int, name: str, reason: str) -> None:
    """Exactly that many Pending pods of the component, each with the reason's text in its
    scheduling condition."""
    stuck = placement.pending(_pods(shoot, name))
    judge.equal(len(stuck), count, f"Pending {name} pods ({[p.name for p in stuck]})")
    for p in stuck:
        judge.holds(reason in (p.reason or ""), f"{p.name} is Pending because {reason!r}", seen=p.reason)


@then("every pod of the shoot control plane is Running")
def _(shoot: Shoot) -> None:
    """Running as the pod tables mean it: phase Running, Ready, on a Ready node."""
    pods = placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace)
    judge.none_of([f"{p.name}: {p.state} {p.reason or ''}".strip() for p in pods if not p.serving],
                  "pods not Running and ready")


@then(parsers.parse("the busiest {domain} holds {count:d} {name} members"))
def _(shoot: Shoot, domain: str, count: int, name: str) -> None:
    """The most pods of the component on any one zone, node or host is exactly that many."""
    counts = placement.per_domain(_pods(shoot, name), domain)
    judge.equal(max(counts.values(), default=0), count, f"most {name} members on one {domain} ({dict(counts)})")


@then(parsers.parse("the PodDisruptionBudget of {name} allows {count:d} disruption"))
@then(parsers.parse("the PodDisruptionBudget of {name} allows {count:d} disruptions"))
def _(shoot: Shoot, name: str, count: int) -> None:
    """The component's PodDisruptionBudget reports exactly that many disruptions allowed now."""
    component(name)
    budgets = placement.disruption_budgets(cluster.connect(shoot.seed.kube), shoot.spec.namespace)
    judge.equal(budgets.get(name, {}).get("disruptions_allowed"), count, f"disruptions allowed by {name}'s budget ({budgets.get(name)})")


def _table_rows(datatable: list[list[str]]) -> Counter[tuple[str, str, str]]:
    header, *rows = datatable
    if [h.strip().lower() for h in header] != ["component", "zone", "phase"]:
        raise ConfigError(f"the table needs the columns component | zone | phase, got {header}")
    for row in rows:
        component(row[0])
        if row[2] not in placement.STATES:
            raise ConfigError(f"phase {row[2]!r} in the table is none of {', '.join(placement.STATES)}")
    return Counter((c, z, ph) for c, z, ph in rows)


def _pods_by_row(shoot: Shoot, names: set[str]) -> tuple[Counter[tuple[str, str, str]], list[placement.PodPlacement]]:
    pods = placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace)
    return Counter((p.component or "-", p.zone or "-", p.state) for p in pods if p.component in names and not p.deleting), pods


@then("the pods of the shoot control plane are")
def _(shoot: Shoot, timeline: Timeline, datatable: list[list[str]]) -> None:
    """Pods per component, zone and state. "Running" means serving: phase Running, Ready, on a Ready
    node; a Running pod short of that (starting, failing its health check, or on a NotReady node
    whose kubelet stopped reporting) is "Running, not ready". Zone "-": not bound to a node."""
    expected = _table_rows(datatable)
    seen, pods = _pods_by_row(shoot, {c for c, _, _ in expected})
    record_pods(shoot, timeline, "the pods of the shoot control plane", pods)
    judge.equal(dict(seen), dict(expected), "pods by component, zone and phase\n" + placement.table(pods))


@then(parsers.parse("within {limit:g} s the pods of the shoot control plane are"))
def _(shoot: Shoot, timeline: Timeline, datatable: list[list[str]], limit: float) -> None:
    """As `the pods of the shoot control plane are` (the same states), the first time within the limit."""
    expected = _table_rows(datatable)
    names = {c for c, _, _ in expected}
    began = timeline.now()
    polled = poll_within(lambda: _pods_by_row(shoot, names), lambda got: got[0] == expected, "the expected pods", limit)
    last = polled.reads[-1].value
    if last is not None:
        record_pods(shoot, timeline, f"within {limit:g} s, the pods of the shoot control plane", last[1])
    mark_first_held(timeline, "the pods of the shoot control plane as expected, after the fault took effect", polled,
                    began, last_fault(timeline)[0])
    judge.within(polled, "pods by component, zone and phase as expected",
                 show=lambda got: f"{dict(got[0])}, expected {dict(expected)}\n{placement.table(got[1])}")


@then(parsers.parse('within {limit:g} s every node of host "{host}" is NotReady'))
def _(env: Environment, seed: Seed, limit: float, host: str) -> None:
    """Every node of the host NotReady, first seen within the bound."""
    names = {n.name for n in env.host(host)}  # type: ignore[attr-defined]

    def still_ready() -> list[str]:
        return [v.name for v in cluster.node_views(cluster.connect(seed.kube)) if v.name in names and v.ready]

    polled = poll_within(still_ready, lambda ready: not ready, f"the nodes of {host} to turn NotReady", limit)
    judge.within(polled, f"every node of host {host} NotReady", show=lambda ready: f"still Ready: {ready}")


@then(parsers.parse("within {limit:g} s {count:d} {name} members are not Ready"))
def _(shoot: Shoot, limit: float, count: int, name: str) -> None:
    """Exactly that many pods of the component not ready (or being deleted), first seen within the bound."""
    def unready() -> list[str]:
        pods = placement.observe(cluster.connect(shoot.seed.kube), shoot.spec.namespace)
        return [p.name for p in pods if p.component == name and (not p.ready or p.deleting)]

    polled = poll_within(unready, lambda found: len(found) == count, f"{count} {name} members not Ready", limit)
    judge.within(polled, f"{count} {name} members not Ready", show=lambda found: f"not Ready: {found}")


@then(parsers.parse('within {limit:g} s all {count:d} {name} replicas are Running outside zone "{zone}"'))
def _(shoot: Shoot, timeline: Timeline, limit: float, count: int, name: str, zone: str) -> None:
    """That many pods of the component Running and ready in zones other than that one, first seen
    within the bound."""
    def outside(found: list[placement.PodPlacement]) -> int:
        return sum(1 for p in found if p.serving and p.zone not in (None, zone))

    began = timeline.now()
    polled = poll_within(lambda: _pods(shoot, name), lambda found: outside(found) == count,
                         f"{count} {name} replicas outside {zone}", limit)
    mark_first_held(timeline, f"{count} {name} replicas Running outside {zone}, after the fault took effect", polled,
                    began, last_fault(timeline)[0])
    judge.within(polled, f"{count} {name} replicas Running and ready outside {zone}",
                 show=lambda found: f"{outside(found)} of them\n{placement.table(found)}")
