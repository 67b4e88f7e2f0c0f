"""`harness up --kubernetes` beside the local region: the seed's context in the user's
kubeconfig, nodes cut off by region faults through the network, `harness down` taking all away."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes")
from kube_support import processes_mentioning
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from harness import netns
from harness.kube import ControlPlane, load_state
from harness.kube.cluster import node_views
from harness.topology import KubeAccess
from harness.wait import wait_for
from tests.integration.conftest import cli, namespaces

pytestmark = [pytest.mark.kube, pytest.mark.region]


def _env(kubeconfig: Path) -> dict[str, str]:
    return dict(os.environ, KUBECONFIG=str(kubeconfig))


def _readiness(kubeconfig: Path) -> dict[str, bool]:
    return {v.name: v.ready for v in node_views(k8s_config.new_client_from_config(config_file=str(kubeconfig)))}


def test_up_merges_a_context_a_zone_outage_silences_nodes_and_down_removes_all(tmp_path: Path) -> None:
    """Also: nothing the region's processes wrote to the system's temporary directory (TMPDIR
    here, empty before) stays after `harness down`, keys and discovery caches included."""
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "other",
                                          "clusters": [{"name": "other", "cluster": {"server": "https://192.0.2.1"}}],
                                          "users": [{"name": "other", "user": {}}],
                                          "contexts": [{"name": "other", "context": {"cluster": "other", "user": "other"}}]}))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(_env(kubeconfig), TMPDIR=str(scratch))
    cli("--name", "kc", "down", env=env)
    try:
        up = cli("--name", "kc", "up", "--kubernetes", check=True, timeout=1800, env=env)
        assert f"context ha-harness-kc merged into {kubeconfig} and made current" in up.stdout
        merged = yaml.safe_load(kubeconfig.read_text())
        assert merged["current-context"] == "ha-harness-kc"
        assert {c["name"] for c in merged["contexts"]} == {"other", "ha-harness-kc"}
        # The client loads it by default, as kubectl does: no path given.
        k8s_config.load_kube_config(config_file=str(kubeconfig))
        nodes = {n.metadata.name: n.metadata.labels["topology.kubernetes.io/zone"] for n in k8s.CoreV1Api().list_node().items}
        desc = json.loads(cli("--name", "kc", "status", "--json", check=True, env=env).stdout)
        assert nodes == {n["name"]: n["zone"] for n in desc["nodes"]}
        workdir = Path(desc["kubernetes"]["kubeconfig"]).parent
        assert processes_mentioning(str(workdir))

        # The router's deny-all for zone-b cuts its kwoks off the API server: nodes go NotReady.
        cli("--name", "kc", "fault", "zone-outage", "zone-b", check=True, env=env)
        wait_for(lambda: _readiness(kubeconfig), lambda r: not r["zone-b-1"] and not r["zone-b-2"],
                 "zone-b's nodes NotReady", 30)
        assert _readiness(kubeconfig)["zone-a-1"] and _readiness(kubeconfig)["zone-c-2"]
        cli("--name", "kc", "heal", check=True, env=env)  # waits for the seed's nodes too
        assert all(_readiness(kubeconfig).values())
        # A killed node's processes (its agent's Kubernetes client among them) run no exit handler.
        cli("--name", "kc", "fault", "node-kill", "zone-a-1", check=True, env=env)
        cli("--name", "kc", "heal", check=True, env=env)
    finally:
        down = cli("--name", "kc", "down", check=True, env=env)
    assert "kubernetes control plane in" in down.stdout and f"context ha-harness-kc in {kubeconfig}" in down.stdout
    left = yaml.safe_load(kubeconfig.read_text())
    assert [c["name"] for c in left["contexts"]] == ["other"] and left["current-context"] == ""
    assert processes_mentioning(str(workdir)) == [] and namespaces("kc") == []
    assert not workdir.parent.exists(), "the work directory (etcd data, keys, logs) is removed"
    assert (Path("reports") / "logs" / "kc" / "kube-apiserver.log").exists(), "logs are kept with the reports"
    # Its own uplink: another region (the session's, once its seed is up) keeps its own.
    assert " kc-up " not in netns.run(["ip", "-o", "-4", "addr", "show"]), "the uplink address is gone"
    assert sorted(p.name for p in scratch.iterdir()) == [], "left in the temporary directory"


@pytest.mark.long  # make nightly; make test runs up and down with a kubeconfig in test_up_merges_a_context_...
def test_up_creates_a_kubeconfig_and_down_deletes_it_again(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "fresh" / "config"
    env = _env(kubeconfig)
    try:
        cli("--name", "kf", "up", "--kubernetes", check=True, timeout=1800, env=env)
        assert yaml.safe_load(kubeconfig.read_text())["current-context"] == "ha-harness-kf"
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
    finally:
        cli("--name", "kf", "down", check=True, env=env)
    assert not kubeconfig.exists() and not list(kubeconfig.parent.iterdir())


def test_a_killed_node_takes_its_kubelet_stand_in_along_and_heal_brings_it_back(tmp_path: Path) -> None:
    env = _env(tmp_path / "config")
    try:
        cli("--name", "kn", "up", "--kubernetes", check=True, timeout=1800, env=env)
        kubeconfig = tmp_path / "config"
        cli("--name", "kn", "fault", "node-kill", "zone-c-1", check=True, env=env)
        wait_for(lambda: _readiness(kubeconfig), lambda r: not r["zone-c-1"], "zone-c-1 NotReady", 30)
        assert _readiness(kubeconfig)["zone-c-2"], "its zone's other node keeps its heartbeats"
        healed = cli("--name", "kn", "heal", check=True, env=env)
        assert "healed node-kill:zone-c-1" in healed.stdout
        assert all(_readiness(kubeconfig).values())
    finally:
        cli("--name", "kn", "down", check=True, env=env)


def test_harness_heal_resumes_a_zone_left_silenced(tmp_path: Path) -> None:
    env = _env(tmp_path / "config")
    cli("--name", "kh", "down", env=env)
    try:
        up = cli("--name", "kh", "up", "--kubernetes", check=True, timeout=1800, env=env)
        assert up.returncode == 0
        desc = json.loads(cli("--name", "kh", "status", "--json", check=True, env=env).stdout)
        workdir = Path(desc["kubernetes"]["kubeconfig"]).parent
        # As a run that died after silencing zone-b would leave it.
        ControlPlane.from_state(load_state(workdir)).silence_zone("zone-b")
        kwoks = [p for p in load_state(workdir)["processes"] if p["name"].startswith("kwok-zone-b-")]
        assert len(kwoks) == 2
        state = lambda pid: Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]  # noqa: E731
        assert {state(k["pid"]) for k in kwoks} == {"T"}
        healed = cli("--name", "kh", "heal", check=True, env=env)
        assert "restored kubernetes nodes of zone-b" in healed.stdout
        assert "T" not in {state(k["pid"]) for k in kwoks}
        assert load_state(workdir)["silenced_zones"] == []
    finally:
        cli("--name", "kh", "down", check=True, env=env)


def test_kube_access_of_the_region_names_the_seed(tmp_path: Path) -> None:
    from harness.providers.local.region import LocalRegion
    from tests.integration.conftest import config_for

    region = LocalRegion(config_for("ka"))
    region.down()
    env = region.up()
    try:
        assert env.kube() is None
        seed = region.seed(env)
        assert seed.static_volumes and seed.storage_class == "harness-zonal"
        assert env.kube() == KubeAccess(seed.kube.kubeconfig)
        assert region.seed(env) == seed, "a second call finds the running seed"
    finally:
        region.down()


def test_resource_manager_down_refuses_the_shoots_new_pods_until_harness_heal_starts_it(tmp_path: Path) -> None:
    """The fault resource-manager-down: gardener-resource-manager's process gone, its webhooks
    (failurePolicy Fail) left registered, as when its pods are gone from a seed: the seed's API
    server refuses every new pod of the shoot's namespace. `harness heal` (from the ledger, in a
    process of its own) starts it again. Refused with a clear error where it does not run."""
    from harness.reference.render import DEFAULT_NAMESPACE

    env = _env(tmp_path / "config")
    cli("--name", "kr", "down", env=env)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "new-replica"},
           "spec": {"containers": [{"name": "c", "image": "registry.invalid/c"}]}}
    try:
        cli("--name", "kr", "up", "--kubernetes", check=True, timeout=1800, env=env)
        before = cli("--name", "kr", "fault", "resource-manager-down", "gardener-resource-manager", env=env)
        assert before.returncode == 2 and "does not serve the seed's webhooks now" in before.stderr, before.stderr
        cli("--name", "kr", "deploy", "--tolerance", "zone", "--form", "gardener", check=True, timeout=600, env=env)
        wrong = cli("--name", "kr", "fault", "resource-manager-down", "zone-a", env=env)
        assert wrong.returncode == 2 and "takes 'gardener-resource-manager', got 'zone-a'" in wrong.stderr, wrong.stderr
        cli("--name", "kr", "fault", "resource-manager-down", "gardener-resource-manager", check=True, env=env)
        api = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(tmp_path / "config")))
        with pytest.raises(k8s.ApiException) as refused:
            api.create_namespaced_pod(DEFAULT_NAMESPACE, pod, dry_run="All")
        assert refused.value.status == 500 and "failed calling webhook" in str(refused.value.body), refused.value.body
        healed = cli("--name", "kr", "heal", check=True, env=env)
        assert "healed resource-manager-down:gardener-resource-manager" in healed.stdout, healed.stdout
        api.create_namespaced_pod(DEFAULT_NAMESPACE, pod, dry_run="All")
    finally:
        cli("--name", "kr", "down", check=True, env=env)
