"""gardenlet's etcd and kube-apiserver deployers, Gardener's own code (`gardener shoot-etcd`,
`gardener shoot-kube-apiserver`, harness.kube.gardenlet): the `Etcd` resources of a shoot's
control plane, against the etcd StatefulSets the renderer's gardener form hands the seed in place
of etcd-druid's, and kube-apiserver's Deployment, budget and autoscaler against the renderer's.
Where the two differ, the difference is a finding (ETCD_FINDINGS, KUBE_APISERVER_FINDINGS,
docs/guides/reference.md "The control plane's objects as gardenlet makes them"), stated exactly
so that a change on either side shows.

Slow on a fresh machine only: it builds Gardener's program on first use.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.kube import gardenlet
from harness.kube.controlplane import AGENT_LABEL
from harness.reference.render import TOLERANCES, ReferenceSpec, render

pytestmark = pytest.mark.kube

NAMESPACE = "shoot--harness--ref"
ZONES = ("zone-a", "zone-b", "zone-c")
AGENT_PREFIX = AGENT_LABEL.split("/")[0] + "/"  # the local seed's own: which node agent program runs the pod


def _druid_pod_labels(etcd: dict[str, Any]) -> dict[str, str]:
    """The labels etcd-druid (v0.36.4, the one built against gardener v1.145.0's Etcd API) gives
    the pods of an Etcd: its spec.labels and its own (internal/component/statefulset, getStatefulSetLabels)."""
    name = etcd["metadata"]["name"]
    return {**etcd["spec"]["labels"], "app.kubernetes.io/component": "etcd-statefulset",
            "app.kubernetes.io/managed-by": "etcd-druid", "app.kubernetes.io/name": name, "app.kubernetes.io/part-of": name}


def differences(etcd: dict[str, Any], statefulset: dict[str, Any], druid: dict[str, str] | None = None) -> dict[str, Any]:
    """What Gardener's Etcd (and etcd-druid's reading of it: the labels of its pods, `druid` when read
    from the StatefulSet a running etcd-druid made) gives a member's pod and the renderer's
    StatefulSet does not, field by field: {field: (Gardener's, the renderer's)}; labels as the keys
    only one side has."""
    spec, pod = etcd["spec"], statefulset["spec"]["template"]
    druid, ours = druid or _druid_pod_labels(etcd), pod["metadata"]["labels"]
    found: dict[str, Any] = {}
    if spec["replicas"] != statefulset["spec"]["replicas"]:
        found["replicas"] = (spec["replicas"], statefulset["spec"]["replicas"])
    only_gardener = sorted(k for k in druid if ours.get(k) != druid[k])
    only_ours = sorted(k for k in ours if k not in druid and not k.startswith(AGENT_PREFIX))
    if only_gardener or only_ours:
        found["pod labels"] = (only_gardener, only_ours)
    if spec.get("priorityClassName") != pod["spec"].get("priorityClassName"):
        found["priorityClassName"] = (spec.get("priorityClassName"), pod["spec"].get("priorityClassName"))
    claim = statefulset["spec"]["volumeClaimTemplates"][0]
    if spec["volumeClaimTemplate"] != claim["metadata"]["name"]:
        found["volumeClaimTemplate"] = (spec["volumeClaimTemplate"], claim["metadata"]["name"])
    return found


_NETWORKING = ["networking.gardener.cloud/to-dns", "networking.gardener.cloud/to-private-networks",
               "networking.gardener.cloud/to-public-networks", "networking.gardener.cloud/to-runtime-apiserver"]
_DRUID = ["app.kubernetes.io/component", "app.kubernetes.io/managed-by", "app.kubernetes.io/name", "app.kubernetes.io/part-of"]


def _labels(role: str, ha: bool) -> tuple[list[str], list[str]]:
    peer = [f"networking.resources.gardener.cloud/to-etcd-{role}-client-tcp-{port}" for port in (2379, 2380, 8080)] if ha else []
    return sorted(_DRUID + _NETWORKING + peer), ["instance", "name"]


# What Gardener's code gives the members that the renderer does not, per failure tolerance. The
# members' count agrees in every case. The labels: the renderer's pods carry etcd-druid's older
# labels (`instance`, `name`: GEP-20's rules and the harness's probes select on `instance`), not
# v0.36's `app.kubernetes.io/*`, and none of the network policy labels (the local seed runs no
# network policy controller of Gardener's; the reference has a peer policy of its own). The
# priority class: the local seed has no gardener-system-500. etcd-main's volume claim template:
# gardenlet names it `main-etcd` for the important class (its volumes predate etcd-druid).
ETCD_FINDINGS: dict[str, dict[str, dict[str, Any]]] = {
    tolerance: {
        "etcd-main": {"pod labels": _labels("main", tolerance != "none"), "priorityClassName": ("gardener-system-500", None),
                      "volumeClaimTemplate": ("main-etcd", "etcd-main")},
        "etcd-events": {"pod labels": _labels("events", tolerance != "none"), "priorityClassName": ("gardener-system-500", None)},
    }
    for tolerance in TOLERANCES
}


@pytest.fixture(scope="module", params=TOLERANCES)
def shoot(request: pytest.FixtureRequest) -> tuple[str, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    tolerance = request.param
    rendered = render(ReferenceSpec(tolerance=tolerance, seed_zones=ZONES, form="gardener", namespace=NAMESPACE, real=True))
    return tolerance, gardenlet.etcd_resources(NAMESPACE, tolerance), {
        o["metadata"]["name"]: o for o in rendered if o["kind"] == "StatefulSet"}


def test_gardenlet_makes_etcd_main_and_etcd_events_with_peer_tls_only_for_high_availability(
        shoot: tuple[str, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]) -> None:
    tolerance, etcds, _ = shoot
    assert sorted(etcds) == ["etcd-events", "etcd-main"]
    for name, etcd in etcds.items():
        assert etcd["metadata"]["namespace"] == NAMESPACE
        assert ("peerUrlTls" in etcd["spec"]["etcd"]) == (tolerance != "none"), name
        assert etcd["spec"]["replicas"] == (1 if tolerance == "none" else 3), name


def test_the_renderers_etcd_against_gardenlets(shoot: tuple[str, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]) -> None:
    tolerance, etcds, statefulsets = shoot
    assert {name: differences(etcds[name], statefulsets[name]) for name in etcds} == ETCD_FINDINGS[tolerance]


def test_a_failure_tolerance_gardener_does_not_know_is_refused_saying_what_it_takes() -> None:
    with pytest.raises(gardenlet.GardenletError, match=r"--failure-tolerance takes zone, node or none, not \"region\""):
        gardenlet.etcd_resources(NAMESPACE, "region")


def apiserver_differences(gardeners: list[dict[str, Any]], ours: list[dict[str, Any]]) -> dict[str, Any]:
    """What gardenlet's kube-apiserver objects and the renderer's say differently, field by field:
    {field: (Gardener's, the renderer's)}; pod labels as the keys only one side has."""
    g = {o["kind"]: o for o in gardeners}
    r = {o["kind"]: o for o in ours if o["metadata"]["name"] == "kube-apiserver"}
    pairs = {
        "replicas": (g["Deployment"]["spec"]["replicas"], r["Deployment"]["spec"]["replicas"]),
        "autoscaler": tuple((o["HorizontalPodAutoscaler"]["spec"]["minReplicas"], o["HorizontalPodAutoscaler"]["spec"]["maxReplicas"])
                            for o in (g, r)),
        "budget": (g["PodDisruptionBudget"]["spec"], r["PodDisruptionBudget"]["spec"]),
        "strategy": (g["Deployment"]["spec"].get("strategy"), r["Deployment"]["spec"].get("strategy")),
        "priorityClassName": tuple(o["Deployment"]["spec"]["template"]["spec"].get("priorityClassName") for o in (g, r)),
    }
    found: dict[str, Any] = {k: v for k, v in pairs.items() if v[0] != v[1]}
    theirs, mine = (o["Deployment"]["spec"]["template"]["metadata"]["labels"] for o in (g, r))
    only_gardener = sorted(k for k in theirs if mine.get(k) != theirs[k])
    only_ours = sorted(k for k in mine if k not in theirs and not k.startswith(AGENT_PREFIX))
    if only_gardener or only_ours:
        found["pod labels"] = (only_gardener, only_ours)
    return found


_APISERVER_LABELS = (["networking.gardener.cloud/to-dns", "networking.gardener.cloud/to-private-networks",
                      "networking.gardener.cloud/to-public-networks", "networking.resources.gardener.cloud/to-all-webhook-targets",
                      "networking.resources.gardener.cloud/to-etcd-events-client-tcp-2379",
                      "networking.resources.gardener.cloud/to-etcd-main-client-tcp-2379",
                      "networking.resources.gardener.cloud/to-extensions-all-webhook-targets"], [])

# What gardenlet gives kube-apiserver that the renderer's gardener form does not (the counts, the
# autoscaler, the rolling update and the budget agree: the renderer takes them from gardenlet): the
# priority class and the network policy labels, as for etcd.
KUBE_APISERVER_FINDINGS: dict[str, dict[str, Any]] = {
    tolerance: {"priorityClassName": ("gardener-system-500", None), "pod labels": _APISERVER_LABELS}
    for tolerance in TOLERANCES
}


@pytest.mark.parametrize("tolerance", TOLERANCES)
def test_the_renderers_kube_apiserver_against_gardenlets(tolerance: str) -> None:
    ours = render(ReferenceSpec(tolerance=tolerance, seed_zones=ZONES, form="gardener", namespace=NAMESPACE, real=True))
    assert apiserver_differences(gardenlet.kube_apiserver_objects(NAMESPACE, tolerance), ours) == KUBE_APISERVER_FINDINGS[tolerance]
