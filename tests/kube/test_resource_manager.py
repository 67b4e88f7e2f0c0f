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

import pytest

pytest.importorskip("cryptography")
pytest.importorskip("yaml")
from kube_support import standalone_plane

from harness.kube import ControlPlane
from harness.kube import resource_manager as grm
from harness.kube.apiclient import ApiError
from harness.reference import conventions as conv
from harness.processes import terminate
from harness.kube import cluster
from harness.reference.deploy import apply_through_webhook
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
