"""The node agents run the reference's etcd and kube-apiserver pods for real on the local seed:
addresses in the node's zone, readiness from the processes, restarts, failures with reasons,
the shoot API behind the load balancer, and `harness down` taking it all away."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from kubernetes import client as k8s

from harness import netns
from harness.kube import cluster, loadbalancer, placement
from harness.probes.shoot_api import ShootApiClient, shoot_pki
from harness.topology import Seed
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.local.seed.shoot import ShootEtcd
from harness.reference.deploy import deploy
from harness.reference.render import ReferenceSpec
from harness.wait import wait_for
from tests.integration.conftest import config_for, namespaces
from tests.kube.kube_support import processes_mentioning

pytestmark = [pytest.mark.kube, pytest.mark.region]
NS = "shoot--agents"


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LocalEnvironment, Seed, LocalRegion]]:
    region = LocalRegion(config_for("ag"))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        deploy(seed, ReferenceSpec("zone", env.zones, "gep20", NS, seed.storage_class, real=True), 120)
        yield env, seed, region
    finally:
        workdir, data = env.config.state_dir / "ag", env.config.data_dir / "ag"
        region.down()
        assert processes_mentioning(str(workdir)) == [], "no agent, kube-apiserver, haproxy or pod-gc left"
        assert processes_mentioning(str(data)) == [], "no etcd member of the shoot left"
        assert namespaces("ag") == []


def _core(seed: Seed) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(cluster.connect(seed.kube))


def test_members_run_on_addresses_of_their_zone(running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    env, seed, _ = running
    pods = placement.observe(cluster.connect(seed.kube), NS)
    for p in pods:
        if p.component in ("etcd-main", "etcd-events") and p.phase == "Running":
            assert p.ip and p.ip.startswith(env.names.gateway(p.zone).rsplit(".", 1)[0] + "."), (p.name, p.ip, p.zone)
    etcd = ShootEtcd(env, seed, NS, "etcd-main")
    statuses = etcd.wait_healthy()
    assert etcd.leader(statuses) in {m.name for m in etcd.members}
    # The processes are the real thing, in the namespace of the node their pod is bound to.
    for m in etcd.members:
        assert m.client_url.split("//")[1].split(":")[0] in netns.ns_run(env.names.node_ns(m.node), ["ip", "-o", "addr"])


def test_the_shoot_api_answers_through_the_load_balancer(running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    env, seed, _ = running
    with tempfile.TemporaryDirectory() as tmp:
        client = ShootApiClient(seed.shoot_api, env.names.client_ns("zone-a"), shoot_pki(seed, NS, Path(tmp)), 2.0)
        try:
            assert client.call("GET", "/version")[1]["gitVersion"] == "v1.36.3"
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hello"}, "data": {"a": "b"}}
            assert client.call("POST", "/api/v1/namespaces/default/configmaps", body)[0] == 201
        finally:
            client.close()
    states = loadbalancer.backend_states(env.state["loadbalancer"])
    ready = {p.ip for p in placement.observe(cluster.connect(seed.kube), NS) if p.component == "kube-apiserver" and p.ready}
    assert ready and {ip for ip, s in states.items() if s == "UP"} == ready


def test_the_seed_reaches_the_members_through_its_api_as_on_a_real_seed(
        running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    """The seed's API server proxies to a member's pod (its egress goes through the region's
    router, harness.kube.egress_proxy): health and peer metrics on 2381 (plain HTTP, as etcd-druid
    serves them); the client port speaks TLS only, to clients with a certificate."""
    _, seed, _ = running
    api = cluster.connect(seed.kube)
    for member in ("etcd-main-0", "etcd-events-1"):
        health = k8s.CoreV1Api(api).connect_get_namespaced_pod_proxy_with_path(f"{member}:2381", NS, "health")
        assert json.loads(health) == {"health": "true", "reason": ""}, health
        metrics = k8s.CoreV1Api(api).connect_get_namespaced_pod_proxy_with_path(f"{member}:2381", NS, "metrics")
        assert "etcd_network_peer_sent_bytes_total" in metrics
    with pytest.raises(k8s.ApiException) as refused:  # nothing listens there: the proxy says so
        k8s.CoreV1Api(api).connect_get_namespaced_pod_proxy_with_path("etcd-main-0:2999", NS, "health")
    assert refused.value.status in (502, 503), refused.value


def test_every_apiserver_names_every_etcd_member(running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    env, seed, _ = running
    pods = placement.observe(cluster.connect(seed.kube), NS)
    urls = {c: {f"https://{p.ip}:2379" for p in pods if p.component == c} for c in ("etcd-main", "etcd-events")}
    assert all(len(u) == 3 for u in urls.values()), urls
    states = [json.loads(f.read_text()) for f in (env.config.state_dir / "ag").rglob("agent-*.json")]
    argvs = [r["argv"] for st in states for r in st.values() if r.get("kind") == "kube-apiserver"]
    assert len(argvs) == 3
    for argv in argvs:
        servers = next(a for a in argv if a.startswith("--etcd-servers=")).split("=", 1)[1].split(",")
        events = next(a for a in argv if a.startswith("--etcd-servers-overrides=")).split("#", 1)[1].split(";")
        assert set(servers) == urls["etcd-main"] and set(events) == urls["etcd-events"], argv
        assert any(a.startswith("--etcd-certfile=") for a in argv) and any(a.startswith("--etcd-cafile=") for a in argv)


def test_a_pod_marked_not_ready_by_the_node_controller_is_ready_again(
        running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    """What the node lifecycle controller does to the pods of a node that went NotReady; kwok, like
    a kubelet that is back, reports them ready again."""
    _, seed, _ = running
    core = _core(seed)
    pod = next(p for p in placement.observe(cluster.connect(seed.kube), NS)
               if p.component == "gardener-resource-manager" and p.ready)
    core.patch_namespaced_pod_status(pod.name, NS, {"status": {"conditions": [{"type": "Ready", "status": "False"}]}})

    def ready() -> bool:
        return any(p.name == pod.name and p.ready for p in placement.observe(cluster.connect(seed.kube), NS))
    wait_for(ready, bool, f"{pod.name} Ready again", 20, 0.5)


def _spare_node(env: LocalEnvironment) -> str:
    """One more machine in zone-a, its own namespace on the zone's subnet: no kwok, no pods of the reference."""
    ns = "ag-spare"
    netns.run(["ip", "netns", "add", ns])
    netns.run(["ip", "-n", env.names.router, "link", "add", "v-spare", "type", "veth", "peer", "name", "eth0", "netns", ns])
    netns.run(["ip", "-n", env.names.router, "link", "set", "v-spare", "master", env.names.bridge("zone-a"), "up"])
    for cmd in (["addr", "add", "10.77.1.50/24", "dev", "eth0"], ["link", "set", "eth0", "up"], ["link", "set", "lo", "up"],
                ["route", "add", "default", "via", env.names.gateway("zone-a")]):
        netns.run(["ip", "-n", ns, *cmd])
    return ns


