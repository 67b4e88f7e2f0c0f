"""Render the reference HA shoot control plane (GEP-20, seed 000; HA conventions, seed 001).

For a failure tolerance type and the seed's zones: the shoot namespace with the
high-availability-config annotations, etcd-main and etcd-events StatefulSets with zonal
volumes, kube-apiserver and gardener-resource-manager Deployments, their Services and
PodDisruptionBudgets, and the etcd peer NetworkPolicy. Three scheduling forms:

- `gep20`: GEP-20's affinity rules: etcd case #1 (one zone: pod affinity on the zone plus
  required hostname anti-affinity) or case #2 (required zone anti-affinity); kube-apiserver
  and GRM with required hostname anti-affinity, plus preferred zone anti-affinity when spread
  over zones; a single zone pinned with a nodeSelector.
- `conventions`: what Gardener's high-availability-config webhook makes of them: replica
  counts and topology spread constraints from harness.reference.conventions, node affinity
  to the zones of the namespace annotation.
- `gardener`: the workloads as Gardener's components hand them to the seed, for Gardener's own
  webhook (gardener-resource-manager, harness.kube.resource_manager) to decide: no affinity and
  no spread constraints; the Deployments labelled with their type and one replica (kube-apiserver
  its autoscaler's minimum, with the autoscaler and the rolling update gardenlet gives it); the
  etcd StatefulSets and their budgets as etcd-druid makes them from the Etcd resources, three
  members and no type label. The counts the webhook is expected to decide are the conventions form's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.errors import ConfigError
from harness.kube import etcd_tls
from harness.kube.agent import (BACKUP_CONTAINER, BACKUP_IMAGE, BACKUP_PORT, BACKUP_SECRET, BACKUP_VOLUME,
                                ETCD_ZONES_ANNOTATION, IP_BASE_ANNOTATION)
from harness.kube.controlplane import AGENT_LABEL
from harness.kube.podgc import SEED_LB_CLASS
from harness.reference import conventions as conv
from harness.components import COMPONENTS, CONTROLPLANE_ROLE, ETCDS, Component

FORMS = ("gep20", "conventions", "gardener")
DECIDED_BY_WEBHOOK = ("gardener",)  # forms whose scheduling Gardener's webhook writes on the seed
SHOOT_ROLE = ("gardener.cloud/role", "shoot")
TOLERANCES = ("none", "node", "zone")
DEFAULT_NAMESPACE = "shoot--harness--ref"
DEFAULT_STORAGE_CLASS = "harness-zonal"
ETCD_VOLUME_SIZE = "1Gi"
# How long a deleted pod's process has to stop; it also delays the force deletion of pods on
# unreachable nodes (they count from the end of it).
TERMINATION_GRACE_S = 5

# GEP-20 form replica counts: etcd 3 for HA, 1 without; GRM "deployed with 3 replicas";
# kube-apiserver's minimum is the number of zones it spreads over (MinReplicas =
# len(zones)), and on one zone GEP-20 expects a replica per node of (at least) 3 nodes.
GEP20_REPLICAS = {
    "none": {"etcd": 1, "kube-apiserver": 1, "gardener-resource-manager": 1},
    "node": {"etcd": 3, "kube-apiserver": 3, "gardener-resource-manager": 3},
    "zone": {"etcd": 3, "kube-apiserver": 3, "gardener-resource-manager": 3},
}


@dataclass(frozen=True)
class ReferenceSpec:
    tolerance: str
    seed_zones: tuple[str, ...]
    form: str = "gep20"
    namespace: str = DEFAULT_NAMESPACE
    storage_class: str | None = DEFAULT_STORAGE_CLASS  # None: the cluster's default class
    # Local seed: etcd and kube-apiserver pods run as real processes under the node agents.
    real: bool = False
    # Running for real only: the zones whose etcd members the kube-apiservers are given (empty:
    # all). Reproduces apiservers started with the members scheduled at that moment only.
    apiserver_etcd_zones: tuple[str, ...] = ()
    # Running for real only: etcd-main backed up to the store of the Secret BACKUP_SECRET by a
    # sidecar beside each member (seed 003), a delta snapshot every so many seconds (None: no
    # backups) and a full one every `full_snapshot_period_s`.
    delta_snapshot_period_s: float | None = None
    full_snapshot_period_s: float = 3600.0
    # Members of each etcd (None: the form's count, 3 with high availability). GEP-20's future
    # enhancement: 5 members tolerate two failures, and their budgets let two go at once.
    etcd_members: int | None = None
    # GEP-20's "two zone cluster", which it argues against (and the conventions refuse): failure
    # tolerance zone on a seed of exactly two zones, both used.
    two_zones: bool = False
    # The gardener form running for real only: etcd-main and etcd-events are gardenlet's `Etcd`
    # resources, which etcd-druid (real) turns into StatefulSets (harness.kube.druid); the renderer
    # then writes no etcd object, and kube-apiserver mounts gardenlet's etcd CA and client Secrets.
    druid: bool = False
    zones: tuple[str, ...] = field(init=False)  # the zones the control plane uses

    def __post_init__(self) -> None:
        if self.tolerance not in TOLERANCES:
            raise ConfigError(f"unknown failure tolerance {self.tolerance!r}; accepted: {', '.join(TOLERANCES)}")
        if self.form not in FORMS:
            raise ConfigError(f"unknown form {self.form!r}; accepted: {', '.join(FORMS)}")
        if self.delta_snapshot_period_s is not None and not self.real:
            raise ConfigError("backups of etcd-main need the reference running for real (its node agents run the "
                              "backup sidecars)")
        if self.delta_snapshot_period_s is not None and not 0 < self.delta_snapshot_period_s <= self.full_snapshot_period_s:
            raise ConfigError(f"the delta snapshot period must be above 0 s and at most the full snapshot period "
                              f"({self.full_snapshot_period_s:g} s); got {self.delta_snapshot_period_s:g} s")
        if self.etcd_members is not None and (self.etcd_members not in (1, 3, 5, 7) or
                                              (self.tolerance != "none") != (self.etcd_members > 1)):
            raise ConfigError(f"an etcd of the reference has 1 member without high availability, else 3, 5 or 7 (an odd "
                              f"count for a quorum); got {self.etcd_members} with failure tolerance {self.tolerance!r}")
        if self.druid and not (self.form == "gardener" and self.real):
            raise ConfigError(f"etcd-druid runs the etcds of the gardener form running for real (on the local seed); "
                              f"got the {self.form} form{'' if self.real else ' not running for real'}")
        if self.druid and (self.etcd_members is not None or self.delta_snapshot_period_s is not None):
            raise ConfigError("with etcd-druid the etcds are gardenlet's: their member count and backups are not the "
                              "harness's to set")
        if self.two_zones:
            if self.tolerance != "zone" or len(self.seed_zones) != 2:
                raise ConfigError(f"GEP-20's two-zone cluster is failure tolerance 'zone' on a seed of exactly two "
                                  f"zones; got tolerance {self.tolerance!r} on {len(self.seed_zones)} zone(s)")
            object.__setattr__(self, "zones", tuple(self.seed_zones))
        else:
            object.__setattr__(self, "zones", conv.choose_zones(self.tolerance, self.seed_zones))

    @property
    def tolerance_annotation(self) -> str:
        # seed 001: the annotation holds the shoot's type, or "" without high availability.
        return "" if self.tolerance == "none" else self.tolerance


def replicas(spec: ReferenceSpec, c: Component) -> int:
    key = "etcd" if c.name in ETCDS else c.name
    if key == "etcd" and spec.etcd_members is not None:
        return spec.etcd_members
    if spec.form == "gep20":
        if c.name == "kube-apiserver" and spec.tolerance == "zone":
            return len(spec.zones)
        return GEP20_REPLICAS[spec.tolerance][key]
    # conventions, and gardener (what the webhook is expected to decide: the conventions' count)
    count = conv.replica_count(c.ha_type, spec.tolerance, len(spec.zones), etcd=c.name in ETCDS)
    if c.name == "kube-apiserver" and spec.tolerance == "zone":
        # Scaled horizontally, the table's count is a minimum; one per zone as GEP-20 has it.
        count = max(count, len(spec.zones))
    return count


def _term(c: Component, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": dict(c.selector)}, "topologyKey": key}


def _gep20_scheduling(spec: ReferenceSpec, c: Component) -> dict[str, Any]:
    zone_spread = spec.tolerance == "zone"
    if c.name in ETCDS:
        if zone_spread:  # case #2: at most one member per zone
            affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(c, conv.ZONE_LABEL)]}}
        else:  # case #1: all members in one zone, one per node
            affinity = {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(c, conv.ZONE_LABEL)]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(c, conv.HOSTNAME_LABEL)]},
            }
    else:
        anti: dict[str, Any] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(c, conv.HOSTNAME_LABEL)]}
        if zone_spread:
            anti["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 100, "podAffinityTerm": _term(c, conv.ZONE_LABEL)}
            ]
        affinity = {"podAntiAffinity": anti}
    out: dict[str, Any] = {}
    if len(spec.zones) == 1:
        out["nodeSelector"] = {conv.ZONE_LABEL: spec.zones[0]}  # GEP-20 "Zone affinity"
    else:
        affinity.update(conv.node_affinity(spec.zones) or {})
    out["affinity"] = affinity
    return out


def _conventions_scheduling(spec: ReferenceSpec, c: Component, count: int) -> dict[str, Any]:
    out: dict[str, Any] = {"affinity": conv.node_affinity(spec.zones) or {}}
    constraints = conv.topology_spread_constraints(c.ha_type, spec.tolerance, len(spec.zones), count, dict(c.selector))
    if constraints:
        out["topologySpreadConstraints"] = constraints
    return out


def manifest_replicas(spec: ReferenceSpec, c: Component) -> int:
    """The count the workload is handed to the seed with: in the gardener form, the component's own
    before the webhook decides (etcd-druid's from the Etcd resource; kube-apiserver its
    autoscaler's minimum); else the count it runs with."""
    if spec.form != "gardener" or c.name in ETCDS:
        return replicas(spec, c)
    return autoscaled(spec)[0] if c.name == "kube-apiserver" else 1


def autoscaled(spec: ReferenceSpec) -> tuple[int, int]:
    """kube-apiserver's HorizontalPodAutoscaler in the gardener form: (minReplicas, maxReplicas) as
    gardenlet sets them (botanist's computeKubeAPIServerAutoscalingConfig: 3 for a shoot with high
    availability, else 2, up to 6; tests/kube/test_gardenlet.py holds them to its code). The local
    seed serves no resource metrics, so nothing scales it above the minimum."""
    return (2 if spec.tolerance == "none" else 3), 6


# How gardenlet rolls kube-apiserver's Deployment: every new pod up before an old one goes.
GARDENER_APISERVER_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}}


