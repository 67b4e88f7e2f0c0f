"""machine-controller-manager for the local seed's own nodes, against the region's local cloud:
seed components (they stop with the seed), started by a scenario that asks for them.

The seed is both MCM's control cluster (the Machines, in NAMESPACE) and its target (the nodes).
Each node's instance in the local cloud becomes its Machine's; the machine controller calls EC2
with the machine controller's own credentials (those `aws-revoke-credentials` revokes), so a
zone outage on AWS reaches the machines as in GEP-20's tables.

Once it has declared a machine failed, MCM replaces it and terminates its instance as soon as
the credentials work again; the local cloud then kills that node. Stop it before a revoked
credential is restored unless that is what the scenario wants (the step that starts it stops it
at teardown, before the faults heal), and run it on a region of the scenario's own.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import yaml

from harness.aws.errors import aws_call
from harness.errors import ConfigError, EnvironmentStateError
from harness.kube import cluster
from harness.kube import machine_controller as mc
from harness.processes import ProcessRecord, terminate
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

NAMESPACE = "ha-harness-machines"
COMPONENTS = {"manager": "machine-controller-manager", "machines": "machine-controller"}
STOP_GRACE_S = 5.0


def start_machine_controllers(env: RegionRecord, health_timeout_s: float, drain_timeout_s: float) -> str:
    """Every node a Machine of a MachineSet per zone, MCM's controllers running and every Machine
    Running; returns the Machines' namespace."""
    from kubernetes import client as k8s

    from harness.providers.local.cloud.account import ensure_cloud
    from harness.providers.local.seed.kubernetes import start_seed_component

    kube = env.kube()
    if kube is None:
        raise ConfigError(f"region {env.spec.name!r} has no seed for machine-controller-manager: bring it up with "
                          "`harness up --kubernetes --cloud`")
    if env.refresh().get("machine_controllers"):
        raise EnvironmentStateError(f"machine-controller-manager already runs on region {env.spec.name!r}")
    program = mc.binary()
    access = ensure_cloud(env)
    cloud = env.refresh()["cloud"]
    if access.machine_credentials is None or access.image_id is None:
        raise EnvironmentStateError(f"the local cloud of region {env.spec.name!r} has no machine controller user")
    api = cluster.connect(kube)
    cluster.apply(api, [yaml.safe_load(path.read_text()) for path in mc.crd_files()])
    custom = k8s.CustomObjectsApi(api)
    wait_for(lambda: _served(custom), bool, "the seed to serve the Machine API", env.config.timeouts.deploy)
    secret = {"accessKeyID": access.machine_credentials.access_key_id or "",
              "secretAccessKey": access.machine_credentials.secret_access_key or "",
              "region": access.region, "endpoint": access.endpoint_url or ""}
    zones = {z: {"subnet": cloud["subnets"][z], "availability_zone": access.az(z), "image_id": access.image_id,
                 "instance_type": access.instance_type} for z in env.zones}
    nodes = {n.name: n.zone for n in env.nodes}
    # MCM deletes the Node of a machine it gives up on: what makes it again at stop, kept first.
    kept = {name: cluster.node_record(api, name) for name in nodes}
    env.update(lambda st: st.update(machine_controllers={"namespace": NAMESPACE, "processes": {}, "nodes": kept}))
    cluster.apply(api, mc.objects(NAMESPACE, zones, secret, nodes))
    cluster.apply(api, mc.machine_sets(NAMESPACE, {z: sum(1 for zone in nodes.values() if zone == z) for z in env.zones}))
    for which, name in COMPONENTS.items():
        record = start_seed_component(env, name, mc.command(program, which, kube.kubeconfig, NAMESPACE, _free_port(),
                                                              health_timeout_s, drain_timeout_s))
        env.update(lambda st, n=name, r=record: st["machine_controllers"]["processes"].update({n: r.to_dict()}))

    def not_running() -> list[str]:
        return [f"{m['name']} {m['phase'] or 'new'}" for m in machines(custom) if m["phase"] != "Running"]

    wait_for(not_running, lambda left: not left, f"every node's Machine Running in {NAMESPACE}",
             env.config.timeouts.deploy, interval=0.5,
             give_up=lambda: next((f"{n} exited; its log: {r.log}" for n, r in _records(env).items() if not r.alive()), None))
    return NAMESPACE


