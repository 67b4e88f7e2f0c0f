"""The cluster provider: an existing Kubernetes cluster, reached through a kubeconfig context.

Zones and nodes come from the nodes' labels. The harness deploys the reference control plane
into a namespace there and judges its placement; a shoot's etcd is reached through the seed's
API (KubeEtcd: port-forwards, vantage pods in the zones). Its own faults are pod deletion and
node cordon/drain (no network is the harness's to cut); with [aws], a zone outage and a node
kill go through the cloud (network ACLs, instances). harness.teardown heals and removes what
the harness deployed before `down` forgets the cluster.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from harness.aws.access import AwsAccess, from_settings
from harness.config import Config
from harness.errors import ConfigError, EnvironmentStateError
from harness.kube import cluster
from harness.kube.controlplane import AGENT_NODE_ANNOTATION
from harness.providers.base import EtcdCluster
from harness.topology import KubeAccess, Node, Seed, Topology
from harness.providers.kube_etcd import KubeEtcd
from harness.providers.state import StateBacked, read_state, write_state
from harness.wait import wait_for

NO_PROVISIONER = "kubernetes.io/no-provisioner"


class ClusterEnvironment(StateBacked, Topology):
    provider = "cluster"

    def __init__(self, config: Config, state: dict[str, Any], path: Path) -> None:
        self.config = config
        self.state = state
        self.path = path
        self.access = KubeAccess(Path(state["kubeconfig"]), state.get("context"))
        views = [v for v in cluster.node_views(cluster.connect(self.access)) if v.zone]
        self.nodes = tuple(Node(v.name, v.zone or "", v.name, v.host) for v in sorted(views, key=lambda v: (v.zone, v.name)))
        self.zones = tuple(dict.fromkeys(n.zone for n in self.nodes))
        self.members = ()  # the cluster's own etcd is not the harness's to reach; shoots' are (shoot_etcd)

    def kube(self) -> KubeAccess:
        return self.access

    def shoot_etcd(self, seed: Seed, namespace: str, name: str) -> EtcdCluster:
        """The control plane's etcd cluster, reached through the seed's API (port-forwards)."""
        return KubeEtcd(self.config, seed, namespace, name, self.zones, self.provider)

    def aws(self) -> AwsAccess | None:
        """The AWS account of [aws] in the configuration (the AWS faults' target), if any."""
        return from_settings(self.config.aws)

    # -- what backs the cluster's volumes: EBS volumes of [aws] (volume-loss on NAMESPACE/POD) ------
    def volume_backing_refused(self, volume: dict[str, Any]) -> str | None:
        from harness.aws.volumes import check_volume, ebs_volume_id
        from harness.errors import FaultError

        ebs = ebs_volume_id(volume)
        if ebs is None:
            return None
        access = self.aws()
        if access is None:
            return (f"volume {volume['volume']} is the EBS volume {ebs}, and no [aws] account is configured to "
                    "delete it with")
        try:
            check_volume(access.client("ec2"), ebs, access.opted_in)
        except FaultError as e:
            return str(e)
        return None

    def destroy_volume_backing(self, volume: dict[str, Any], run_id: str,
                               record: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """An EBS volume deleted through the AWS API; any other is left to its provisioner, which
        deletes it with the PersistentVolume when its reclaim policy says Delete."""
        from harness.aws.volumes import ebs_volume_id, lose_volume

        ebs = ebs_volume_id(volume)
        access = self.aws()
        if ebs is None or access is None:
            return {"backing": "left to its provisioner (the volume's reclaim policy)"}
        return lose_volume(access.client("ec2"), ebs, run_id, record, opted_in=access.opted_in)

    def health(self) -> dict[str, Any]:
        return {v.name: "Ready" if v.ready else "NotReady" for v in cluster.node_views(cluster.connect(self.access))}

    def wait_healthy(self, timeout: float | None = None) -> object:
        return wait_for(self.health, lambda h: all(s == "Ready" for s in h.values()), "every node of the cluster Ready",
                        timeout or self.config.timeouts.recovery)

    def sweep(self) -> list[str]:
        return cluster.sweep_cordons(self.access)

    def describe(self) -> dict[str, Any]:
        health = self.health()
        return {
            "provider": self.provider,
            "kubeconfig": str(self.access.kubeconfig),
            "context": self.access.context,
            "zones": [{"name": z, "nodes": [n.name for n in self.nodes_in(z)]} for z in self.zones],
            "nodes": [{"name": n.name, "zone": n.zone, "host": n.host, "ready": health.get(n.name)} for n in self.nodes],
            "references": self.state.get("references", []),
            "active_faults": [f["id"] for f in self.state.get("faults", [])],
        }


class ClusterProvider:
    name = "cluster"
    environment: type[ClusterEnvironment] = ClusterEnvironment

    def __init__(self, config: Config) -> None:
        self.config = config
        settings = config.provider
        assert settings.kubeconfig is not None  # resolved by load_config
        self.access = KubeAccess(Path(settings.kubeconfig), settings.context)
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.access.kubeconfig}-{settings.context or 'current'}")[-120:]
        self.path = config.state_dir / f"{self.name}-{slug}.json"

    def _check(self) -> None:
        views = cluster.node_views(cluster.connect(self.access))
        if not any(v.zone for v in views):
            raise ConfigError(
                f"no node of the cluster in {self.access.kubeconfig} (context {self.access.context or 'current'}) carries "
                f"the {cluster.ZONE_LABEL} label; the harness needs zones to judge placement"
            )

    def up(self) -> ClusterEnvironment:
        self._check()
        state = read_state(self.path) or {"kubeconfig": str(self.access.kubeconfig), "context": self.access.context,
                                           "faults": [], "references": []}
        write_state(self.path, state)
        return self._env(state)

    def attach(self) -> ClusterEnvironment:
        state = read_state(self.path)
        if state is None:
            raise EnvironmentStateError(f"the {self.name} provider has not been brought up with this kubeconfig; run `harness up`")
        return self._env(state)

    def _env(self, state: dict[str, Any]) -> ClusterEnvironment:
        return self.environment(self.config, state, self.path)

    def seed(self, env: Any) -> Seed:
        return seed_of(self.access, self.config.provider.storage_class)

    def left_to_heal(self) -> ClusterEnvironment | None:
        state = read_state(self.path)
        return None if state is None else self._env(state)

    def down(self) -> list[str]:
        """Forget the cluster: its faults healed and its references removed by the caller first."""
        if not self.path.exists():
            return []
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".lock").unlink(missing_ok=True)
        return [f"state {self.path}"]


def seed_of(access: KubeAccess, storage_class: str | None) -> Seed:
    """A seed on an existing cluster; a StorageClass without a provisioner gets volumes from the harness."""
    from kubernetes import client as k8s

    api = cluster.connect(access)
    with cluster.api_errors("listing StorageClasses"):
        classes = {c.metadata.name: c for c in k8s.StorageV1Api(api).list_storage_class().items}
    if storage_class is not None and storage_class not in classes:
        raise ConfigError(f"StorageClass {storage_class!r} does not exist; the cluster has: {', '.join(classes) or 'none'}")
    chosen = classes.get(storage_class or "") or next(
        (c for c in classes.values()
         if (c.metadata.annotations or {}).get("storageclass.kubernetes.io/is-default-class") == "true"), None)
    name = chosen.metadata.name if chosen is not None else storage_class
    with cluster.api_errors("listing nodes"):
        nodes = [n for n in k8s.CoreV1Api(api).list_node().items if cluster.ZONE_LABEL in (n.metadata.labels or {})]
    return Seed(access, name, static_volumes=chosen is not None and chosen.provisioner == NO_PROVISIONER,
                real_pods=bool(nodes) and all(AGENT_NODE_ANNOTATION in (n.metadata.annotations or {}) for n in nodes))
