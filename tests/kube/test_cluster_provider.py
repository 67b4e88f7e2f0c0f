"""The cluster provider, for real: a local seed stands in for an existing cluster, reached only
through its kubeconfig. The same placement features run on it from a bare project directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from harness.kube import cluster
from harness.providers.base import Seed
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.conftest import cli, config_for, namespaces

pytestmark = [pytest.mark.kube, pytest.mark.region]
FEATURES = Path(__file__).parents[2] / "features"


@pytest.fixture(scope="module")
def existing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalEnvironment, Seed, Path]]:
    """A local seed whose kubeconfig is copied elsewhere, as a team would be handed one."""
    region = LocalRegion(config_for("cq"))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        kubeconfig = tmp_path_factory.mktemp("existing") / "kubeconfig"
        shutil.copy(seed.kube.kubeconfig, kubeconfig)
        yield env, seed, kubeconfig
    finally:
        region.down()
    assert namespaces("cq") == []


def test_the_placement_features_run_on_an_existing_cluster(
    pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path]
) -> None:
    _, _, kubeconfig = existing
    pytester.makefile(".feature", placement=(FEATURES / "placement.feature").read_text())
    pytester.makepyfile(test_placement="from pytest_bdd import scenarios\nscenarios('placement.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n'
                                             f'state_dir = "{pytester.path / "state"}"\n'
                                             f'[provider]\nstorage_class = "harness-zonal"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "--provider", "cluster",
                                           "--kubeconfig", str(kubeconfig), "--harness-config", str(cfg), "-rs")
    # Scenarios that need a fresh seed of another shape can only run on the local provider.
    result.assert_outcomes(passed=7, skipped=4)
    result.stdout.fnmatch_lines(["*a fresh region of its own needs the local provider, not cluster*"])
    assert not (pytester.path / "state").exists() or not list((pytester.path / "state").glob("*.json"))


def test_the_gep20_features_reach_the_shoots_etcd_and_say_what_the_cluster_cannot_do(
    pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path]
) -> None:
    """Each scenario deploys the control plane for real and waits for its etcd clusters through
    the seed's API (port-forwards): a failure there fails the scenario. What follows needs a client
    in a zone or a zone cut, which this provider lacks: a skip naming that, never a failure."""
    _, _, kubeconfig = existing
    pytester.makefile(".feature", gep20=(FEATURES / "gep20.feature").read_text())
    pytester.makepyfile(test_gep20="from pytest_bdd import scenarios\nscenarios('gep20.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n'
                                             f'state_dir = "{pytester.path / "state"}"\n'
                                             f'[provider]\nstorage_class = "harness-zonal"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "--provider", "cluster",
                                           "--kubeconfig", str(kubeconfig), "--harness-config", str(cfg), "-rs",
                                           "--harness-report")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines([
        "SKIPPED [[]2[]] *the cluster provider has no client vantage point in zone 'zone-b': it reaches etcd-main "
        "through the seed's API*",
        "SKIPPED [[]1[]] *no client vantage point in zone 'zone-a'*",
    ])
    summary = json.loads((pytester.path / "reports" / "latest" / "summary.json").read_text())
    assert summary["counts"] == {"skipped": 3} and len(summary["not_run"]) == 3


def test_the_shoots_etcd_is_reached_through_the_seeds_api_wherever_its_pods_go(
    existing: tuple[LocalEnvironment, Seed, Path], tmp_path: Path
) -> None:
    """Port-forwards through the seed's API server and the kubelet API of each member's node: the
    members answer, agree on a leader and serve their metrics; a member whose pod is deleted is
    unreachable until its StatefulSet's new pod runs, and is reached again through the same forward."""
    from harness.config import load_config
    from harness.errors import CapabilityMissing
    from harness.providers.cluster import ClusterProvider
    from harness.reference.deploy import deploy, undeploy
    from harness.reference.render import ReferenceSpec
    from harness.wait import wait_for

    _, seed, kubeconfig = existing
    config = load_config(overrides={"provider.name": "cluster", "provider.kubeconfig": str(kubeconfig),
                                    "paths.state_dir": str(tmp_path / "state")})
    env = ClusterProvider(config).up()
    spec = ReferenceSpec("zone", env.zones, "gep20", namespace="shoot--harness--pf", storage_class="harness-zonal", real=True)
    deploy(seed, spec, config.timeouts.deploy)
    etcd = env.shoot_etcd(seed, spec.namespace, "etcd-main")
    try:
        statuses = etcd.wait_healthy()
        leader = etcd.leader(statuses)
        assert leader is not None and all(m.client_url.startswith("http://127.0.0.1:") for m in etcd.members)
        assert etcd.client(leader).put("/harness/pf", "through the API") > 0
        assert "etcd_server_has_leader 1" in etcd.metrics(etcd.members[0].name)
        with pytest.raises(CapabilityMissing, match="no client vantage point in zone 'zone-a'"):
            etcd.client(leader, "zone-a")

        follower = next(m.name for m in etcd.members if m.name != leader)
        from kubernetes import client as k8s

        k8s.CoreV1Api(cluster.connect(seed.kube)).delete_namespaced_pod(follower, spec.namespace, grace_period_seconds=0)
        # The forward fails while no pod of that name runs (wait_for raises if it never does).
        wait_for(lambda: etcd.status()[follower], lambda s: isinstance(s, str), f"{follower} unreachable", 30, 0.02)
        etcd.wait_healthy(timeout=90)
        assert etcd.client(follower).get("/harness/pf") == b"through the API"
    finally:
        etcd.close()
        undeploy(seed, spec.namespace, config.timeouts.deploy)


