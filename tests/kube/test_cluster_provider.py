"""The cluster provider, for real: a local seed stands in for an existing cluster, reached only
through its kubeconfig. The same placement features run on it from a bare project directory."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.kube import cluster
from harness.kube.pki import EtcdNames, generate_etcd_pki
from harness.topology import Seed
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.conftest import cli, config_for, namespaces

pytestmark = [pytest.mark.kube, pytest.mark.region, pytest.mark.own_reference]
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


@pytest.mark.long  # make nightly; make test runs the zone outage features on the cluster
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
    result.assert_outcomes(passed=7, skipped=7)
    result.stdout.fnmatch_lines(["*a fresh region of its own needs the local provider, not cluster*"])
    assert not (pytester.path / "state").exists() or not list((pytester.path / "state").glob("*.json"))


def _project(pytester: pytest.Pytester, feature: str, aws: str = "") -> Path:
    """A bare directory holding only a feature file and the harness configuration."""
    pytester.makefile(".feature", **{feature: (FEATURES / f"{feature}.feature").read_text()})
    pytester.makepyfile(**{f"test_{feature}": f"from pytest_bdd import scenarios\nscenarios('{feature}.feature')\n"})
    return pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n'
                                              f'state_dir = "{pytester.path / "state"}"\n'
                                              f'[provider]\nstorage_class = "harness-zonal"\n{aws}')


def _run(pytester: pytest.Pytester, kubeconfig: Path, cfg: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "--provider", "cluster",
                                         "--kubeconfig", str(kubeconfig), "--harness-config", str(cfg), "-rs",
                                         "--harness-report", *args)


def _aws_account(pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path],
                 monkeypatch: pytest.MonkeyPatch) -> str:
    """The [aws] section of a project handed the local cloud as its AWS account, its credentials
    in a shared credentials file of its own."""
    region_env = existing[0]
    access = LocalRegion(region_env.config).cloud(region_env)
    machine = access.machine_credentials
    assert machine is not None
    credentials = pytester.path / "aws-credentials"
    credentials.write_text(f"[harness]\naws_access_key_id = {access.credentials.access_key_id}\n"
                           f"aws_secret_access_key = {access.credentials.secret_access_key}\n"
                           f"[machine]\naws_access_key_id = {machine.access_key_id}\n"
                           f"aws_secret_access_key = {machine.secret_access_key}\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    zones = "".join(f'{zone} = "{az}"\n' for zone, az in access.zones.items())
    return (f'[aws]\nregion = "{access.region}"\nvpc_id = "{access.vpc_id}"\nendpoint_url = "{access.endpoint_url}"\n'
            f'profile = "harness"\nmachine_principal = "{access.machine_principal}"\nmachine_profile = "machine"\n'
            f'image_id = "{access.image_id}"\n[aws.zones]\n{zones}')


@pytest.mark.long  # about 4 minutes: make nightly; the zone outage features on the cluster run in make test
def test_the_gep20_features_run_on_an_existing_cluster_with_its_aws_account(
    pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GEP-20's feature, unchanged, on the local seed handed over as a kubeconfig and its local
    cloud as an AWS endpoint: the control plane runs for real, its etcd is reached through the
    seed's API (port-forwards; vantage pods in the client zones), the shoot API through the load
    balancer its Service publishes; a zone goes down as GEP-20's authors took it down (its subnets
    on deny-all network ACLs) and a node fails as a cloud's do (its instance stopped)."""
    _, _, kubeconfig = existing
    cfg = _project(pytester, "gep20", _aws_account(pytester, existing, monkeypatch))
    result = _run(pytester, kubeconfig, cfg)
    result.assert_outcomes(passed=3)
    summary = json.loads((pytester.path / "reports" / "latest" / "summary.json").read_text())
    assert summary["counts"] == {"passed": 3} and summary["not_run"] == []
    assert not list((pytester.path / "state").glob("*.json")), "the cluster's fault ledger is left behind"


