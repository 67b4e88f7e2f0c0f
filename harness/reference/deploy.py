"""Apply the rendered reference control plane to a seed, wait for the scheduler, remove it again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.backup.store import StoreSpec
from harness.errors import CapabilityMissing, ConfigError, EnvironmentStateError
from harness.kube import cluster, etcd_tls, placement
from harness.kube.cluster import KubeApiError, apply
from harness.kube.agent import BACKUP_SECRET, PKI_SECRET, RUNNING_ANNOTATION
from harness.kube.placement import PodPlacement
from harness.topology import Seed
from harness.components import COMPONENTS, ETCDS
from harness.reference.render import (DECIDED_BY_WEBHOOK, ETCD_VOLUME_SIZE, ReferenceSpec, backup_prefix, render,
                                      replicas)
from harness.wait import first_within, wait_for

POOL_LABEL = "ha-harness/volume-pool"
# Gardener's webhook reads the namespace from its cache and refuses (HTTP 500) until it is there.
WEBHOOK_NAMESPACE_WAIT_S = 30.0
TERMINAL = ("Failed", "Succeeded")  # a pod's phases after which it never runs again


def volume_pool(spec: ReferenceSpec, size: str = ETCD_VOLUME_SIZE) -> list[dict[str, Any]]:
    """Zonal PersistentVolumes for a seed without a provisioner: in every zone of the control
    plane, one for every etcd member (of both clusters), so the scheduler (not the harness)
    picks the zone and the volume it binds keeps the member there. `size`: what the largest
    member's claim asks for."""
    volumes = []
    per_zone = sum(replicas(spec, COMPONENTS[name]) for name in ETCDS)
    for zone in spec.zones:
        for i in range(per_zone):
            pv = f"{spec.namespace}-{zone}-{i}"
            volumes.append({
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv, "labels": {POOL_LABEL: spec.namespace}},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": spec.storage_class,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "hostPath": {"path": f"/var/lib/ha-harness/volumes/{pv}"},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": cluster.ZONE_LABEL, "operator": "In", "values": [zone]}]}]}},
                },
            })
    return volumes


def held_by_scheduler(p: PodPlacement) -> bool:
    """Pending for a reason the scheduler keeps: not one it retries in a moment (the claim a
    StatefulSet creates just before the pod, not seen yet: `persistentvolumeclaim "x" not found`)."""
    return p.node is None and p.reason is not None and not re.search(r'persistentvolumeclaim "[^"]+" not found', p.reason)


def settled(spec: ReferenceSpec, pods: list[PodPlacement]) -> str | None:
    """None once every replica exists and is Running or held Pending by the scheduler; else what is not.
    A pod that ended (Failed, Succeeded) is no replica, as its ReplicaSet counts them: one a node's
    failure left Failed stays beside its replacement until the pod garbage collector's threshold."""
    waiting = []
    for c in COMPONENTS.values():
        every = placement.of(pods, c.name)
        mine = [p for p in every if p.phase not in TERMINAL]
        if len(mine) != replicas(spec, c):
            waiting.append(f"{c.name}: {len(mine)} of {replicas(spec, c)} pods")
            waiting += [f"{p.name} {p.phase}" for p in every if p.phase in TERMINAL]  # which ended, not replaced yet
        waiting += [f"{p.name} {p.phase}{', not ready' if p.phase == 'Running' else ''}" for p in mine
                    if not (p.phase == "Running" and p.ready) and not held_by_scheduler(p)]
    return "; ".join(waiting) or None


def apply_through_webhook(api: Any, namespace: str, objects: list[dict[str, Any]]) -> None:
    """Apply (idempotent) again while the webhook refuses for a namespace not in its cache yet."""
    def refused() -> str | None:
        try:
            apply(api, objects)
        except KubeApiError as e:
            if e.status != 500:
                raise
            return str(e)
        return None

    wait_for(refused, lambda why: why is None, f"Gardener's webhook to admit the workloads of {namespace}",
             WEBHOOK_NAMESPACE_WAIT_S, interval=0.5)


