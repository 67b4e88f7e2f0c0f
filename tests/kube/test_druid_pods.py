"""etcd-druid runs the shoot's etcds on the local seed for real: the reference control plane in the
gardener form, deployed as `harness deploy --form gardener --real --druid` deploys it. gardenlet's
own component code makes the Etcd resources, etcd-druid (real) makes their StatefulSets, and the
node agents run each pod in a sandbox of its own with the real etcd-backup-restore, etcd-wrapper's
stand-in and the real etcd, configured as druid generated it; the reference's kube-apiservers store
the shoot's objects there. Judged by what druid itself reports, by the members and by the shoot API."""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Iterator

import pytest
from kubernetes import client as k8s

from harness import netns
from harness.errors import WaitTimeout
from harness.kube import cluster, druid, druid_pods
from harness.probes.etcd_status import read_of
from harness.probes.shoot_api import ShootApiClient, ShootApiError, load_balancer, shoot_pki
from harness.providers.base import reach
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.reference.deploy import deploy, undeploy
from harness.reference.render import ReferenceSpec
from harness.wait import wait_for
from tests.integration.conftest import cli, config_for, namespaces
from tests.kube.kube_support import processes_mentioning

pytestmark = [pytest.mark.kube, pytest.mark.region]
NS = "shoot--harness--druid-pods"
ETCDS = ("etcd-main", "etcd-events")
# A new druid cluster is Ready about 2.5 minutes after its Etcd resources (docs/guides/reference.md);
# the kube-apiservers serve once etcd-main does.
DEPLOY_TIMEOUT_S = 420.0


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LocalEnvironment, Any]]:
    """The reference in the gardener form, running for real, its etcds gardenlet's Etcd resources
    that etcd-druid makes, as `harness deploy --form gardener --real --druid` deploys it."""
    region = LocalRegion(config_for("dp"))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        env.start_resource_manager()
        env.start_etcd_druid()
        deploy(seed, ReferenceSpec("zone", env.zones, "gardener", NS, seed.storage_class, real=True, druid=True),
               DEPLOY_TIMEOUT_S)
        yield env, cluster.connect(seed.kube)
        # Removed as `harness undeploy` removes it (the last test already did, druid down): the
        # Etcd resources first (druid's finalizer let go), the namespace and its volumes gone.
        undeploy(seed, NS, 120.0)
        assert _etcd_resources(cluster.connect(seed.kube)) == []
    finally:
        workdir = env.config.state_dir / "dp"
        region.down()
        assert processes_mentioning(str(workdir)) == [], "no druid pod's container left"
        assert [p for n in env.nodes for p in netns.pod_pids(env.names.node_ns(n.name))] == [], "no pod sandbox left"
        assert namespaces("dp") == []


def _etcd_resources(api: Any) -> list[str]:
    group, version, plural = druid.ETCDS_API
    return [i["metadata"]["name"] for i in k8s.CustomObjectsApi(api).list_namespaced_custom_object(
        group, version, NS, plural)["items"]]


def _statuses(api: Any) -> dict[str, Any]:
    return {name: druid.etcd_status(api, NS, name) for name in ETCDS}


def _all_ready(seen: dict[str, Any]) -> bool:
    return all(read_of(0.0, name, status, time.time()).all_ready for name, status in seen.items())


def _await_all_ready(api: Any, timeout: float) -> dict[str, Any]:
    return wait_for(lambda: _statuses(api), _all_ready,
                    "etcd-druid to report etcd-main and etcd-events ready, every member ready", timeout, interval=2.0)


def test_druid_reports_both_etcds_ready_with_a_member_in_each_zone(running: tuple[LocalEnvironment, Any]) -> None:
    """druid's own status: Ready, 3 ready replicas, every member ready (each member's lease renewed
    by its etcd-backup-restore, which needs its etcd to answer); the pods one per zone."""
    env, api = running
    # A new cluster takes about 2.5 minutes here: each member's etcd-backup-restore first waits out
    # its checks for a running cluster to join (docs/guides/reference.md).
    seen = _await_all_ready(api, 360.0)
    assert _all_ready(seen)
    core = k8s.CoreV1Api(api)
    zones = {n.metadata.name: n.metadata.labels[cluster.ZONE_LABEL] for n in core.list_node().items}
    for name in ETCDS:
        pods = core.list_namespaced_pod(NS, label_selector=f"app.kubernetes.io/part-of={name}").items
        assert sorted(zones[p.spec.node_name] for p in pods) == sorted(env.zones), name
        # The members' leases, renewed by their etcd-backup-restore from what their member says:
        # <member id>:<cluster id>:<role>, one cluster, one leader.
        holders = [k8s.CoordinationV1Api(api).read_namespaced_lease(p.metadata.name, NS).spec.holder_identity
                   for p in pods]
        assert all(h and h.count(":") == 2 for h in holders), holders
        assert len({h.split(":")[1] for h in holders}) == 1, holders
        assert sorted(h.split(":")[2] for h in holders) == ["Leader", "Member", "Member"], holders