def test_the_cli_deploys_drains_heals_and_cleans_up_an_existing_cluster(
    existing: tuple[LocalEnvironment, Seed, Path], tmp_path: Path
) -> None:
    _, seed, kubeconfig = existing
    common = ["--provider", "cluster", "--kubeconfig", str(kubeconfig)]
    env = {"HARNESS_STATE_DIR": str(tmp_path / "state"), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    import os

    env = dict(os.environ, **env)
    up = cli(*common, "up", check=True, env=env)
    assert "cluster is up: 3 zones (zone-a, zone-b, zone-c), 6 nodes" in up.stdout
    deployed = cli(*common, "deploy", "--tolerance", "zone", "--storage-class", "harness-zonal", check=True, env=env)
    assert deployed.stdout.count("Running") == 12, deployed.stdout  # GEP-20 form, zone: 3 of each component
    status = json.loads(cli(*common, "status", "--json", check=True, env=env).stdout)
    assert status["references"] == ["shoot--harness--ref"]

    drained = cli(*common, "fault", "node-drain", "zone-b-1", check=True, env=env)
    assert "applied node-drain:zone-b-1" in drained.stdout
    api = cluster.connect(seed.kube)
    assert {v.name: v.unschedulable for v in cluster.node_views(api)}["zone-b-1"]
    assert "node-drain:zone-b-1" in cli(*common, "status", check=True, env=env).stdout

    healed = cli(*common, "heal", check=True, env=env)
    assert "healed node-drain:zone-b-1" in healed.stdout
    assert not any(v.unschedulable for v in cluster.node_views(api))

    down = cli(*common, "down", check=True, env=env)
    assert "namespace shoot--harness--ref" in down.stdout
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api)
    assert "shoot--harness--ref" not in [n.metadata.name for n in core.list_namespace().items
                                         if n.metadata.deletion_timestamp is None]
    assert [pv.metadata.name for pv in core.list_persistent_volume().items] == []
    assert list((tmp_path / "state").glob("*.json")) == []


def test_faults_the_cluster_cannot_do_say_why(existing: tuple[LocalEnvironment, Seed, Path], tmp_path: Path) -> None:
    _, _, kubeconfig = existing
    import os

    env = dict(os.environ, HARNESS_STATE_DIR=str(tmp_path / "state"))
    common = ["--provider", "cluster", "--kubeconfig", str(kubeconfig)]
    cli(*common, "up", check=True, env=env)
    try:
        proc = cli(*common, "fault", "zone-outage", "zone-a", env=env)
        assert proc.returncode == 2
        assert "fault zone-outage is not available here: the cluster provider cannot cut a zone off the network" in proc.stderr
        proc = cli(*common, "fault", "node-drain", "no-such-node", env=env)
        assert proc.returncode == 2 and "unknown node 'no-such-node'; the cluster's nodes: zone-a-1" in proc.stderr
    finally:
        cli(*common, "down", check=True, env=env)