def shoot_pki(spec: ReferenceSpec, seed: Seed, address: str | None) -> list[dict[str, Any]]:
    """The shoot's own CA and keys, as a Secret the node agents hand to its kube-apiservers, and
    etcd's server, peer and client certificates signed by the same CA (harness.kube.etcd_tls).
    The API's serving certificate names the load balancer's `address`, where clients reach it."""
    import base64
    import tempfile
    from dataclasses import fields

    from harness.kube.pki import EtcdNames, generate_pki

    names = EtcdNames(_member_addresses(seed, spec), tuple(n for c in ETCDS for n in etcd_tls.dns_names(c, spec.namespace)))
    with tempfile.TemporaryDirectory() as tmp:
        pki = generate_pki(Path(tmp), extra_ips=(address,) if address else (), etcd=names)
        files = [getattr(pki, f.name) for f in fields(pki)]
        data = {p.name: base64.b64encode(p.read_bytes()).decode() for p in files}
        return [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                 "metadata": {"name": PKI_SECRET, "namespace": spec.namespace}, "data": data},
                *etcd_tls.secrets(spec.namespace, Path(tmp))]


def _member_addresses(seed: Seed, spec: ReferenceSpec) -> tuple[str, ...]:
    """Every address the local seed's node agents may give an etcd member: <zone subnet>.<its
    StatefulSet's IP base + ordinal> in every zone with nodes (harness.kube.agent), so that the
    certificates hold wherever the scheduler puts a member; and the nodes' own addresses, which
    a member's peer connections leave from (etcd checks a peer's address against its certificate)."""
    from kubernetes import client as k8s

    with cluster.api_errors("listing nodes"):
        nodes = k8s.CoreV1Api(cluster.connect(seed.kube)).list_node().items
    own = sorted({a.address for n in nodes if (n.metadata.labels or {}).get(cluster.ZONE_LABEL)
                  for a in n.status.addresses or [] if a.type == "InternalIP"})
    subnets = sorted({a.rsplit(".", 1)[0] for a in own})
    return (*own, *(f"{subnet}.{c.ip_base + k}" for c in COMPONENTS.values() if c.name in ETCDS and c.ip_base is not None
                    for subnet in subnets for k in range(replicas(spec, c))))


# How long a seed may take to publish the shoot API's load balancer (the local seed: within a second).
PUBLISH_WAIT_S = 10.0


def _published_address(api: Any, namespace: str, timeout: float) -> str | None:
    """The load balancer address the seed published on the kube-apiserver Service, or None when
    none came within `timeout` (a seed without one: the shoot API is then not probed)."""
    return first_within(lambda: cluster.load_balancer_address(api, namespace, "kube-apiserver"),
                        f"the load balancer of {namespace}/kube-apiserver", timeout, interval=0.2)


def _exists(api: Any, namespace: str, secret: str) -> bool:
    from kubernetes import client as k8s

    with cluster.api_errors(f"reading {namespace}/{secret}"):
        try:
            k8s.CoreV1Api(api).read_namespaced_secret(secret, namespace)
        except k8s.ApiException as e:
            if e.status == 404:
                return False
            raise
    return True


