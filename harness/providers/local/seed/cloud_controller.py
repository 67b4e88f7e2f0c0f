"""The AWS cloud controller manager on the local seed, against the region's local cloud (KEP-3458):
started on first use, a seed component (it stops with the seed).

What a cluster on AWS has and the local seed lacks, made first:
- each node's spec.providerID names its instance in the local cloud (aws:///<az>/<instance id>);
- the instances and subnets carry the cluster tag (kubernetes.io/cluster/<region>=owned): the
  controller registers no instance without it;
- an internet gateway and a default route to it, as a VPC whose load balancers face the internet
  has (the controller puts an internet-facing ELB only in subnets that route to one);
- an IAM user of its own (EC2 and ELB), so the cloud's request log tells its calls apart;
- kube-proxy on every node, serving the node ports the ELBs (made real by the cloud's
  reconciler, harness.providers.local.cloud.elb) send their traffic to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import netns
from harness.aws.errors import aws_call
from harness.aws.tags import tag_list
from harness.errors import ConfigError, EnvironmentStateError
from harness.kube import cloud_controller as ccm
from harness.processes import ProcessRecord, log_tail, terminate
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

USER = "cloud-controller"
COMPONENT = "cloud-controller-manager"
SERVICE_TAG = "kubernetes.io/service-name"  # the controller's tag on a Service's ELB: namespace/name
STOP_GRACE_S = 5.0
POLICY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ec2:*", "elasticloadbalancing:*"], "Resource": "*"}]}


def start_cloud_controller(env: RegionRecord, version: str | None = None) -> dict[str, Any]:
    """The controller of that release (None: the current one) running for the region's seed and
    cloud, started on first use, or in place of one of another release; its record {"process",
    "key" (its access key id: its calls in the cloud's request log), "log", "version",
    "stable_node_set"}."""
    from harness.locks import held
    from harness.providers.local.cloud.account import ensure_cloud, workdir
    from harness.providers.local.seed.kubernetes import start_seed_component

    wanted = ccm.release(version)
    kube = env.kube()
    if kube is None:
        raise ConfigError(f"region {env.spec.name!r} has no seed for a cloud controller: bring it up with "
                          "`harness up --kubernetes --cloud`")
    with held(env.config.state_dir, f"the cloud controller of region {env.spec.name}"):
        record = env.refresh().get("cloud_controller")
        if record and ProcessRecord.from_dict(record["process"]).alive():
            if record.get("version", ccm.CURRENT.version) == wanted.version:
                return dict(record)
            # The Services being deleted keep their finalizer until their controller has deleted
            # their load balancers: let it finish before it goes.
            _await_load_balancer_cleanup(env)
            terminate(ProcessRecord.from_dict(record["process"]), STOP_GRACE_S)
        program = ccm.binary(version=wanted.version)
        _start_kube_proxies(env, kube.kubeconfig)
        access = ensure_cloud(env)
        cloud = env.refresh()["cloud"]
        key = _user_key(env, access)
        _tag_cluster(env, access, cloud)
        _internet_gateway(access)
        _set_provider_ids(env, access, cloud["instances"])
        first = env.zones[0]
        config = workdir(env.config, env.spec.name) / "cloud-controller.conf"
        config.write_text(ccm.cloud_config(access.region, access.az(first), access.vpc_id, cloud["subnets"][first],
                                           env.spec.name, access.endpoint_url or "", wanted))
        # Its log is appended to by each start: only what this one writes tells whether it runs.
        log = Path(record["log"]) if record else None
        offset = log.stat().st_size if log and log.exists() else 0
        process = start_seed_component(env, COMPONENT, ccm.command(program, kube.kubeconfig, config, env.spec.name), {
            "AWS_ACCESS_KEY_ID": key["id"], "AWS_SECRET_ACCESS_KEY": key["secret"], "AWS_REGION": access.region,
            "PATH": "/usr/bin:/bin"})
        record = {"process": process.to_dict(), "key": key["id"], "log": process.log, "version": wanted.version,
                  "stable_node_set": wanted.stable_node_set}
        env.update(lambda st: st.update(cloud_controller=record))
    # Up once its service controller runs: its log says so; an exit says why at once.
    wait_for(lambda: _started(process, offset), lambda s: s is not None, "the cloud controller manager to run its service "
             "controller", env.config.timeouts.region_up,
             give_up=lambda: None if process.alive() else f"it exited; its log ({process.log}):\n{log_tail(process.log)}")
    return record


def _await_load_balancer_cleanup(env: RegionRecord) -> None:
    from kubernetes import client as k8s

    from harness.kube import cluster

    core = k8s.CoreV1Api(cluster.connect(env.kube()))  # type: ignore[arg-type]

    def pending() -> list[str]:
        with cluster.api_errors("listing the services"):
            items = core.list_service_for_all_namespaces().items
        return [f"{s.metadata.namespace}/{s.metadata.name}" for s in items
                if s.metadata.deletion_timestamp and s.spec.type == "LoadBalancer"]

    wait_for(pending, lambda left: not left, "the cloud controller to delete the load balancers of the Services being "
             "deleted", env.config.timeouts.deploy)


def _start_kube_proxies(env: RegionRecord, kubeconfig: Any) -> None:
    """kube-proxy on every node (in its namespace), for the node ports the load balancers send
    to; seed components, restarted with their node."""
    from harness.kube import kube_proxy
    from harness.providers.local.seed.kubernetes import seed_component_running, start_seed_component

    program = kube_proxy.binary()
    for node in env.nodes:
        if seed_component_running(env, f"kube-proxy-{node.name}"):
            continue
        # A node forwards what kube-proxy sends on to a pod on another node (a CNI sets this);
        # out of the interface it came in on, so no redirects to tell the sender about.
        netns.ns_run(env.names.node_ns(node.name), ["sysctl", "-qw", "net.ipv4.ip_forward=1",
                                                    "net.ipv4.conf.all.send_redirects=0",
                                                    "net.ipv4.conf.eth0.send_redirects=0"])
        start_seed_component(env, f"kube-proxy-{node.name}", [
            "ip", "netns", "exec", env.names.node_ns(node.name),
            *kube_proxy.command(program, kubeconfig, node.name, node.address)])


def _started(process: ProcessRecord, offset: int) -> str | None:
    with open(process.log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return "started" if "Starting service controller" in text or "Started \"service\"" in text else None


def _user_key(env: RegionRecord, access: Any) -> dict[str, str]:
    """The controller's own IAM user and key, made once."""
    known = (env.state.get("cloud") or {}).get("controller_key")
    if known:
        return dict(known)
    iam = access.client("iam")
    with aws_call(f"creating the cloud controller's user {USER}"):
        iam.create_user(UserName=USER)
        iam.put_user_policy(UserName=USER, PolicyName="ec2-elb", PolicyDocument=json.dumps(POLICY))
        made = iam.create_access_key(UserName=USER)["AccessKey"]
    key = {"id": made["AccessKeyId"], "secret": made["SecretAccessKey"]}
    env.update(lambda st: st["cloud"].update(controller_key=key))
    return key


def _tag_cluster(env: RegionRecord, access: Any, cloud: dict[str, Any]) -> None:
    resources = [*cloud["instances"].values(), *cloud["subnets"].values()]
    with aws_call("tagging the instances and subnets as the cluster's"):
        access.client("ec2").create_tags(Resources=resources, Tags=tag_list({
            f"{ccm.CLUSTER_TAG_PREFIX}{env.spec.name}": "owned"}))


def _internet_gateway(access: Any) -> None:
    ec2 = access.client("ec2")
    with aws_call("giving the VPC an internet gateway and a default route to it"):
        attached = ec2.describe_internet_gateways(Filters=[{"Name": "attachment.vpc-id", "Values": [access.vpc_id]}])
        if attached["InternetGateways"]:
            return
        gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
        ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=access.vpc_id)
        main = ec2.describe_route_tables(Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]},
                                                  {"Name": "association.main", "Values": ["true"]}])["RouteTables"][0]
        ec2.create_route(RouteTableId=main["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)


def _set_provider_ids(env: RegionRecord, access: Any, instances: dict[str, str]) -> None:
    """Each node's instance, as a kubelet with --cloud-provider=external and the node controller
    would have set it; an id that names another instance is an error, not overwritten."""
    from kubernetes import client as k8s

    from harness.kube import cluster

    core = k8s.CoreV1Api(cluster.connect(env.kube()))  # type: ignore[arg-type]
    for node in env.nodes:
        wanted = ccm.provider_id(access.az(node.zone), instances[node.name])
        with cluster.api_errors(f"reading node {node.name}"):
            current = core.read_node(node.name).spec.provider_id
        if current == wanted:
            continue
        if current:
            raise EnvironmentStateError(f"node {node.name} has provider id {current!r}, not its instance's {wanted!r}")
        with cluster.api_errors(f"setting the provider id of node {node.name}"):
            core.patch_node(node.name, {"spec": {"providerID": wanted}})


def _elb_of(env: RegionRecord, namespace: str, service: str) -> tuple[Any, str | None]:
    """The ELB client and the name of the classic ELB of `namespace/service` (found by the tag
    the controller puts on it); None while there is none."""
    from harness.providers.local.cloud.account import cloud_access

    access = cloud_access(env.refresh())
    if access is None:
        raise EnvironmentStateError(f"region {env.spec.name!r} runs no local cloud (`harness up --cloud`)")
    elb = access.client("elb")
    with aws_call("listing the load balancers"):
        names = [d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"]]
        tagged = elb.describe_tags(LoadBalancerNames=names)["TagDescriptions"] if names else []
    wanted = f"{namespace}/{service}"
    return elb, next((t["LoadBalancerName"] for t in tagged
                      if any(tag["Key"] == SERVICE_TAG and tag["Value"] == wanted for tag in t.get("Tags", []))), None)


def load_balancer_nodes(env: RegionRecord, namespace: str, service: str) -> list[str] | None:
    """The nodes whose instances the classic ELB of `namespace/service` holds, sorted; None while
    there is no such ELB."""
    elb, name = _elb_of(env, namespace, service)
    if name is None:
        return None
    with aws_call(f"describing the load balancer {name}"):
        registered = elb.describe_load_balancers(LoadBalancerNames=[name])["LoadBalancerDescriptions"][0]["Instances"]
    by_instance = {i: node for node, i in env.state["cloud"]["instances"].items()}
    # A set, as on AWS: moto lists an instance registered twice twice.
    return sorted({by_instance.get(r["InstanceId"], r["InstanceId"]) for r in registered})


def _haproxy(env: RegionRecord, namespace: str, service: str) -> dict[str, Any] | None:
    """The reconciler's record of the HAProxy that is the Service's ELB; None while it has none."""
    from harness.providers.local.cloud.account import status_path

    _, name = _elb_of(env, namespace, service)
    try:
        elbs = json.loads(status_path(env.config, env.spec.name).read_text()).get("elbs") or {}
    except (OSError, ValueError):
        return None
    return elbs.get(name) if name else None


def load_balancer_endpoint(env: RegionRecord, namespace: str, service: str) -> tuple[str, int, str | None] | None:
    """Where a client on the internet reaches the Service's ELB (its DNS name, resolved): the address
    of its HAProxy on the load-balancer subnet, its first listener's port, from the router's
    namespace (outside every zone, as the internet is)."""
    elb = _haproxy(env, namespace, service)
    return (elb["address"], int(elb["shape"]["listeners"][0][0]), env.names.router) if elb else None


def load_balancer_health(env: RegionRecord, namespace: str, service: str) -> dict[str, str]:
    """Registered node -> InService or OutOfService, as the ELB's own health checks have it
    (DescribeInstanceHealth's states; moto runs no checks, its HAProxy does)."""
    from harness.providers.local.cloud.elb import server_states

    elb = _haproxy(env, namespace, service)
    if elb is None:
        return {}
    states = server_states(elb["record"])
    return {node: "InService" if states.get(node) == "UP" else "OutOfService" for node in elb["registered"]}
