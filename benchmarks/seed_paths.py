"""How the path to a shoot's etcd changes what the harness measures: direct from a zone's client
namespace (the local provider), or through the seed's API as on an existing cluster (port-forward
from the harness's machine; through a zone's vantage pod).

    python benchmarks/seed_paths.py [--runs N] [--outage SECONDS] [--puts N]

A region with its seed and local cloud comes up, the reference control plane runs for real on it,
and its etcd-main is viewed both ways. Printed: put latency (median, p90, p99) and the time to
open a connection and read a status, per path; then for each run, with write probes every 10 ms
running on both paths at once, the leader's zone goes down for --outage seconds and the longest
write gap each path saw (from when the cut took effect) and its samples per second are printed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe
from harness.providers.base import EtcdCluster
from harness.providers.kube_etcd import KubeEtcd
from harness.providers.local.region import LocalRegion
from harness.reference.deploy import deploy
from harness.reference.render import ReferenceSpec
from harness.timeline import Timeline
from harness.validate import availability as av

NAMESPACE = "shoot--bench--paths"


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def latencies(view: EtcdCluster, member: str, via: str | None, puts: int) -> dict[str, float]:
    client = view.client(member, via, timeout=5.0)
    put_ms = []
    for i in range(puts):
        began = time.monotonic()
        client.put(f"/bench/paths/{i}", "x" * 128)
        put_ms.append((time.monotonic() - began) * 1000)
    client.close()
    open_ms = []
    for _ in range(20):
        began = time.monotonic()
        fresh = view.client(member, via, timeout=5.0)
        fresh.status()
        fresh.close()
        open_ms.append((time.monotonic() - began) * 1000)
    return {"median": statistics.median(put_ms), "p90": pct(put_ms, 0.9), "p99": pct(put_ms, 0.99),
            "open": statistics.median(open_ms)}


def outage_run(env: Any, zone: str, paths: dict[str, tuple[EtcdCluster, str]], outage: float
               ) -> dict[str, tuple[float, float]]:
    """Probes on every path at once through one outage of `zone` (cut by the region's router)."""
    timeline = Timeline()
    probes = {name: AvailabilityProbe(view, timeline, via).start() for name, (view, via) in paths.items()}
    runner = FaultRunner(env, timeline)
    began = timeline.now()
    try:
        time.sleep(2.0)
        fault = runner.inject("zone-outage", zone)
        time.sleep(outage)
    finally:
        runner.heal(wait=False)
        healed = timeline.now()
        histories = {name: p.stop() for name, p in probes.items()}
    out = {}
    for name, h in histories.items():
        gap = av.longest_write_gap(h.samples, fault.effective_at, healed)
        writes = sum(1 for s in h.samples if s.kind == "write")
        out[name] = (gap.length, writes / (healed - began))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--outage", type=float, default=5.0)
    ap.add_argument("--puts", type=int, default=300)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bp"}))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        deploy(seed, ReferenceSpec("zone", env.zones, "gep20", namespace=NAMESPACE, storage_class=seed.storage_class,
                                   real=True), env.config.timeouts.deploy)
        direct = env.shoot_etcd(seed, NAMESPACE, "etcd-main")
        through_api = KubeEtcd(env.config, seed, NAMESPACE, "etcd-main", env.zones)
        leader = direct.leader(direct.wait_healthy())
        assert leader is not None
        via = next(z for z in env.zones if z != direct.member(leader).zone)
        views: dict[str, tuple[EtcdCluster, str | None]] = {
            f"direct from {via}'s namespace": (direct, via),
            "port-forward from the harness": (through_api, None),
            f"vantage pod in {via}": (through_api, via)}
        for name, (view, zone) in views.items():
            r = latencies(view, leader, zone, args.puts)
            print(f"{name}: put median {r['median']:.2f} ms, p90 {r['p90']:.2f} ms, p99 {r['p99']:.2f} ms; "
                  f"new connection + status {r['open']:.1f} ms", flush=True)
        # Each run takes the zone of the shoot's leader of the moment; the probes stand in another.
        gaps: dict[str, list[float]] = {}
        for i in range(args.runs):
            leader = direct.leader(direct.wait_healthy(env.config.timeouts.recovery))
            assert leader is not None
            zone = direct.member(leader).zone
            via = next(z for z in env.zones if z != zone)
            paths = {"direct": (direct, via), "vantage pod": (through_api, via)}
            result = outage_run(env, zone, paths, args.outage)
            for name, (gap, rate) in result.items():
                gaps.setdefault(name, []).append(gap)
                print(f"run {i + 1}, {name} from {via}: longest write gap {gap:.3f} s, {rate:.0f} probe writes/s",
                      flush=True)
            env.wait_healthy(env.config.timeouts.recovery)
        for name, values in gaps.items():
            print(f"{name}: median longest write gap {statistics.median(values):.3f} s over {len(values)} runs")
        through_api.close()
    finally:
        region.down()


if __name__ == "__main__":
    main()
