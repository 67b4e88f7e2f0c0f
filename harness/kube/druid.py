"""etcd-druid, real, beside a local seed: its own command, built from the gardener module
(kube/gomod/gardener pins etcd-druid v0.36.4, the release whose Etcd API gardener v1.145.0
requires), with its CRDs as gardenlet deploys them. Given the `Etcd` resources gardenlet makes
(harness.kube.gardenlet), it creates what a seed's etcd-druid creates: the StatefulSet, its
Services, PodDisruptionBudget, ConfigMap, member Leases, ServiceAccount and Role.

The process runs on the seed's host, not as a pod: its metrics and webhook ports are free ones
of the host's and it elects no leader (one instance). Every other setting is its default.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import gobuild
from harness.kube import cluster, gardenlet
from harness.kube.controlplane import free_ports
from harness.kube.kubeconfig import embedded
from harness.kube.resource_manager import MODULE_DIR, ResourceManagerError, Seed, as_new, wait_serving
from harness.topology import KubeAccess

NAME = "etcd-druid"
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, NAME, "github.com/gardener/etcd-druid", "etcd-druid", "etcd-druid", "etcd-druid",
    "install Go 1.26 or newer (make setup does)", "python -m harness.kube.druid", min_go=(1, 26),
    sources=("go.mod", "go.sum", "druidclient/go.mod"), package="github.com/gardener/etcd-druid/cmd")
READY_TIMEOUT_S = 60.0
# A new cluster is Ready about 2.5 minutes after its Etcd resources here: each member's
# etcd-backup-restore first waits out its checks for a running cluster to join.
CLUSTER_READY_TIMEOUT_S = 360.0
# The class gardenlet's Etcd resources name, as gardenlet's seed system component makes it
# (gardener pkg/component/seed/system: gardenletManagedPriorityClasses).
PRIORITY_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                  "metadata": {"name": "gardener-system-500"}, "value": 999998500,
                  "description": "PriorityClass for Shoot control plane components"}
CRD = "etcds.druid.gardener.cloud"
ETCDS_API = ("druid.gardener.cloud", "v1alpha1", "etcds")  # group, version, plural of the Etcd resources
# What gardenlet sets on an Etcd before deleting it (gardener pkg/utils/gardener: ConfirmDeletion).
DELETION_CONFIRMATION = "confirmation.gardener.cloud/deletion"
# druid's finalizer, on each Etcd and on every Secret an Etcd names (etcd-druid api/common:
# EtcdFinalizerName; its secret controller removes it once no Etcd names the Secret).
FINALIZER = "druid.gardener.cloud/etcd-druid"


class DruidError(gardenlet.GardenletError):
    """etcd-druid could not be set up on the seed."""


def _say(message: str) -> None:
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The program, built into the cache on first use."""
    return PROGRAM.path(cache_root, progress=_say)


@dataclass(frozen=True)
class Druid:
    """A running etcd-druid."""

    metrics_port: int
    workdir: Path


def start(seed: Seed, workdir: Path, *, program: Path | None = None, timeout: float = READY_TIMEOUT_S) -> Druid:
    """Its CRDs applied to `seed`, then the controller started beside it, once its metrics serve."""
    crds = gardenlet.druid_crds()
    api = cluster.connect(KubeAccess(seed.kubeconfig))
    cluster.apply(api, [as_new(crd) for crd in crds])
    metrics, webhooks = free_ports(2)
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = str(embedded(seed.kubeconfig, workdir / "kubeconfig"))
    seed.start_component(NAME, [str(program or binary()), "--enable-leader-election=false",
                                "--metrics-bind-address=127.0.0.1", f"--metrics-port={metrics}",
                                "--webhook-server-bind-address=127.0.0.1", f"--webhook-server-port={webhooks}"],
                         env={"KUBECONFIG": kubeconfig})
    try:
        wait_serving(seed, NAME, metrics, "/metrics", timeout)
    except ResourceManagerError as exc:
        raise DruidError(str(exc)) from None
    return Druid(metrics, workdir)