def _scheduling(spec: ReferenceSpec, c: Component, count: int) -> dict[str, Any]:
    if spec.form == "gep20":
        return _gep20_scheduling(spec, c)
    if spec.form == "conventions":
        return _conventions_scheduling(spec, c, count)
    return {}  # gardener: the webhook writes it


def _workload(spec: ReferenceSpec, c: Component, apiserver_tls: dict[str, str]) -> dict[str, Any]:
    count = replicas(spec, c)
    scheduling = _scheduling(spec, c, count)
    container: dict[str, Any] = {
        "name": c.name.split("-")[0] if c.name in ETCDS else c.name,
        "image": c.image,
        "ports": [{"containerPort": p} for p in c.ports],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    pod_spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
                                **scheduling}
    pod_meta: dict[str, Any] = {"labels": dict(c.labels)}
    if spec.real and c.runs_as:
        pod_meta["labels"][AGENT_LABEL] = c.runs_as
        if c.ip_base is not None:
            pod_meta["annotations"] = {IP_BASE_ANNOTATION: str(c.ip_base)}
        if c.name == "kube-apiserver" and spec.apiserver_etcd_zones:
            pod_meta.setdefault("annotations", {})[ETCD_ZONES_ANNOTATION] = ",".join(spec.apiserver_etcd_zones)
        # etcd over TLS as etcd-druid runs it, with the certificates deploy() makes from the shoot's CA.
        tls = etcd_tls.MEMBER_VOLUMES if c.name in ETCDS else apiserver_tls if c.name == "kube-apiserver" else {}
        if tls:
            pod_spec["volumes"] = etcd_tls.volumes(tls)
            container["volumeMounts"] = [{"name": v, "mountPath": f"/var/etcd/ssl/{v}", "readOnly": True} for v in tls]
        if c.name == "etcd-main" and spec.delta_snapshot_period_s is not None:
            pod_spec["containers"].append(_backup_container(spec, container["volumeMounts"]))
            pod_spec["volumes"].append({"name": BACKUP_VOLUME, "secret": {"secretName": BACKUP_SECRET}})
    labels = dict(c.labels)
    if not (spec.form == "gardener" and c.name in ETCDS):  # etcd-druid's StatefulSets carry no type
        labels[conv.LABEL_TYPE] = c.ha_type
    workload: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": c.kind,
        "metadata": {"name": c.name, "namespace": spec.namespace, "labels": labels},
        "spec": {
            "replicas": manifest_replicas(spec, c),
            "selector": {"matchLabels": dict(c.selector)},
            "template": {"metadata": pod_meta, "spec": pod_spec},
        },
    }
    if spec.form == "gardener" and c.name == "kube-apiserver":
        workload["spec"]["strategy"] = GARDENER_APISERVER_STRATEGY
    if c.kind == "StatefulSet":
        container["volumeMounts"] = [{"name": c.name, "mountPath": "/var/etcd/data"}, *container.get("volumeMounts", [])]
        claim: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": ETCD_VOLUME_SIZE}}}
        if spec.storage_class:
            claim["storageClassName"] = spec.storage_class
        workload["spec"] |= {
            "serviceName": f"{c.name}-peer",
            # etcd-druid starts members in parallel: a Pending member must not hold back the others.
            "podManagementPolicy": "Parallel",
            # Zonal volumes: a member whose volume is bound in a zone can only run in that zone.
            "volumeClaimTemplates": [{"metadata": {"name": c.name}, "spec": claim}],
        }
    return workload