def deploy(seed: Seed, spec: ReferenceSpec, timeout: float, backup_store: StoreSpec | None = None) -> list[PodPlacement]:
    """Apply the reference to the seed and wait until the scheduler has placed every pod it can
    (and, when it runs for real, until those pods are Running and ready). A reference whose
    etcd-main is backed up needs `backup_store`, the bucket its Secret names (its prefix unused)."""
    if spec.real and not seed.real_pods:
        raise CapabilityMissing("only the local seed runs the reference for real (its node agents); on this seed "
                                "deploy it without `real` and let the cluster's own kubelets run it")
    if spec.delta_snapshot_period_s is not None and backup_store is None:
        raise ConfigError(f"etcd-main of {spec.namespace} is to be backed up, but no backup store was given: the "
                          "environment's cloud provides one (SeedBackupStore)")
    from harness.kube import druid, resource_manager

    api = cluster.connect(seed.kube)
    try:
        webhook = resource_manager.calls_ha_webhook(seed.kube)
    except resource_manager.ResourceManagerError:
        if spec.form in DECIDED_BY_WEBHOOK:
            raise
        webhook = False  # not readable with these credentials: deployed as if there were none
    if spec.form in DECIDED_BY_WEBHOOK and not webhook:
        raise CapabilityMissing(f"the {spec.form} form is decided by Gardener's webhook {resource_manager.HA_WEBHOOK}, "
                                f"which this seed does not call: run gardener-resource-manager on it (a scenario in this form starts it "
                                f"on the local seed, as `harness deploy --form {spec.form}` does)")
    if spec.form not in DECIDED_BY_WEBHOOK and webhook:
        raise EnvironmentStateError(f"this seed calls Gardener's webhook {resource_manager.HA_WEBHOOK}, which would "
                                    f"rewrite the "
                                    f"{spec.form} form's scheduling in {spec.namespace}: deploy the gardener form there, "
                                    f"or stop gardener-resource-manager first (`harness down` stops it on the local seed)")
    gardenlets = _druid_etcds(seed, spec) if spec.druid else []
    objects = render(spec, druid.apiserver_etcd_tls(gardenlets) if spec.druid else None)
    await_namespace_gone(api, spec.namespace, timeout)
    apply(api, objects[:1])
    if seed.static_volumes:
        pool = volume_pool(spec, druid.storage_capacity(gardenlets) if spec.druid else ETCD_VOLUME_SIZE)
        apply(api, pool)
        # The scheduler binds only volumes its informer has seen; a pod scheduled before then stays
        # Pending (no event comes to retry it). Available is set by the controller manager's
        # informer, which runs beside the scheduler's.
        wait_for(lambda: _available(api, [pv["metadata"]["name"] for pv in pool]), lambda left: not left,
                 f"the {len(pool)} zonal volumes of {spec.namespace} Available", timeout, interval=0.2)
    if spec.real and not _exists(api, spec.namespace, PKI_SECRET):
        # The shoot API's Service first: its serving certificate names the load balancer's address.
        exposed = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "kube-apiserver"]
        apply(api, exposed)
        address = seed.shoot_api or _published_address(api, spec.namespace, PUBLISH_WAIT_S)
        apply(api, shoot_pki(spec, seed, address))  # once: running kube-apiservers keep the CA they started with
    if backup_store is not None and spec.delta_snapshot_period_s is not None and not _exists(api, spec.namespace,
                                                                                              BACKUP_SECRET):
        apply(api, [backup_secret(spec, backup_store)])  # once: a running etcd-main keeps its backups
    if gardenlets:  # the Secrets and Etcd resources; etcd-druid makes the etcds' StatefulSets from them
        apply(api, [druid.PRIORITY_CLASS, *gardenlets])
        # As gardenlet does, kube-apiserver only once druid reports the etcds ready: a new cluster
        # takes minutes, the system's own time, not the deploy timeout's.
        wait_for(lambda: druid.not_ready(api, spec.namespace, list(druid.etcds(gardenlets))), lambda left: not left,
                 f"etcd-druid to report the etcds of {spec.namespace} ready", druid.CLUSTER_READY_TIMEOUT_S,
                 interval=2.0)
    if spec.form in DECIDED_BY_WEBHOOK:
        apply_through_webhook(api, spec.namespace, objects[1:])
    else:
        apply(api, objects[1:])
    observed = wait_for(
        lambda: (pods := placement.observe(api, spec.namespace), settled(spec, pods)),
        lambda seen: seen[1] is None,
        f"the reference control plane in {spec.namespace} to be placed (Running, or Pending for the scheduler)",
        timeout,
        interval=0.25,
    )
    return observed[0]


def _druid_etcds(seed: Seed, spec: ReferenceSpec) -> list[dict[str, Any]]:
    """etcd-main's and etcd-events' `Etcd` resources and Secrets as gardenlet's own code makes them
    for the shoot (harness.kube.gardenlet), their JSON gateway on for the harness's etcd client;
    refused where no etcd-druid reconciles them. etcd-backup-restore is built here, before the node
    agents run druid's pods (its sidecar)."""
    from harness.kube import backup_restore, druid
    from harness.kube.gardenlet import etcd_objects
    from harness.kube.resource_manager import as_new

    if not druid.has_crds(seed.kube):
        raise CapabilityMissing(f"the etcds of {spec.namespace} are to be etcd-druid's, but this seed has no "
                                f"{druid.CRD}: run etcd-druid on it (a scenario with etcd-druid starts it on the local "
                                "seed, as `harness deploy --druid` does)")
    backup_restore.binary()
    return [as_new(o) for o in druid.with_gateway(etcd_objects(spec.namespace, spec.tolerance))]


def _available(api: Any, names: list[str]) -> list[str]:
    """Those of the volumes not Available (nor bound already) yet."""
    from kubernetes import client as k8s

    with cluster.api_errors("listing the zonal volumes"):
        phases = {pv.metadata.name: (pv.status.phase if pv.status else None)
                  for pv in k8s.CoreV1Api(api).list_persistent_volume().items}
    return [n for n in names if phases.get(n) not in ("Available", "Bound")]


