"""The AWS cloud controller manager on the local seed, against the region's local cloud (KEP-3458):
started on first use, a seed component (it stops with the seed).

What a cluster on AWS has and the local seed lacks, made first:
- each node's spec.providerID names its instance in the local cloud (aws:///<az>/<instance id>);
- the instances and subnets carry the cluster tag (kubernetes.io/cluster/<region>=owned): the
  controller registers no instance without it;
- an internet gateway and a default route to it, as a VPC whose load balancers face the internet
  has (the controller puts an internet-facing ELB only in subnets that route to one);
- an IAM user of its own (EC2 and ELB), so the cloud's request log tells its calls apart.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from harness.aws.errors import aws_call
from harness.aws.tags import tag_list
from harness.errors import ConfigError, EnvironmentStateError
from harness.kube import cloud_controller as ccm
from harness.kube.processes import ProcessRecord, log_tail
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.region import LocalEnvironment

USER = "cloud-controller"
COMPONENT = "cloud-controller-manager"
SERVICE_TAG = "kubernetes.io/service-name"  # the controller's tag on a Service's ELB: namespace/name
POLICY = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["ec2:*", "elasticloadbalancing:*"], "Resource": "*"}]}


def start_cloud_controller(env: LocalEnvironment) -> dict[str, Any]:
    """The controller running for the region's seed and cloud; its record {"process", "key" (its
    access key id: its calls in the cloud's request log), "log"}."""
    from harness.locks import held
    from harness.providers.local.cloud import ensure_cloud, workdir
    from harness.providers.local.kubernetes import start_seed_component

    kube = env.kube()
    if kube is None:
        raise ConfigError(f"region {env.spec.name!r} has no seed for a cloud controller: bring it up with "
                          "`harness up --kubernetes --cloud`")
    with held(env.config.state_dir, f"the cloud controller of region {env.spec.name}"):
        record = env.refresh().get("cloud_controller")
        if record and ProcessRecord.from_dict(record["process"]).alive():
            return dict(record)
        program = ccm.binary()
        access = ensure_cloud(env)
        cloud = env.refresh()["cloud"]
        key = _user_key(env, access)
        _tag_cluster(env, access, cloud)
        _internet_gateway(access)
        _set_provider_ids(env, access, cloud["instances"])
        first = env.zones[0]
        config = workdir(env.config, env.spec.name) / "cloud-controller.conf"
        config.write_text(ccm.cloud_config(access.region, access.az(first), access.vpc_id, cloud["subnets"][first],
                                           env.spec.name, access.endpoint_url or ""))
        process = start_seed_component(env, COMPONENT, ccm.command(program, kube.kubeconfig, config, env.spec.name), {
            "AWS_ACCESS_KEY_ID": key["id"], "AWS_SECRET_ACCESS_KEY": key["secret"], "AWS_REGION": access.region,
            "PATH": "/usr/bin:/bin"})
        record = {"process": process.to_dict(), "key": key["id"], "log": process.log}
        env.update(lambda st: st.update(cloud_controller=record))
    # Up once its service controller runs: its log says so; an exit says why at once.
    wait_for(lambda: _started(process), lambda s: s is not None, "the cloud controller manager to run its service "
             "controller", env.config.timeouts.region_up,
             give_up=lambda: None if process.alive() else f"it exited; its log ({process.log}):\n{log_tail(process.log)}")
    return record


def _started(process: ProcessRecord) -> str | None:
    text = log_tail(process.log, 200)
    return "started" if "Starting service controller" in text or "Started \"service\"" in text else None


def _user_key(env: LocalEnvironment, access: Any) -> dict[str, str]:
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


def _tag_cluster(env: LocalEnvironment, access: Any, cloud: dict[str, Any]) -> None:
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


def _set_provider_ids(env: LocalEnvironment, access: Any, instances: dict[str, str]) -> None:
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


def load_balancer_nodes(env: LocalEnvironment, namespace: str, service: str) -> list[str] | None:
    """The nodes whose instances the classic ELB of `namespace/service` holds (found by the tag the
    controller puts on it), sorted; None while there is no such ELB."""
    from harness.providers.local.cloud import cloud_access

    access = cloud_access(env.refresh())
    if access is None:
        raise EnvironmentStateError(f"region {env.spec.name!r} runs no local cloud (`harness up --cloud`)")
    elb = access.client("elb")
    with aws_call("listing the load balancers"):
        names = [d["LoadBalancerName"] for d in elb.describe_load_balancers()["LoadBalancerDescriptions"]]
        tagged = elb.describe_tags(LoadBalancerNames=names)["TagDescriptions"] if names else []
    wanted = f"{namespace}/{service}"
    name = next((t["LoadBalancerName"] for t in tagged
                 if any(tag["Key"] == SERVICE_TAG and tag["Value"] == wanted for tag in t.get("Tags", []))), None)
    if name is None:
        return None
    with aws_call(f"describing the load balancer {name}"):
        registered = elb.describe_load_balancers(LoadBalancerNames=[name])["LoadBalancerDescriptions"][0]["Instances"]
    by_instance = {i: node for node, i in env.state["cloud"]["instances"].items()}
    # A set, as on AWS: moto lists an instance registered twice twice.
    return sorted({by_instance.get(r["InstanceId"], r["InstanceId"]) for r in registered})
