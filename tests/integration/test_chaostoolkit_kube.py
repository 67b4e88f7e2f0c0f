"""chaos/kube-apiserver-pod-loss.json with the stock `chaos run`: chaostoolkit-kubernetes (chaosk8s)
against the local seed, beside the harness's own placement and shoot API probes.

The region, its seed and the reference control plane running for real are brought up as a user
would (`harness up --kubernetes`, `harness deploy --tolerance zone --real`); chaosk8s reads the
seed's own kubeconfig through KUBECONFIG (the user's ~/.kube/config is never read or written).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import judge
from harness.config import load_config
from harness.providers.local.region import LocalEnvironment, LocalRegion
from tests.integration.conftest import cli, fault_tables
from tests.integration.test_chaostoolkit import assert_held, outputs

# make nightly; make test runs the chaostoolkit zone-outage experiment (test_chaostoolkit.py).
pytestmark = [pytest.mark.kube, pytest.mark.region, pytest.mark.long]

NAME, PREFIX = "ck", "10.99"  # a region and subnets of this module's own
ROOT = Path(__file__).parents[2]
CHAOS = Path(sys.executable).with_name("chaos")
EXPERIMENT = ROOT / "chaos" / "kube-apiserver-pod-loss.json"


def harness(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    proc = cli("--name", NAME, *args, check=check, env=env, timeout=180)
    print(f"harness --name {NAME} {' '.join(args)}: {time.monotonic() - started:.1f}s")
    return proc


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalEnvironment, dict[str, str]]]:
    """Region ck with its seed and the reference deployed for real; the environment `chaos run` gets
    (HARNESS_CONFIG for the subnet prefix, KUBECONFIG the seed's own file). Always taken down."""
    work = tmp_path_factory.mktemp("ck")
    (work / "harness.toml").write_text(f'[region]\nsubnet_prefix = "{PREFIX}"\n')
    env = {**os.environ, "HARNESS_CONFIG": str(work / "harness.toml"), "HARNESS_REGION": NAME}
    env.pop("KUBECONFIG", None)
    config = load_config(overrides={"region.name": NAME, "region.subnet_prefix": PREFIX})
    if LocalRegion(config).leftovers() or (config.state_dir / NAME).exists():
        harness(env, "down")  # what a crashed run left
    started = time.monotonic()
    try:
        # The context goes into a kubeconfig of the test's own, not the user's.
        harness(env, "--kubeconfig", str(work / "merged-kubeconfig"), "up", "--kubernetes")
        harness(env, "deploy", "--tolerance", "zone", "--real")
        region = LocalRegion(config).attach()
        kubeconfig = region.state["kubernetes"]["kubeconfig"]
        print(f"region {NAME} up with its seed and the reference deployed in {time.monotonic() - started:.1f}s")
        yield region, {**env, "KUBECONFIG": kubeconfig}
    finally:
        down = harness(env, "down", check=False)
        assert down.returncode == 0, f"harness --name {NAME} down failed: {down.stderr}{down.stdout}"


def chaos_run(experiment: Path, workdir: Path, env: dict[str, str], timeout: float = 150) -> dict[str, Any]:
    """`chaos run` as a user would type it; journal, log and settings stay in `workdir`."""
    journal = workdir / f"{experiment.stem}.journal.json"
    proc = subprocess.run(
        [str(CHAOS), "--log-file", str(workdir / f"{experiment.stem}.log"), "--settings", str(workdir / "settings.yaml"),
         "run", "--journal-path", str(journal), str(experiment)],
        cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)
    assert journal.exists(), f"chaos run wrote no journal ({proc.returncode}): {proc.stderr[-3000:]}"
    return json.loads(journal.read_text()) | {"exit": proc.returncode, "stderr": proc.stderr}


def root_files() -> dict[str, float]:
    """chaostoolkit's default journal and log in the checkout, with their mtimes (other runs may
    share the checkout: this run must add or change none)."""
    return {p.name: p.stat().st_mtime for p in (ROOT / "journal.json", ROOT / "chaostoolkit.log") if p.exists()}


def hypothesis_outputs(journal: dict[str, Any], when: str) -> dict[str, Any]:
    return {p["activity"]["name"]: p["output"] for p in journal["steady_states"][when]["probes"]}


def test_kube_apiserver_pod_loss_holds_and_heals(seeded: tuple[LocalEnvironment, dict[str, str]], tmp_path: Path) -> None:
    region, env = seeded
    strays = root_files()
    started = time.monotonic()
    journal = chaos_run(EXPERIMENT, tmp_path, env)
    print(f"chaos run took {time.monotonic() - started:.1f}s")
    assert_held(journal)
    out = outputs(journal)
    before, after = hypothesis_outputs(journal, "before"), hypothesis_outputs(journal, "after")
    # Both kinds of probe really ran: chaosk8s's and the harness's own.
    judge.equal(before["kube-apiserver-pod-count"], 3, "Running kube-apiserver pods before (chaosk8s)")
    judge.equal(after["kube-apiserver-pod-count"], 3, "Running kube-apiserver pods after (chaosk8s)")
    # The fault bit: one pod terminated, the Deployment lost a replica and got it back.
    terminated = out["terminate-one-kube-apiserver-pod"]
    judge.holds(isinstance(terminated, list) and len(terminated) == 1, "chaosk8s terminated one pod", seen=terminated)
    judge.holds(terminated[0] in {p["name"] for p in before["kube-apiserver-one-per-zone"]["pods"]},
                "the terminated pod was one of those placed before", seen=before["kube-apiserver-one-per-zone"])
    judge.equal(out["kube-apiserver-deployment-lost-a-replica"], True, "the Deployment lost a replica")
    judge.equal(out["kube-apiserver-deployment-recovered"], True, "the Deployment recovered")
    placed = after["kube-apiserver-one-per-zone"]
    names = {p["name"] for p in placed["pods"]}
    judge.holds(terminated[0] not in names and len(names) == 3, "the terminated pod was replaced by a new one", seen=placed)
    judge.equal(sorted(placed["per_domain"]), list(region.zones), "zones with a running kube-apiserver after")
    # The shoot API kept answering through its load balancer while one of three apiservers went.
    gap = out["shoot-api-gap-across-the-pod-loss"]
    judge.holds(gap["resumed"] and gap["acked"] > 0, "shoot API writes acknowledged across the pod loss", seen=gap)
    judge.at_most(gap["longest_gap_s"], 5.0, "longest shoot API write gap across the pod loss", seen=gap)
    # Nothing left applied.
    judge.none_of(region.refresh().get("faults", []), "faults left in the ledger")
    judge.none_of(fault_tables(NAME), "fault tables left at the router")
    judge.equal(root_files(), strays, "chaos run's default journal and log in the checkout (the run's own are in tmp_path)")