def backup_secret(spec: ReferenceSpec, store: StoreSpec) -> dict[str, Any]:
    """etcd-main's backup Secret, for a control plane deployed anew, which starts with an empty
    prefix, as a new shoot gets a BackupEntry of its own: a new cluster must not carry on from an
    old one's revisions. etcdutl is built here, before the node agents' sidecars need it."""
    import base64
    import dataclasses

    from harness.backup.store import BackupStore
    from harness.etcd_builds import etcdutl_binary

    etcdutl_binary()
    old = BackupStore(dataclasses.replace(store, prefix=backup_prefix(spec)))
    for name in old.list():
        old.delete(name)
    data = {k: base64.b64encode(v.encode()).decode() for k, v in store.secret_data().items()}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": BACKUP_SECRET, "namespace": spec.namespace}, "data": data}


def undeploy(seed: Seed, namespace: str, timeout: float, wait_namespace: bool = True) -> list[str]:
    """Delete the reference in `namespace` and the volumes its members used.

    Workloads, pods (at once) and claims are deleted before the namespace: the namespace
    controller alone takes many seconds over it. The volumes are gone on return; the
    namespace too with `wait_namespace` (a later deploy into the same name waits for it); on a
    seed whose node agents run the pods for real, also every process of the namespace's pods
    (a measurement right after must not count a control plane still stopping).
    """
    from kubernetes import client as k8s

    from harness.kube import druid

    api = cluster.connect(seed.kube)
    core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
    with cluster.api_errors(f"deleting namespace {namespace}"):
        names = [ns.metadata.name for ns in core.list_namespace().items]
        if namespace in names:
            druid.release(api, namespace)  # first: etcd-druid would make their StatefulSets again
            cluster.unless_gone(apps.delete_collection_namespaced_stateful_set, namespace)
            cluster.unless_gone(apps.delete_collection_namespaced_deployment, namespace)
            cluster.unless_gone(core.delete_collection_namespaced_pod, namespace, grace_period_seconds=0)
            cluster.unless_gone(core.delete_collection_namespaced_persistent_volume_claim, namespace)
            cluster.unless_gone(core.delete_namespace, namespace)

    def leftovers() -> list[str]:
        with cluster.api_errors(f"cleaning up after {namespace}"):
            pvs = core.list_persistent_volume().items
            left = [f"pod {p.metadata.name}" for p in core.list_namespaced_pod(namespace).items]
            left += [f"claim {c.metadata.name}" for c in core.list_namespaced_persistent_volume_claim(namespace).items]
            for pv in pvs:
                claimed = pv.spec.claim_ref is not None and pv.spec.claim_ref.namespace == namespace
                pooled = (pv.metadata.labels or {}).get(POOL_LABEL) == namespace and pv.status.phase != "Bound"
                if (claimed and pv.status.phase != "Bound") or pooled:
                    cluster.unless_gone(core.delete_persistent_volume, pv.metadata.name)
                if claimed or pooled:
                    left.append(f"volume {pv.metadata.name}")
            if wait_namespace:
                left += [f"namespace {namespace}{_holding(ns)}" for ns in core.list_namespace().items
                         if ns.metadata.name == namespace]
            if seed.real_pods:  # pods deleted at once: their processes may still be stopping
                # (a node that is not Ready cannot say so, and is cut off from its peers anyway)
                left += [f"processes on node {n.metadata.name}" for n in core.list_node().items
                         if namespace in ((n.metadata.annotations or {}).get(RUNNING_ANNOTATION) or "").split(",")
                         and any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])]
        return left

    wait_for(leftovers, lambda left: not left, f"the reference in {namespace} and its volumes to be gone", timeout, interval=0.25)
    return [f"namespace {namespace}"] if namespace in names else []


def _holding(namespace: Any) -> str:
    """What the namespace controller says keeps a terminating namespace ("" when nothing yet):
    content left, or finalizers on it nobody removes."""
    said = [c.message for c in (namespace.status.conditions if namespace.status else None) or []
            if c.status == "True" and c.type in ("NamespaceContentRemaining", "NamespaceFinalizersRemaining")]
    return f" ({'; '.join(said)})" if said else ""


def await_namespace_gone(api: Any, namespace: str, timeout: float) -> None:
    """A namespace still terminating from an earlier undeploy cannot take new objects yet."""
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)

    def terminating() -> bool:
        with cluster.api_errors(f"reading namespace {namespace}"):
            try:
                return core.read_namespace(namespace).metadata.deletion_timestamp is not None
            except k8s.ApiException as e:
                if e.status == 404:
                    return False
                raise

    wait_for(terminating, lambda t: not t, f"namespace {namespace} of an earlier deployment to finish terminating",
             timeout, interval=0.25)
