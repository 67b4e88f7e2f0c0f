"""The real AWS cloud controller manager on the local seed, against the local cloud (KEP-3458): it
makes a classic ELB for a Service of type LoadBalancer with every node's instance, takes out a node
labelled for exclusion, and keeps a node that went NotReady; the cloud's request log shows its calls."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.kube import cluster
from harness.probes.load_balancer import ELB_UPDATES
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.wait import wait_for

# make nightly: the load balancer features show the same on the seed in make test (a NotReady node
# kept through a zone outage, an excluded one dropped).
pytestmark = [pytest.mark.kube, pytest.mark.region, pytest.mark.long]
NS = "lb-test"
EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"


@pytest.fixture(scope="module")
def env() -> Iterator[LocalEnvironment]:
    region = LocalRegion(load_config(overrides={"region.name": "lb", "region.subnet_prefix": "10.91"}))
    region.down()
    env = region.up()
    try:
        region.seed(env)
        region.cloud(env)
        yield env
    finally:
        region.down()


def _core(env: LocalEnvironment) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(cluster.connect(env.kube()))  # type: ignore[arg-type]


def test_the_controller_keeps_every_node_even_a_notready_one_and_drops_an_excluded_one(env: LocalEnvironment) -> None:
    record = env.start_cloud_controller()
    assert env.start_cloud_controller()["process"] == record["process"]  # once
    core = _core(env)
    core.create_namespace({"metadata": {"name": NS}})
    core.create_namespaced_service(NS, {"metadata": {"name": "web"}, "spec": {
        "type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    every = sorted(n.name for n in env.nodes)
    assert wait_for(lambda: env.load_balancer_nodes(NS, "web"), lambda n: n == every, "the ELB with every node", 60)
    svc = wait_for(lambda: core.read_namespaced_service("web", NS), lambda s: bool(s.status.load_balancer.ingress),
                   "the Service's ingress", 30)
    assert svc.status.load_balancer.ingress[0].hostname.endswith(".elb.amazonaws.com")

    # A node that goes NotReady stays in the set, and the controller changes nothing (KEP-3458).
    since = time.time()
    runner = FaultRunner(env, Timeline())
    stopped = runner.inject("aws-instance-stop", "zone-b-1")
    try:
        wait_for(lambda: {n.name: n.ready for n in cluster.node_views(cluster.connect(env.kube()))}.get("zone-b-1"),  # type: ignore[arg-type]
                 lambda ready: ready is False, "zone-b-1 NotReady", 60)
        time.sleep(3)  # a few of the controller's syncs
        assert env.load_balancer_nodes(NS, "web") == every
        updates = [r for r in env.cloud_requests(since) if r["key"] == record["key"] and r["action"] in ELB_UPDATES]
        assert updates == []
    finally:
        runner.heal(stopped)

    # A node labelled for exclusion leaves the set, and comes back without the label.
    since = time.time()
    core.patch_node("zone-a-1", {"metadata": {"labels": {EXCLUDE: "true"}}})
    assert wait_for(lambda: env.load_balancer_nodes(NS, "web"), lambda n: n == [x for x in every if x != "zone-a-1"],
                    "zone-a-1 out of the ELB", 30)
    calls = [r["action"] for r in env.cloud_requests(since) if r["key"] == record["key"] and r["action"] in ELB_UPDATES]
    assert calls == ["DeregisterInstancesFromLoadBalancer"]
    core.patch_node("zone-a-1", {"metadata": {"labels": {EXCLUDE: None}}})
    assert wait_for(lambda: env.load_balancer_nodes(NS, "web"), lambda n: n == every, "zone-a-1 back in the ELB", 30)

    core.delete_namespaced_service("web", NS)
    assert wait_for(lambda: env.load_balancer_nodes(NS, "web"), lambda n: n is None, "the ELB deleted", 30) is None