def backup_prefix(spec: ReferenceSpec) -> str:
    """Where etcd-main's snapshots go in the bucket (etcd-druid: the shoot's BackupEntry)."""
    return f"{spec.namespace}/etcd-main"


def _backup_container(spec: ReferenceSpec, tls_mounts: list[dict[str, Any]]) -> dict[str, Any]:
    """etcd-druid's backup-restore sidecar: the node agent runs harness.backup.sidecar with these
    arguments, the member's client certificate and the store of the mounted Secret."""
    return {
        "name": BACKUP_CONTAINER,
        "image": BACKUP_IMAGE,
        "args": [f"--store-prefix={backup_prefix(spec)}", f"--full-period={spec.full_snapshot_period_s:g}",
                 f"--delta-period={spec.delta_snapshot_period_s:g}"],
        "ports": [{"containerPort": BACKUP_PORT}],
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}},
        "volumeMounts": [*(m for m in tls_mounts if m["name"] in (etcd_tls.CLIENT_CA_VOLUME, etcd_tls.CLIENT_TLS_VOLUME)),
                         {"name": BACKUP_VOLUME, "mountPath": "/var/etcd-backup", "readOnly": True}],
    }


def _services(spec: ReferenceSpec, c: Component) -> list[dict[str, Any]]:
    def service(name: str, ports: tuple[int, ...], headless: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"selector": dict(c.selector), "ports": [{"name": f"p{p}", "port": p} for p in ports]}
        if headless:
            body |= {"clusterIP": "None", "publishNotReadyAddresses": True}
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": name, "namespace": spec.namespace, "labels": dict(c.selector)}, "spec": body}

    if c.name in ETCDS:
        return [service(f"{c.name}-client", (2379,)), service(f"{c.name}-peer", (2380,), headless=True)]
    exposed = service(c.name, c.ports)
    if c.name == "kube-apiserver" and spec.real:  # the shoot API, for its clients, behind the seed's load balancer
        exposed["spec"] |= {"type": "LoadBalancer", "loadBalancerClass": SEED_LB_CLASS}
    return [exposed]