def machines(custom: Any, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """Each Machine's name, zone (its pool), phase (status.currentStatus.phase; "" before its
    first) and node, as the seed's API says."""
    with cluster.api_errors(f"listing the machines in {namespace}"):
        items = custom.list_namespaced_custom_object(mc.GROUP, mc.VERSION, namespace, "machines")["items"]
    return [{"name": m["metadata"]["name"], "zone": m["metadata"].get("labels", {}).get(mc.POOL_LABEL),
             "phase": ((m.get("status") or {}).get("currentStatus") or {}).get("phase", ""),
             "node": m["metadata"].get("labels", {}).get("node"),
             "deleting": bool(m["metadata"].get("deletionTimestamp"))} for m in items]


def stop_machine_controllers(env: RegionRecord) -> list[str]:
    """Stop both controllers, then remove what they kept: the Machine objects (their finalizers
    are MCM's), the namespace and the instances made for new Machines; and give back what they
    took: a node whose instance MCM terminated gets a new one (the reconciler then brings the node
    back), and its Node object again. Returns what was done."""
    from kubernetes import client as k8s

    record = env.refresh().get("machine_controllers")
    if not record:
        return []
    done = []
    for name, process in _records(env).items():
        terminate(process, STOP_GRACE_S)
        done.append(f"stopped {name}")
    kube = env.kube()
    if kube is not None:
        api = cluster.connect(kube)
        custom = k8s.CustomObjectsApi(api)
        for plural in ("machinedeployments", "machinesets", "machines", "machineclasses"):
            _unfinalize(custom, record["namespace"], plural)
        with cluster.api_errors(f"deleting namespace {record['namespace']}"):
            try:
                k8s.CoreV1Api(api).delete_namespace(record["namespace"])
            except cluster.KubeApiError as e:
                if e.status != 404:
                    raise
        done.append(f"deleted namespace {record['namespace']}")
    done += _terminate_made_instances(env)
    done += _restore_nodes(env, record.get("nodes") or {})
    env.update(lambda st: st.pop("machine_controllers", None))
    return done


def _records(env: RegionRecord) -> dict[str, ProcessRecord]:
    record = env.refresh().get("machine_controllers") or {}
    return {n: ProcessRecord.from_dict(p) for n, p in record.get("processes", {}).items()}


def _served(custom: Any) -> bool:
    try:
        machines(custom)
    except cluster.KubeApiError:
        return False
    return True


def _unfinalize(custom: Any, namespace: str, plural: str) -> None:
    with cluster.api_errors(f"listing {plural} in {namespace}"):
        try:
            items = custom.list_namespaced_custom_object(mc.GROUP, mc.VERSION, namespace, plural)["items"]
        except cluster.KubeApiError as e:
            if e.status == 404:
                return
            raise
    for item in items:
        name = item["metadata"]["name"]
        with cluster.api_errors(f"removing the finalizers of {plural}/{name}"):
            custom.patch_namespaced_custom_object(mc.GROUP, mc.VERSION, namespace, plural, name,
                                                  {"metadata": {"finalizers": None}})


def _terminate_made_instances(env: RegionRecord) -> list[str]:
    """Instances the machine controller ran for new Machines (tagged with a class, not a node's)."""
    from harness.providers.local.cloud.account import cloud_access

    state = env.refresh()
    access = cloud_access(state)
    if access is None:
        return []
    own = set((state.get("cloud") or {}).get("instances", {}).values())
    ec2 = access.client("ec2")
    with aws_call("listing the instances machine-controller-manager made"):
        found = [i["InstanceId"] for r in ec2.describe_instances(Filters=[
            {"Name": "tag-key", "Values": [mc.CLASS_TAG]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])["Reservations"]
            for i in r["Instances"] if i["InstanceId"] not in own]
    if found:
        with aws_call(f"terminating {', '.join(found)}"):
            ec2.terminate_instances(InstanceIds=found)
    return [f"terminated instance {i}" for i in found]


def _restore_nodes(env: RegionRecord, kept: dict[str, dict[str, Any]]) -> list[str]:
    """The nodes whose instances MCM terminated on new instances, running again, and the Node
    objects MCM deleted made again from what was kept before it started."""
    from harness.providers.local.cloud.account import replace_terminated

    done: list[str] = []
    for node, (old, new) in replace_terminated(env, [n.name for n in env.nodes]).items():
        done.append(f"node {node}: instance {old} was terminated, new instance {new}")
        record = kept.get(node, {}).get("spec") or {}
        if str(record.get("providerID", "")).endswith(old):
            record["providerID"] = record["providerID"].removesuffix(old) + new
    kube = env.kube()
    if kube is not None and kept:
        api = cluster.connect(kube)
        present = {n.name for n in cluster.node_views(api)}
        for name, node in kept.items():
            if name not in present and cluster.make_node(api, node):
                done.append(f"made node {name} again")
    return done


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

