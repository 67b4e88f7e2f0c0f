"""The local seed: the Kubernetes control plane beside the region, one kwok node per region node.

The control plane listens on the harness's end of the region's "uplink", a veth pair whose
other end sits in the region's router (harness/providers/local/network/uplink.py), so it is outside
every zone and reached from each zone through the router: each node's kwok runs inside the
node's network namespace, and whatever cuts the node off the network (a zone outage, a node
failure) also stops its heartbeats.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import netns
from harness.config import Config
from harness.errors import EnvironmentStateError
from harness.providers.local.network.uplink import ensure_uplink, remove_uplink, uplink_up
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

# Zonal volumes on the local seed: no provisioner, the scheduler binds pre-created zonal PVs.
STORAGE_CLASS = "harness-zonal"
# Deployment pods that run for real get addresses <zone subnet>.<start + size*i + j> on the
# zone's node i; StatefulSet pods get fixed ones below that (harness.kube.agent).
POD_POOL_START = 120
POD_POOL_SIZE = 4
# The shoot API's load balancer sits on a subnet of its own behind the router, outside every zone.
LB_SUBNET = 200
LB_BRIDGE = "b-lb"


def lb_address(env: RegionRecord) -> str:
    return f"{env.spec.subnet_prefix}.{LB_SUBNET}.10"


def workdir(config: Config, region: str) -> Path:
    return config.state_dir / region / "kube"


def context_name(region: str) -> str:
    return f"ha-harness-{region}"


def start_for(env: RegionRecord, merge_into: Path | None = None) -> dict[str, Any]:
    """Start the seed with the region's nodes, zones and hosts; record it in the region state.

    With `merge_into`, its context is merged into that kubeconfig and made current."""
    from harness.kube import ControlPlaneSpec, NodeSpec, start_control_plane
    from harness.kube.cluster import api_errors, connect
    from harness.kube import kubeconfig

    if env.state.get("kubernetes"):
        raise EnvironmentStateError(f"region {env.spec.name!r} already runs its Kubernetes control plane")
    made_uplink = uplink_up(env) is None  # else the cloud made it, and may be serving on it
    address = ensure_uplink(env)
    spec = ControlPlaneSpec(
        nodes=tuple(NodeSpec(n.name, n.zone, n.host, env.names.node_ns(n.name), n.address) for n in env.nodes),
        bind_address=address,
        egress_netns=env.names.router,  # its pod proxies and port-forwards reach the region from the router
    )
    try:
        cp = start_control_plane(spec, workdir(env.config, env.spec.name))
    except BaseException:
        if made_uplink and not env.refresh().get("cloud"):  # a cloud started meanwhile serves on it
            remove_uplink(env)
        raise
    try:
        _start_node_agents(env, cp)
        # Outside every zone, as Gardener's garbage collection runs in the seed's control plane.
        cp.start_component("pod-gc", [sys.executable, "-m", "harness.kube.podgc", f"--kubeconfig={cp.kubeconfig}",
                                      f"--after={cp.timings.force_delete_after_s}", f"--lb-address={lb_address(env)}"])
        _start_load_balancer(env, cp.workdir / "lb")
    except BaseException:
        cp.stop()
        raise
    record: dict[str, Any] = {"workdir": str(cp.workdir), "kubeconfig": str(cp.kubeconfig), "apiserver": cp.apiserver_url}
    env.update(lambda st: st.update(kubernetes=record))
    from kubernetes import client as k8s

    with api_errors("creating the zonal StorageClass"):
        k8s.StorageV1Api(connect(env.kube())).create_storage_class(k8s.V1StorageClass(  # type: ignore[arg-type]
            # The seed's default class, as a seed has one: etcd-druid's claims name none.
            metadata=k8s.V1ObjectMeta(name=STORAGE_CLASS, annotations={"storageclass.kubernetes.io/is-default-class": "true"}),
            provisioner="kubernetes.io/no-provisioner",
            volume_binding_mode="WaitForFirstConsumer",
            reclaim_policy="Retain",
        ))
    if merge_into is not None:
        created = kubeconfig.merge(merge_into, cp.kubeconfig, context_name(env.spec.name))
        record |= {"merged_into": str(merge_into), "merged_created_file": created, "context": context_name(env.spec.name)}
        env.update(lambda st: st.update(kubernetes=record))
    return record


def pod_pool(env: RegionRecord, node: str) -> list[str]:
    """The addresses a node gives the Deployment pods it runs for real (a load balancer's targets)."""
    n = env.node(node)
    index = [x.name for x in env.nodes_in(n.zone)].index(node)
    prefix = n.address.rsplit(".", 1)[0]
    first = POD_POOL_START + POD_POOL_SIZE * index
    return [f"{prefix}.{first + i}" for i in range(POD_POOL_SIZE)]


def volumes_root(env: RegionRecord) -> Path:
    """Where the node agents keep the seed's PersistentVolumes (harness.kube.agent.volume_path)."""
    return env.config.data_dir / env.spec.name / "volumes"


def _start_node_agents(env: RegionRecord, cp: Any) -> None:
    """One agent per node, inside the node's namespace (a kubelet for the pods that run for real)."""
    from harness.etcd_builds import etcdutl_path
    from harness.kube import backup_restore, ensure_binaries, sources_from_env

    bins = ensure_binaries(sources_from_env())
    subnets = ",".join(f"{z}={env.names.gateway(z).rsplit('.', 1)[0]}" for z in env.zones)
    volumes = volumes_root(env)
    for node in env.nodes:
        pool = pod_pool(env, node.name)
        cp.start_component(f"agent-{node.name}", [
            "ip", "netns", "exec", env.names.node_ns(node.name), sys.executable, "-m", "harness.kube.agent",
            f"--node={node.name}", f"--zone={node.zone}", f"--kubeconfig={cp.kubeconfig}",
            f"--workdir={cp.workdir / 'agents'}", f"--logs={cp.workdir / 'logs' / 'pods'}", f"--volumes={volumes}",
            f"--zone-subnets={subnets}", f"--pool={pool[0]}-{pool[-1].rsplit('.', 1)[1]}", f"--host-ip={node.address}",
            f"--etcd={bins.etcd}", f"--kube-apiserver={bins.kube_apiserver}",
            # Built when a shoot is first deployed with backups (the backup sidecars' snapshots).
            f"--etcdutl={etcdutl_path()}",
            # Built when etcd-druid's pods first run (harness.kube.backup_restore).
            f"--etcd-backup-restore={backup_restore.PROGRAM.target()}", f"--netns={env.names.node_ns(node.name)}",
        ])


def _start_load_balancer(env: RegionRecord, workdir: Path) -> None:
    """HAProxy on a subnet of its own behind the router, outside every zone, with every node's pod
    addresses as targets: its health checks pick the kube-apiservers that answer, as a cloud
    load balancer's do."""
    from harness.kube import loadbalancer

    n, t = env.names, env.config.timeouts.command
    gateway = f"{env.spec.subnet_prefix}.{LB_SUBNET}.1"
    netns.run(["ip", "-n", n.router, "-batch", "-"], timeout=t,
              stdin=f"link add {LB_BRIDGE} type bridge\naddr add {gateway}/24 dev {LB_BRIDGE}\nlink set {LB_BRIDGE} up\n")
    lb_ns = f"{n.prefix}-lb"
    env.update(lambda st: st["namespaces"].append(lb_ns))  # recorded first: `down` deletes it
    record = loadbalancer.start(loadbalancer.LoadBalancerSpec(
        netns=lb_ns, router_ns=n.router, bridge=LB_BRIDGE, address=lb_address(env), prefix_len=24, gateway=gateway,
        port=443, backends=tuple(ip for node in env.nodes for ip in pod_pool(env, node.name)), workdir=workdir,
    ))
    env.update(lambda st: st.update(loadbalancer=record))


def stop_for(config: Config, region: str, state: dict[str, Any] | None) -> list[str]:
    """Stop whatever control plane the region's work directory records (a crashed run's too)
    and take its context out of the kubeconfig it was merged into."""
    from harness.kube import kubeconfig, load_state, stop_from_state

    removed: list[str] = []
    wd = workdir(config, region)
    cp_state = load_state(wd) if (wd / "controlplane.json").exists() else None
    if cp_state is not None:
        stop_from_state(cp_state)
        (wd / "controlplane.json").unlink(missing_ok=True)
        removed.append(f"kubernetes control plane in {wd}")
    record = (state or {}).get("kubernetes") or {}
    if record.get("merged_into"):
        target = Path(record["merged_into"])
        if kubeconfig.remove(target, record["context"], delete_if_empty=record.get("merged_created_file", False)):
            removed.append(f"context {record['context']} in {target}")
    return removed


def keep_logs(config: Config, region: str) -> Path | None:
    """Copy the region's logs (members, control plane, kwoks) to the reports directory."""
    root = config.state_dir / region
    logs = [p for p in (root / "logs", workdir(config, region) / "logs") if p.is_dir()]
    if not logs:
        return None
    dest = config.reports_dir / "logs" / region
    shutil.rmtree(dest, ignore_errors=True)
    for directory in logs:
        shutil.copytree(directory, dest, dirs_exist_ok=True)
    return dest


def control_plane(env: RegionRecord) -> Any:
    from harness.kube import ControlPlane, load_state

    record = env.state.get("kubernetes")
    state = load_state(Path(record["workdir"])) if record else None
    return ControlPlane.from_state(state) if state else None


def start_seed_component(env: RegionRecord, name: str, argv: list[str],
                         environment: dict[str, str] | None = None) -> Any:
    """One more process of the seed's (a controller): it stops with the seed. Returns its record."""
    cp = control_plane(env)
    if cp is None:
        raise EnvironmentStateError(f"region {env.spec.name!r} runs no seed to start {name} on")
    cp.start_component(name, argv, environment)
    return cp.records[name]


def seed_component_running(env: RegionRecord, name: str) -> bool:
    cp = control_plane(env)
    record = cp.records.get(name) if cp is not None else None
    return bool(record and record.alive())


def restore_silenced(env: RegionRecord) -> list[str]:
    """Resume every zone whose kwoks were left frozen (a run that died mid-silence)."""
    cp = control_plane(env)
    if cp is None:
        return []
    silenced = sorted(cp.silenced)
    for zone in silenced:
        cp.restore_zone(zone)
    return [f"restored kubernetes nodes of {zone}" for zone in silenced]


def restart_node_agents(env: RegionRecord, node: str) -> bool:
    cp = control_plane(env)
    return bool(cp and cp.restart_node(node))


def sweep_cordons(env: RegionRecord) -> list[str]:
    from harness.kube.cluster import sweep_cordons as sweep

    access = env.kube()
    return sweep(access) if access else []


def wait_nodes_ready(env: RegionRecord, timeout: float) -> None:
    """Every seed node Ready and untainted (after a fault, heartbeats take a lease period to resume)."""
    cp = control_plane(env)
    if cp is None:
        return
    wanted = [n.name for n in env.nodes]

    def not_ready() -> dict[str, str]:
        ready = cp.node_readiness()
        return {n: ready.get(n, "missing") for n in wanted if ready.get(n) != "True"}

    wait_for(not_ready, lambda pending: not pending, "every seed node Ready", timeout, interval=0.25)