def _pdb(spec: ReferenceSpec, c: Component) -> dict[str, Any]:
    # GEP-20: no more members unavailable than the cluster tolerates, (n-1)/2; one of anything else.
    unavailable = max(1, (replicas(spec, c) - 1) // 2) if c.name in ETCDS else 1
    budget: dict[str, Any] = {"maxUnavailable": unavailable, "unhealthyPodEvictionPolicy": "AlwaysAllow"}
    if spec.form == "gep20" and c.name in ETCDS:
        # GEP-20's budget "ensures that no more than one member is unavailable"; seed 001's AlwaysAllow
        # does not: it let a follower that was unready while the leadership changed hands be evicted
        # while the old leader's replacement did not serve yet, two members away at once
        # (docs/guides/reference.md). The API's IfHealthyBudget lets an unready member go only
        # while the budget holds.
        del budget["unhealthyPodEvictionPolicy"]
    if spec.form == "gardener" and c.name in ETCDS:
        # etcd-druid's (v0.36.4): a quorum available; an unhealthy member's pod evicted regardless only
        # where gardenlet annotates the Etcd so, its normal class (etcd-events), else the API's
        # IfHealthyBudget (tests/kube/test_resource_manager.py holds this to druid's own).
        count = replicas(spec, c)
        budget = {"minAvailable": count // 2 + 1 if count > 1 else 0}
        if c.name == "etcd-events":
            budget["unhealthyPodEvictionPolicy"] = "AlwaysAllow"
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": c.name, "namespace": spec.namespace, "labels": dict(c.selector)},
        "spec": {**budget, "selector": {"matchLabels": dict(c.selector)}},
    }


def _peer_policy(spec: ReferenceSpec) -> dict[str, Any]:
    """GEP-20's "Etcd Peer Network Policy", as written there."""
    etcd = {"matchLabels": {"app": "etcd-statefulset", **CONTROLPLANE_ROLE}}
    ports = [{"protocol": "TCP", "port": p} for p in (2379, 8080, 2380)]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-etcd-peer", "namespace": spec.namespace, "labels": dict(CONTROLPLANE_ROLE)},
        "spec": {
            "podSelector": etcd,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": etcd}], "ports": ports}],
            "egress": [{"to": [{"podSelector": etcd}], "ports": ports}],
        },
    }