def _members_answer(etcd: Any, api: Any, timeout: float) -> None:
    """Every member answers the harness, they agree on a leader and are caught up; else where the
    pods are."""
    try:
        etcd.wait_healthy(timeout)
    except WaitTimeout as e:
        pods = [(p.metadata.name, p.metadata.uid[:8], p.spec.node_name, p.status.pod_ip)
                for p in k8s.CoreV1Api(api).list_namespaced_pod(NS).items]
        raise AssertionError(f"{e}; the pods: {pods}") from None


def _druids_pods(core: Any) -> dict[str, str]:
    """etcd-druid's pods (the members) by name, each with its uid."""
    return {p.metadata.name: p.metadata.uid
            for p in core.list_namespaced_pod(NS, label_selector="=".join(druid_pods.MANAGED_BY)).items}


def _shoot_write(env: LocalEnvironment, zone: str, name: str, timeout: float) -> int:
    """A ConfigMap created through the shoot API's load balancer by a client in `zone`, retried
    until the API takes it; its resourceVersion (etcd-main's revision of the write)."""
    import tempfile
    from pathlib import Path

    seed = LocalRegion(config_for("dp")).seed(env)
    address = load_balancer(seed, NS)
    host, port, ns = reach(env, zone, address, 443)
    with tempfile.TemporaryDirectory() as tmp:
        client = ShootApiClient(address, ns, shoot_pki(seed, NS, Path(tmp)), 2.0,
                                None if (host, port) == (address, 443) else (host, port))

        def create() -> int | str:
            try:
                _, made = client.call("POST", "/api/v1/namespaces/default/configmaps",
                                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            except ShootApiError as e:
                return str(e)
            return int(made["metadata"]["resourceVersion"])

        try:
            return wait_for(create, lambda got: isinstance(got, int),
                            f"the shoot API to take ConfigMap {name} from zone {zone}", timeout, interval=1.0)
        finally:
            client.close()


def test_the_shoot_api_is_served_from_druids_etcd_main(running: tuple[LocalEnvironment, Any]) -> None:
    """The reference's kube-apiservers store the shoot's objects in the etcd-main etcd-druid runs:
    a ConfigMap created through the load balancer is under its registry key in every member."""
    from harness.providers.local.seed.shoot import ShootEtcd

    env, api = running
    revision = _shoot_write(env, env.zones[0], "through-druid", 60.0)
    etcd = ShootEtcd(env, LocalRegion(config_for("dp")).seed(env), NS, "etcd-main")
    _members_answer(etcd, api, 60.0)
    for member in etcd.members:
        stored = etcd.client(member.name).get("/registry/configmaps/default/through-druid", serializable=True)
        assert stored is not None and b"through-druid" in stored, (member.name, stored)
    assert max(st.revision for st in etcd.status().values() if not isinstance(st, str)) >= revision


def _pause_pid(pod: str) -> int | None:
    """The pause process holding `pod`'s sandbox (its last argument names its node and pod)."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                last = f.read().rstrip(b"\0").rsplit(b"\0", 1)[-1].decode(errors="replace")
        except (OSError, ValueError):
            continue
        if last.startswith(netns.POD_MARK) and last.endswith(f"/{pod}") and entry.isdigit():
            return int(entry)
    return None


def test_a_pod_whose_sandbox_died_runs_again_in_a_new_one_on_its_address(running: tuple[LocalEnvironment, Any]) -> None:
    """A member's pause process killed (its network namespace lost, as when a container runtime
    loses a sandbox): the node agent stops its containers and starts the pod again in a new
    sandbox on the same address, though the old namespace's veth may outlive it for a minute
    (the agent deletes it first); the member answers again and druid reports every member ready."""
    from harness.providers.local.seed.shoot import ShootEtcd

    env, api = running
    etcd = ShootEtcd(env, LocalRegion(config_for("dp")).seed(env), NS, "etcd-events")
    _members_answer(etcd, api, 60.0)
    old = _pause_pid("etcd-events-0")
    assert old is not None, "etcd-events-0 runs in a sandbox"
    os.kill(old, signal.SIGKILL)
    new = wait_for(lambda: _pause_pid("etcd-events-0"), lambda pid: pid not in (None, old),
                   "etcd-events-0 in a new sandbox", 60.0)
    assert new != old
    _members_answer(etcd, api, 90.0)
    _await_all_ready(api, 120.0)


def test_a_zone_outage_leaves_etcd_main_quorate_and_druid_restarted_meanwhile_changes_nothing(
        running: tuple[LocalEnvironment, Any]) -> None:
    """The region's zone-outage fault, as the features inject it, on druid's pods, in the leader's
    zone: the harness reaches etcd-main's members as any shoot etcd's (ShootEtcd, with the client
    certificate from druid's Secrets); the two members outside the cut zone elect a leader and take
    a write; druid killed and started again meanwhile deletes and recreates nothing and keeps
    reporting the etcd Ready (quorate); the shoot API takes a write through a zone that stayed (its
    kube-apiservers there reach the two members left); after the heal the cut member has caught up and every
    member is ready again."""
    from harness.faults.runner import FaultRunner
    from harness.providers.local.seed.shoot import ShootEtcd
    from harness.timeline import Timeline

    env, api = running
    _await_all_ready(api, 360.0)
    etcd = ShootEtcd(env, LocalRegion(config_for("dp")).seed(env), NS, "etcd-main")
    _members_answer(etcd, api, 60.0)
    leader = etcd.leader()
    assert leader is not None
    etcd.client(leader).put("before-outage", "kept")
    core = k8s.CoreV1Api(api)
    uids = _druids_pods(core)
    cut = etcd.member(leader).zone
    rest = [m.name for m in etcd.members if m.zone != cut]
    runner = FaultRunner(env, Timeline())
    active = runner.inject("zone-outage", cut)
    try:
        new_leader = wait_for(lambda: etcd.leader({n: st for n, st in etcd.status().items() if n in rest}),
                              lambda got: got in rest, f"etcd-main's members outside {cut} agreeing on a leader "
                              "among them", 30.0)
        etcd.client(new_leader).put("during-outage", "written")
        assert etcd.client(rest[0]).get("before-outage") == b"kept"
        _shoot_write(env, next(z for z in env.zones if z != cut), "during-outage", 60.0)
        down = runner.inject("etcd-druid-down", druid.NAME)  # the fault the features' "etcd-druid goes down" injects
        assert not env.etcd_druid_running()
        runner.heal(down)
        assert env.etcd_druid_running()
        for _ in range(10):  # druid reconciles what it finds on start: watch it do so
            read = read_of(0.0, "etcd-main", druid.etcd_status(api, NS, "etcd-main"), time.time())
            assert read.quorate, read.says()
            time.sleep(1.0)
        assert _druids_pods(core) == uids
    finally:
        runner.heal(active)
    _members_answer(etcd, api, 120.0)
    assert etcd.client(leader).get("during-outage", serializable=True) == b"written"  # the cut member caught up
    _await_all_ready(api, 120.0)


def test_undeploy_with_etcd_druid_down_leaves_nothing_and_harness_heal_starts_it(
        running: tuple[LocalEnvironment, Any]) -> None:
    """`harness fault etcd-druid-down etcd-druid` (in a process of its own, as after a crash): the
    Secrets the Etcds name still carry druid's finalizer, which druid would have taken off once the
    Etcds were gone; undeploy lets go of it, so the namespace goes. `harness heal` (from the ledger)
    starts druid again. (The fixture's own undeploy then finds nothing.)"""
    env, api = running
    wrong = cli("--name", "dp", "fault", "etcd-druid-down", "zone-a")
    assert wrong.returncode == 2 and "takes 'etcd-druid', got 'zone-a'" in wrong.stderr, wrong.stderr
    cli("--name", "dp", "fault", "etcd-druid-down", "etcd-druid", check=True)
    assert not env.etcd_druid_running()
    held = [s.metadata.name for s in k8s.CoreV1Api(api).list_namespaced_secret(NS).items
            if druid.FINALIZER in (s.metadata.finalizers or [])]
    assert held, "druid put its finalizer on the Secrets its Etcds name"
    undeploy(LocalRegion(config_for("dp")).seed(env), NS, 120.0)
    assert _etcd_resources(api) == []
    assert NS not in [n.metadata.name for n in k8s.CoreV1Api(api).list_namespace().items]
    healed = cli("--name", "dp", "heal", check=True)
    assert "healed etcd-druid-down:etcd-druid" in healed.stdout, healed.stdout
    assert env.etcd_druid_running()