def test_pods_that_cannot_start_fail_with_the_reason(running: tuple[LocalEnvironment, Seed, LocalRegion],
                                                      tmp_path: Path) -> None:
    env, seed, _ = running
    core = _core(seed)
    ns = _spare_node(env)
    # Something else holds port 443 on every address of the spare node.
    blocker = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c",
                                "import socket,time; s=socket.socket(); s.bind(('0.0.0.0', 443)); s.listen(); time.sleep(600)"])
    core.create_node(k8s.V1Node(metadata=k8s.V1ObjectMeta(name="spare", labels={"topology.kubernetes.io/zone": "zone-a"})))
    for name, kind in (("no-binary", "etcd"), ("port-taken", "kube-apiserver")):
        core.create_namespaced_pod(NS, k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name=name, labels={"ha-harness/run": kind}),
            spec=k8s.V1PodSpec(node_name="spare", containers=[k8s.V1Container(name="c", image="x")])))
    from harness.kube import ensure_binaries, sources_from_env

    agent = subprocess.Popen([
        "ip", "netns", "exec", ns, sys.executable, "-m", "harness.kube.agent", "--node=spare", "--zone=zone-a",
        f"--kubeconfig={seed.kube.kubeconfig}", f"--workdir={tmp_path}", f"--logs={tmp_path}", f"--volumes={tmp_path}",
        "--zone-subnets=zone-a=10.77.1,zone-b=10.77.2,zone-c=10.77.3", "--pool=10.77.1.240-241", "--host-ip=10.77.1.50",
        "--etcd=/nonexistent/etcd", f"--kube-apiserver={ensure_binaries(sources_from_env()).kube_apiserver}"])
    try:
        for name, reason in (("no-binary", "the etcd binary /nonexistent/etcd does not exist"),
                             ("port-taken", "address already in use")):
            failed = wait_for(lambda: core.read_namespaced_pod(name, NS), lambda p: p.status.phase == "Failed",
                              f"{name} Failed", 60)
            assert failed.status.reason == "StartError" and reason in failed.status.message, failed.status.message
            events = core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
            assert [e.reason for e in events] == ["FailedToStart"] and events[0].type == "Warning"
            assert reason in events[0].message
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
        blocker.kill()
        for name in ("no-binary", "port-taken"):
            core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
        core.delete_node("spare")
        netns.run(["ip", "netns", "del", ns], check=False)


def test_a_member_that_dies_is_restarted_from_its_data(running: tuple[LocalEnvironment, Seed, LocalRegion]) -> None:
    """member-kill through the fault runner, on a member the scheduler placed, as on the region's own."""
    from harness.faults.runner import FaultRunner
    from harness.timeline import Timeline

    env, seed, _ = running
    core = _core(seed)
    pod = core.read_namespaced_pod("etcd-main-1", NS)
    etcd = ShootEtcd(env, seed, NS, "etcd-main")
    runner = FaultRunner(etcd, Timeline())
    active = runner.inject("member-kill", "etcd-main-1")
    restarted = wait_for(lambda: core.read_namespaced_pod("etcd-main-1", NS),
                         lambda p: p.status.container_statuses[0].restart_count == 1 and p.status.container_statuses[0].ready,
                         "etcd-main-1 restarted and ready", 30)
    assert restarted.metadata.uid == pod.metadata.uid and restarted.status.pod_ip == pod.status.pod_ip
    runner.heal(active)  # waits for the member to answer, then for the cluster to be whole and caught up
    assert etcd.faults() == [] and env.faults() == []
