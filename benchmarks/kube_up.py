"""Benchmark: control plane start-up, and failover after a zone goes silent.

    python benchmarks/kube_up.py [--runs N] [--workdir DIR]

Figures: start to healthy API server with all nodes Ready; time from silencing a zone's kwok
to a zone-spread Deployment being fully Running in the other zones. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "kube"))

from kube_support import api_client, live_running, pods, spread_deployment, wait_for
from kubernetes import client as k8s

from harness.kube import (
    ControlPlaneSpec,
    ensure_binaries,
    sources_from_env,
    start_control_plane,
)

REPLICAS = 6


def one_run(workdir: Path) -> tuple[float, float]:
    binaries = ensure_binaries(sources_from_env())
    started = time.monotonic()
    cp = start_control_plane(ControlPlaneSpec(), workdir, binaries)
    up = time.monotonic() - started
    try:
        api = api_client(cp.kubeconfig)
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        wait_for("default ServiceAccount", lambda: core.list_namespaced_service_account("default").items, 60)
        apps.create_namespaced_deployment("default", spread_deployment("bench", REPLICAS))
        wait_for("Deployment Running", lambda: len(live_running(pods(core, "default", "bench"))) == REPLICAS, 120)
        dead = set(cp.nodes_in("zone-a"))
        started = time.monotonic()
        cp.silence_zone("zone-a")

        def moved() -> bool:
            running = live_running(pods(core, "default", "bench"))
            return len(running) == REPLICAS and all(p.spec.node_name not in dead for p in running)

        wait_for("Deployment Running outside zone-a", moved, 180)
        failover = time.monotonic() - started
        cp.restore_zone("zone-a")
    finally:
        cp.stop()
    return up, failover


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="parent of per-run workdirs, kept (default: a temporary dir, removed)")
    args = parser.parse_args()
    if args.workdir:
        return runs(args, args.workdir)
    with tempfile.TemporaryDirectory(prefix="kube-up-bench-", ignore_cleanup_errors=True) as tmp:
        return runs(args, Path(tmp))


def runs(args: argparse.Namespace, parent: Path) -> int:
    ups, failovers = [], []
    for i in range(args.runs):
        up, failover = one_run(parent / f"run-{i}")
        print(f"run {i + 1}: up (start -> API healthy, 6 nodes Ready) {up:.1f}s; failover (zone silent -> pods Running elsewhere) {failover:.1f}s")
        ups.append(up)
        failovers.append(failover)
    print(f"up: median {statistics.median(ups):.1f}s over {len(ups)} run(s); failover: median {statistics.median(failovers):.1f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
