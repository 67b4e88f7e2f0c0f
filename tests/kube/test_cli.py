"""`harness up --kubernetes` beside the local region, and `harness down` taking both away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("kubernetes")
from kube_support import api_client, node_zones, processes_mentioning
from kubernetes import client as k8s

from tests.integration.conftest import cli, namespaces

pytestmark = [pytest.mark.kube, pytest.mark.region]


def test_up_with_kubernetes_registers_the_region_nodes_and_down_removes_all() -> None:
    cli("--name", "kc", "down")
    try:
        up = cli("--name", "kc", "up", "--kubernetes", check=True, timeout=1800)
        kubeconfig = Path(up.stdout.split("kubeconfig: ", 1)[1].split()[0])
        assert f"export KUBECONFIG={kubeconfig}" in up.stdout and kubeconfig.exists()
        desc = json.loads(cli("--name", "kc", "status", "--json", check=True).stdout)
        assert desc["kubernetes"]["kubeconfig"] == str(kubeconfig)
        core = k8s.CoreV1Api(api_client(kubeconfig))
        assert node_zones(core) == {n["name"]: n["zone"] for n in desc["nodes"]}
        ready = {n.metadata.name: next(c.status for c in n.status.conditions if c.type == "Ready")
                 for n in core.list_node().items}
        assert set(ready.values()) == {"True"}
        workdir = str(kubeconfig.parent)
        assert processes_mentioning(workdir)
    finally:
        down = cli("--name", "kc", "down", check=True)
    assert "kubernetes control plane in" in down.stdout
    assert processes_mentioning(workdir) == [] and namespaces("kc") == []


def test_harness_heal_resumes_a_zone_left_silenced() -> None:
    from harness.kube import ControlPlane, load_state

    cli("--name", "kh", "down")
    try:
        up = cli("--name", "kh", "up", "--kubernetes", check=True, timeout=1800)
        workdir = Path(up.stdout.split("kubeconfig: ", 1)[1].split()[0]).parent
        # As a run that died after silencing zone-b would leave it.
        ControlPlane.from_state(load_state(workdir)).silence_zone("zone-b")
        kwok = next(p for p in load_state(workdir)["processes"] if p["name"] == "kwok-zone-b")
        assert Path(f"/proc/{kwok['pid']}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        healed = cli("--name", "kh", "heal", check=True)
        assert "restored kubernetes nodes of zone-b" in healed.stdout
        assert Path(f"/proc/{kwok['pid']}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T"
        assert load_state(workdir)["silenced_zones"] == []
    finally:
        cli("--name", "kh", "down", check=True)