def with_gateway(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """gardenlet's objects with every `Etcd`'s gRPC gateway on (`spec.etcd.enableGRPCGateway`),
    the one field the harness changes: its etcd client speaks etcd's JSON gateway, which gardenlet
    leaves off (druid's default), so its probes could not reach the members otherwise."""
    out = copy.deepcopy(objects)
    for o in out:
        if o.get("kind") == "Etcd":
            o["spec"].setdefault("etcd", {})["enableGRPCGateway"] = True
    return out


def has_crds(kube: KubeAccess) -> bool:
    """Whether the seed knows etcd-druid's `Etcd` resources (start() registers them)."""
    from kubernetes import client as k8s

    with cluster.api_errors(f"reading the CustomResourceDefinition {CRD}"):
        try:
            k8s.ApiextensionsV1Api(cluster.connect(kube)).read_custom_resource_definition(CRD)
        except k8s.ApiException as e:
            if e.status == 404:
                return False
            raise
    return True


def release(api: Any, namespace: str) -> list[str]:
    """Every `Etcd` resource of `namespace` deleted without waiting for etcd-druid, and druid's
    finalizer taken off the Secrets they named: the reference's undeploy removes what druid made
    itself, and a namespace holding a finalizer nobody removes (druid stopped or crashed) would
    never go. Each Etcd is first annotated as gardenlet annotates it, since Gardener's
    crd-deletion-protection webhook refuses the deletion otherwise. The Etcds' names."""
    from kubernetes import client as k8s

    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    group, version, plural = ETCDS_API
    try:
        items = custom.list_namespaced_custom_object(group, version, namespace, plural)["items"]
    except k8s.ApiException as e:
        if e.status == 404:  # no such resource on this seed: nothing of druid's
            return []
        raise
    for item in items:
        name = item["metadata"]["name"]
        confirmed = {"metadata": {"finalizers": None, "annotations": {DELETION_CONFIRMATION: "true"}}}
        for call, args in ((custom.patch_namespaced_custom_object, (confirmed,)),
                           (custom.delete_namespaced_custom_object, ())):
            cluster.unless_gone(call, group, version, namespace, plural, name, *args)
    for secret in core.list_namespaced_secret(namespace).items:  # no Etcd names them any more
        held = secret.metadata.finalizers or []
        if FINALIZER in held:
            rest = [f for f in held if f != FINALIZER] or None
            cluster.unless_gone(core.patch_namespaced_secret, secret.metadata.name, namespace,
                         {"metadata": {"finalizers": rest}})
    return [i["metadata"]["name"] for i in items]


def etcd_status(api: Any, namespace: str, name: str) -> dict[str, Any]:
    """An `Etcd` resource's status as etcd-druid wrote it (empty before its first)."""
    from kubernetes import client as k8s

    group, version, plural = ETCDS_API
    with cluster.api_errors(f"reading the Etcd {namespace}/{name}"):
        return k8s.CustomObjectsApi(api).get_namespaced_custom_object(group, version, namespace, plural,
                                                                     name).get("status") or {}


def not_ready(api: Any, namespace: str, names: list[str]) -> list[str]:
    """Those of the `Etcd` resources whose status etcd-druid has not reported Ready yet (gardenlet
    waits for that before it deploys kube-apiserver), each with what druid says of it."""
    left = []
    for name in names:
        status = etcd_status(api, namespace, name)
        if not status.get("ready"):
            left.append(f"{name} ({status.get('readyReplicas') or 0} ready replicas)")
    return left


def etcds(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The `Etcd` resources among gardenlet's objects, by name."""
    return {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Etcd"}


def apiserver_etcd_tls(objects: list[dict[str, Any]]) -> dict[str, str]:
    """kube-apiserver's etcd volumes (etcd_tls.APISERVER_VOLUMES') -> the Secrets gardenlet's Etcd
    resources name for etcd's clients: the CA bundle the members' serving certificates are checked
    against and the client certificate (gardenlet mounts the same into its kube-apiserver)."""
    named = set()
    for name, etcd in etcds(objects).items():
        tls = (etcd["spec"].get("etcd") or {}).get("clientUrlTls") or {}
        try:
            named.add((tls["tlsCASecretRef"]["name"], tls["clientTLSSecretRef"]["name"]))
        except KeyError:
            raise DruidError(f"the Etcd {name} serves its clients without TLS (no spec.etcd.clientUrlTls with a CA "
                             "and a client Secret): the reference's kube-apiservers reach etcd over TLS") from None
    if len(named) != 1:
        raise DruidError(f"gardenlet's Etcd resources name different client Secrets ({sorted(named)}): "
                         "one kube-apiserver mounts one CA and one client certificate")
    ca, client = named.pop()
    return {"etcd-ca": ca, "etcd-client-tls": client}


def storage_capacity(objects: list[dict[str, Any]]) -> str:
    """The largest volume a member of gardenlet's Etcd resources claims (etcd-main's 25Gi)."""
    from kubernetes.utils import parse_quantity

    sizes = [e["spec"].get("storageCapacity") or "16Gi" for e in etcds(objects).values()]  # 16Gi: druid's default
    return max(sizes, key=parse_quantity)


if __name__ == "__main__":
    print(binary())