def namespace(spec: ReferenceSpec) -> dict[str, Any]:
    labels = {conv.LABEL_CONSIDER: "true"}
    if spec.form in DECIDED_BY_WEBHOOK:
        # As gardenlet labels a shoot's namespace: Gardener registers its webhooks for namespaces
        # with a role only (its pod webhooks then see the pods too).
        labels[SHOOT_ROLE[0]] = SHOOT_ROLE[1]
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": spec.namespace,
            "labels": labels,
            "annotations": {
                conv.ANNOTATION_ZONES: ",".join(spec.zones),
                conv.ANNOTATION_FAILURE_TOLERANCE_TYPE: spec.tolerance_annotation,
            },
        },
    }


def _autoscaler(spec: ReferenceSpec, c: Component) -> dict[str, Any]:
    low, high = autoscaled(spec)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": c.name, "namespace": spec.namespace, "labels": dict(c.selector)},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": c.kind, "name": c.name},
                     "minReplicas": low, "maxReplicas": high,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                         "type": "Utilization", "averageUtilization": 80}}}]}}


def render(spec: ReferenceSpec, apiserver_etcd_tls: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every object of the reference control plane, the namespace first; in the gardener form
    kube-apiserver's autoscaler before its Deployment (the webhook looks for it). With etcd-druid
    (`spec.druid`) no etcd object: `apiserver_etcd_tls` names the Secrets of gardenlet's Etcd
    resources kube-apiserver mounts (etcd_tls.APISERVER_VOLUMES' volumes; harness.kube.druid)."""
    if spec.druid and apiserver_etcd_tls is None:
        raise ConfigError("with etcd-druid, kube-apiserver mounts the etcd CA and client certificate of gardenlet's Etcd "
                          "resources: their Secrets' names are needed (harness.kube.druid.apiserver_etcd_tls)")
    objects = [namespace(spec)]
    for c in COMPONENTS.values():
        if spec.druid and c.name in ETCDS:
            continue  # etcd-druid makes them from gardenlet's Etcd resources
        if spec.form == "gardener" and c.name == "kube-apiserver":
            objects.append(_autoscaler(spec, c))
        objects += [_workload(spec, c, apiserver_etcd_tls or etcd_tls.APISERVER_VOLUMES), *_services(spec, c), _pdb(spec, c)]
    objects.append(_peer_policy(spec))
    return objects


def to_yaml(objects: list[dict[str, Any]]) -> str:
    import yaml

    return yaml.safe_dump_all(objects, sort_keys=False)