def test_the_zone_outage_features_run_on_an_existing_clusters_control_plane(
    pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zone-outage feature, unchanged, where the environment has no etcd of its own: the
    region's etcd is the reference control plane's etcd-main running for real on the seed,
    deployed once and shared by the scenarios; its zones go down through the AWS account."""
    _, _, kubeconfig = existing
    cfg = _project(pytester, "zone_outage", _aws_account(pytester, existing, monkeypatch))
    result = _run(pytester, kubeconfig, cfg, "-k", ZONE_OUTAGE_SCENARIOS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*the region's etcd is etcd-main of the reference control plane in "
                                 "shoot--harness--region, running for real*"])
    assert str(result.stdout).count("the region's etcd is etcd-main") == 1, "deployed once, shared by the scenarios"
    assert not list((pytester.path / "state").glob("*.json")), "the cluster's fault ledger is left behind"


# A zone lost and its return, and a leader's zone lost under load with its history judged;
# `pytest --provider cluster features/zone_outage.feature` runs them all, and two kinds of its
# bounds measure this path more than etcd:
# - "writes resume within 3 s": the probe reaches each member through a port-forward of the seed's
#   API and a relay pod, and each connection it opens after a failed write costs a new forward
#   (given [timeouts] forward_open to open: a CI run at 100% CPU where a connection was given the
#   probe's 0.25 s saw no forward open in 28 s, every attempt abandoned and begun anew). Measured
#   here: writes back 0.77 s after the new leader; a CI run saw a 3.94 s gap.
# - outages of 5 s ("any one zone may go down"): through the AWS API the zone stays cut longer
#   than that (measured: cut at 3.5 s, its ACL association read back at 4.3 s, held 5 s from
#   then, swapped back at 10.8 s), its nodes' leases then fall silent past the seed's 8 s node
#   grace, the zone's pods are evicted 5 s later and the returning member never catches up
#   (2 of 4 runs here).
ZONE_OUTAGE_SCENARIOS = "zone_that_returns or every_read_linearizable"


@pytest.mark.long  # make nightly; make test has the CLI's side of it (test_faults_the_cluster_cannot_do_say_why)
def test_what_the_cluster_cannot_do_is_a_skip_that_says_so(
    pytester: pytest.Pytester, existing: tuple[LocalEnvironment, Seed, Path]
) -> None:
    """Without an AWS account the cluster provider cannot fail a node: the scenario is skipped
    after the control plane ran for real and its etcd answered through the seed's API (a failure
    there fails it), with the missing capability named and counted in the report."""
    _, _, kubeconfig = existing
    result = _run(pytester, kubeconfig, _project(pytester, "gep20"), "-k", "node_failure")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *fault node-kill is not available here: the cluster provider cannot "
                                 "fail nodes, and the cluster environment has no AWS account: configure [[]aws[]]*"])
    summary = json.loads((pytester.path / "reports" / "latest" / "summary.json").read_text())
    assert summary["counts"] == {"skipped": 1} and "fault node-kill is not available" in summary["not_run"][0]["reason"]


def test_the_shoots_etcd_is_reached_through_the_seeds_api_wherever_its_pods_go(
    existing: tuple[LocalEnvironment, Seed, Path], tmp_path: Path
) -> None:
    """Port-forwards through the seed's API server and the kubelet API of each member's node: the
    members answer, agree on a leader and serve their metrics, also to a client in a zone (through
    that zone's vantage pod), over TLS with the client certificate of the members' Secrets (a
    client without it is refused); a member whose pod is deleted is unreachable until its
    StatefulSet's new pod runs, and is reached again through the same forward."""
    from kubernetes import client as k8s

    from harness.config import load_config
    from harness.kube import vantage
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
        assert leader is not None and all(m.client_url.startswith("https://127.0.0.1:") for m in etcd.members)
        assert etcd.tls is not None and etcd.tls.server_name == "etcd-main-client.shoot--harness--pf.svc"
        assert etcd.client(leader).put("/harness/pf", "through the API") > 0
        stranger = generate_etcd_pki(tmp_path / "stranger", EtcdNames(()))  # a client of another CA
        with pytest.raises(EtcdRequestError):  # the members check their clients' certificates
            EtcdClient(etcd.client_url(leader), None, 2.0,
                       dataclasses.replace(etcd.tls, cert=stranger.client_cert, key=stranger.client_key)).status()
        assert "etcd_server_has_leader 1" in etcd.metrics(etcd.members[0].name)
        # A client in zone-a: through a relay pod the scheduler put in zone-a.
        assert etcd.client(leader, "zone-a").get("/harness/pf") == b"through the API"
        core = k8s.CoreV1Api(cluster.connect(seed.kube))
        relay = core.read_namespaced_pod(vantage.pod_name("zone-a"), spec.namespace)
        assert env.node(relay.spec.node_name).zone == "zone-a"

        follower = next(m.name for m in etcd.members if m.name != leader)
        core.delete_namespaced_pod(follower, spec.namespace, grace_period_seconds=0)
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
