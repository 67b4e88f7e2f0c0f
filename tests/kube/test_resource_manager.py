"""gardener-resource-manager, real, on the embedded control plane: its high-availability-config
webhook decides the workloads of seed 001's cases, and the harness's reading of the conventions
(harness.reference.conventions) judges what it decided. Where the two differ, the difference is
a finding (FINDINGS, docs/guides/reference.md "Gardener's own webhook against the conventions"), stated here exactly so
that a change on either side shows.

Slow: the module starts one control plane and builds Gardener's program on first use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("cryptography")
pytest.importorskip("yaml")
from kube_support import standalone_plane, wait_for
from test_gardenlet import ETCD_FINDINGS
from test_gardenlet import differences as gardenlet_differences

from harness.kube import ControlPlane
from harness.kube import druid, gardenlet
from harness.kube import resource_manager as grm
from harness.kube.apiclient import ApiError
from harness.reference import conventions as conv
from harness.processes import terminate
from harness.kube import cluster
from harness.reference.deploy import apply_through_webhook
from harness.components import ETCDS
from harness.reference.render import ReferenceSpec, render
from harness.reference.seed_cases import CASES, Case, apply, deviations, placement
from harness.topology import KubeAccess

pytestmark = pytest.mark.kube


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with standalone_plane(tmp_path_factory.mktemp("kube-grm")) as plane:
        yield plane


@pytest.fixture(scope="module")
def manager(seed: ControlPlane) -> grm.ResourceManager:
    return grm.start(seed, seed.zones, seed.workdir / "gardener-resource-manager")


def test_the_webhooks_are_registered_as_gardener_makes_them(seed: ControlPlane, manager: grm.ResourceManager) -> None:
    api = seed.client()
    found = api.get_json("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gardener-resource-manager")
    names = [w["name"] for w in found["webhooks"]]
    assert "high-availability-config.resources.gardener.cloud" in names
    ha = next(w for w in found["webhooks"] if w["name"] == "high-availability-config.resources.gardener.cloud")
    assert ha["failurePolicy"] == "Fail"
    assert ha["namespaceSelector"]["matchLabels"] == {conv.LABEL_CONSIDER: "true"}
    assert ha["clientConfig"]["url"] == f"https://127.0.0.1:{manager.ports.webhooks}/webhooks/high-availability-config"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_webhook_against_the_conventions(seed: ControlPlane, manager: grm.ResourceManager, case: Case) -> None:
    mutated = apply(seed.client(), case)
    assert deviations(case, mutated) == FINDINGS[case.name]


def test_the_reference_in_the_gardener_form_is_placed_by_the_webhook_as_in_the_conventions_form(
        seed: ControlPlane, manager: grm.ResourceManager) -> None:
    """The reference control plane as Gardener's components hand it over (no scheduling of its own;
    kube-apiserver with its autoscaler; etcd-druid's StatefulSets untyped), decided by the webhook:
    each workload's replicas, spread constraints and zone pinning are the conventions form's but
    for GARDENER_FORM_FINDINGS."""
    spec = ReferenceSpec("zone", seed.zones, "gardener", namespace="shoot--harness--gardener-form")
    ours = {o["metadata"]["name"]: o for o in render(ReferenceSpec("zone", seed.zones, "conventions"))
            if o["kind"] in ("Deployment", "StatefulSet")}
    objects = render(spec)
    api = cluster.connect(KubeAccess(seed.kubeconfig))
    cluster.apply(api, objects[:1])
    apply_through_webhook(api, spec.namespace, objects[1:])
    decided = {name: placement(seed.client().get_json(
        f"/apis/apps/v1/namespaces/{spec.namespace}/{workload['kind'].lower()}s/{name}")) for name, workload in ours.items()}
    assert decided == {name: GARDENER_FORM_FINDINGS.get(name, placement(workload)) for name, workload in ours.items()}


_AROUND = {"PodDisruptionBudget": "apis/policy/v1", "Service": "api/v1"}
# Where etcd-druid v0.36.4's budgets and Services for gardenlet's Etcd resources differ from the
# renderer's gardener form (the budgets agree: the form takes druid's; the peer Services agree:
# port 2380, headless, publishing addresses not ready): the client Services also expose the peer
# port and backup-restore's 8080.
DRUID_FINDINGS = {
    "Service etcd-main-client": "port 2379, port 2380, port 8080",
    "Service etcd-events-client": "port 2379, port 2380, port 8080",
}


def _shape(kind: str, obj: dict[str, Any]) -> str:
    """A budget's or a Service's settings that decide availability, in one line."""
    spec = obj["spec"]
    if kind == "PodDisruptionBudget":
        return ", ".join(f"{k} {spec[k]}" for k in ("minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy") if k in spec)
    return ", ".join([*(f"port {p['port']}" for p in spec["ports"]),
                      *(["headless"] if spec.get("clusterIP") == "None" else []),
                      *(["publishNotReadyAddresses"] if spec.get("publishNotReadyAddresses") else [])])


def test_etcd_druid_makes_gardenlets_etcd_into_statefulsets_the_webhook_places_as_the_gardener_form(
        seed: ControlPlane, manager: grm.ResourceManager) -> None:
    """Gardener's whole path for etcd: gardenlet's deployer makes the Etcd resources of a shoot with
    failure tolerance zone, etcd-druid (real) makes their StatefulSets, the webhook decides their
    placement. It is the renderer's gardener form's placement of them (3 members, zone and host
    spread, pinned to the zones), and the pods carry the labels the renderer's do not
    (ETCD_FINDINGS of test_gardenlet.py, read from druid's own StatefulSet here)."""
    spec = ReferenceSpec("zone", seed.zones, "gardener", namespace="shoot--harness--druid")
    druid.start(seed, seed.workdir / "etcd-druid")
    api = cluster.connect(KubeAccess(seed.kubeconfig))
    cluster.apply(api, render(spec)[:1])  # the namespace, labelled as gardenlet labels a shoot's
    etcds = gardenlet.etcd_objects(spec.namespace, "zone")
    cluster.apply(api, [grm.as_new(o) for o in etcds])
    client = seed.client()

    def statefulsets() -> dict[str, dict[str, Any]] | None:
        found = {}
        for name in ETCDS:
            try:
                found[name] = client.get_json(f"/apis/apps/v1/namespaces/{spec.namespace}/statefulsets/{name}")
            except ApiError as e:
                if e.status != 404:
                    raise
                return None
        return found

    made = wait_for("etcd-druid to create the StatefulSets of etcd-main and etcd-events", statefulsets, 60.0)
    ours = {o["metadata"]["name"]: o for o in render(ReferenceSpec("zone", seed.zones, "conventions"))
            if o["kind"] == "StatefulSet"}
    assert {name: placement(sts) for name, sts in made.items()} == \
        {name: GARDENER_FORM_FINDINGS.get(name, placement(ours[name])) for name in ETCDS}
    # What else druid made for them beside the renderer's own: budgets and Services.
    druids = {f"{kind} {o['metadata']['name']}": _shape(kind, o) for kind, path in _AROUND.items()
              for o in client.get_json(f"/{path}/namespaces/{spec.namespace}/{kind.lower()}s")["items"]}
    assert druids == {**{f"{o['kind']} {o['metadata']['name']}": _shape(o["kind"], o) for o in render(spec)
                         if o["kind"] in _AROUND and o["metadata"]["name"].startswith(ETCDS)}, **DRUID_FINDINGS}
    rendered = {o["metadata"]["name"]: o for o in render(spec) if o["kind"] == "StatefulSet"}
    for name, sts in made.items():
        etcd = next(o for o in etcds if o["kind"] == "Etcd" and o["metadata"]["name"] == name)
        assert gardenlet_differences(etcd, rendered[name], sts["spec"]["template"]["metadata"]["labels"]) == \
            ETCD_FINDINGS["zone"][name]


def test_with_the_webhook_down_its_failure_policy_refuses_the_workloads_until_it_is_back(
        seed: ControlPlane, manager: grm.ResourceManager) -> None:
    """Gardener registers the high-availability-config webhook with failurePolicy Fail: while
    gardener-resource-manager is down, no Deployment of a namespace it considers can be created
    (nor changed); started again, it decides them as before. (Last in the file: it restarts it.)"""
    case = dataclasses.replace(next(c for c in CASES if c.name == "shoot-zone-server"), name="webhook-down")
    terminate(seed.records[grm.NAME], 5.0)
    with pytest.raises(ApiError) as refused:
        apply(seed.client(), case, timeout=2.0)
    assert refused.value.status == 500
    assert "failed calling webhook" in str(refused.value)
    assert "high-availability-config.resources.gardener.cloud" in str(refused.value)
    grm.start(seed, seed.zones, seed.workdir / "gardener-resource-manager-again")
    assert deviations(case, apply(seed.client(), case)) == FINDINGS["shoot-zone-server"]


# Where Gardener's webhook (gardener v1.145.0) and the harness's reading of seed 001 differ
# (docs/guides/reference.md "Gardener's own webhook against the conventions"):
# - every spread constraint of a Deployment gets matchLabelKeys [pod-template-hash], so that a
#   rolling update spreads the new ReplicaSet's pods by themselves (seed 001 is silent; this
#   replaced the pod-topology-spread-constraints webhook, which the seed's GRM no longer runs);
# - an etcd StatefulSet labelled a server gets a server's 2 replicas: the webhook knows no etcd.
#   Gardener gives etcd its 3 members through the Etcd resource (etcd-druid), not the webhook.
_HOST, _ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _hash_keys(*keys: str) -> list[str]:
    return [f"Deployment/component: spec.template.spec.topologySpreadConstraints[{k}].matchLabelKeys: "
            "expected nothing, found ['pod-template-hash']" for k in keys]


def _etcd_two(*keys: str) -> list[str]:
    return ["StatefulSet/component: spec.replicas: expected 3, found 2", *(
        f"StatefulSet/component: spec.template.spec.topologySpreadConstraints[{k}].minDomains: expected 3, found 2"
        for k in keys)]


FINDINGS: dict[str, list[str]] = {
    "seed-server-1z": _hash_keys(_HOST),
    "seed-controller-3z": _hash_keys(_HOST, _ZONE),
    "seed-host-spread": _hash_keys(_HOST, _ZONE),
    "shoot-none-server": _hash_keys(_HOST),
    "shoot-none-controller": [],  # 1 replica: nothing to spread
    "shoot-node-server": _hash_keys(_HOST),
    "shoot-node-controller": _hash_keys(_HOST),
    "shoot-zone-server": _hash_keys(_HOST, _ZONE),
    "shoot-zone-controller": _hash_keys(_HOST, _ZONE),
    "shoot-zone-etcd": _etcd_two(_HOST, _ZONE),
    "shoot-node-etcd": _etcd_two(_HOST),
    "shoot-zone-apiserver-hpa": _hash_keys(_HOST, _ZONE),
    "shoot-zone-replicas-override": _hash_keys(_HOST, _ZONE),
}


# The reference in the gardener form (tolerance zone, the seed's three zones), where the webhook
# placed it otherwise than the conventions form: its Deployments' spread constraints get
# matchLabelKeys (above). The etcd StatefulSets, untyped, get their spread and pinning from it and
# keep etcd-druid's 3 members: as the conventions form has them.
_KEYS = "matchLabelKeys pod-template-hash"
GARDENER_FORM_FINDINGS: dict[str, str] = {
    name: f"replicas {n}; host skew 1 DoNotSchedule min {n} {_KEYS}; zone skew 1 DoNotSchedule min {n} {_KEYS}; "
          "pinned zone-a,zone-b,zone-c"
    for name, n in (("kube-apiserver", 3), ("gardener-resource-manager", 2))}
