"""`harness load` and `harness measure traffic`: a named load against the region's etcd from a
client zone, with locust's statistics, or the cross-zone traffic it causes."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harness.errors import ConfigError
from harness.load.profiles import resolve
from harness.load.runner import LoadRun, new_workdir, region_loads
from harness.probes.traffic import TrafficProbe
from harness.providers.base import EtcdCluster
from harness.timeline import Timeline
from harness.validate.traffic import SOURCES, rates, uncounted


def _start(env: EtcdCluster, profile: str, processes: int = 1, out: Path | None = None,
           workers: tuple[str, ...] = (), expect_workers: int = 0) -> LoadRun | None:
    """Start the load; its statistics and history go under `out`, else the region's work directory.
    `workers`: zones whose client namespaces run a locust worker each; `expect_workers`: workers
    someone starts elsewhere, with the command printed here."""
    resolved = resolve(profile, env, processes)
    if resolved is None:
        return None
    spec, netns = resolved
    spec = dataclasses.replace(spec, workers=tuple(env.client_netns(z) for z in workers), expect_workers=expect_workers)
    workdir = new_workdir(out or region_loads(env.config.state_dir, env.config.region.name), f"load-{profile}")
    run = LoadRun(spec, netns, workdir, Timeline()).start()
    if expect_workers:
        _progress(f"waiting for {expect_workers} locust worker(s) started elsewhere; on each, with the harness "
                  f"installed: {run.worker_command()}")
    run.wait_started()
    return run


def _progress(message: str) -> None:
    """Progress goes to stderr: stdout holds only the result, exactly one JSON object under --json."""
    print(f"[harness] {message}", file=sys.stderr, flush=True)


def distribution(env: EtcdCluster, args: argparse.Namespace) -> dict[str, Any]:
    """`--workers ZONE[,ZONE...]` (zones of the environment, each once) and `--expect-workers N`
    as `_start`'s arguments; none without either (one locust, no master)."""
    zones = tuple(args.workers.split(",")) if args.workers is not None else ()
    if zones and (not all(zones) or len(set(zones)) < len(zones) or not set(zones) <= set(env.zones)):
        raise ConfigError(f"--workers takes zones of the region, comma-separated, each once; accepted: "
                          f"{', '.join(env.zones)}; got {args.workers!r}")
    if args.expect_workers < 0:
        raise ConfigError(f"--expect-workers takes a number of workers, 0 or more; got {args.expect_workers}")
    return {"workers": zones, "expect_workers": args.expect_workers} if zones or args.expect_workers else {}


def run_load(env: EtcdCluster, args: argparse.Namespace, start: Callable[..., LoadRun | None] = _start) -> int:
    distributed = distribution(env, args)
    run = start(env, args.profile, args.processes, args.out, **distributed)
    assert run is not None  # the parser offers no `idle`
    here = ", ".join(w or "this machine" for w in run.spec.workers) or "none"
    workers = f" (locust's master; workers in {here}, {run.spec.expect_workers} elsewhere)" if distributed else ""
    _progress(f"{args.profile} for {args.seconds:g} s from {run.netns}{workers}, history in {run.workdir / 'history'}")
    time.sleep(args.seconds)
    stats = run.stop()
    out = {"profile": args.profile, "seconds": args.seconds} | {k: stats[k] for k in ("requests", "failures", "ops_per_s", "p99_ms")}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.profile}: {out['requests']} requests, {out['failures']} failed, {out['ops_per_s']} ops/s, p99 {out['p99_ms']} ms")
        for name, figures in stats["per_operation"].items():
            print(f"  {name:<8} {figures['requests']:>8} requests, p99 {figures['p99_ms']} ms")
    return 0


def measure_traffic(env: EtcdCluster, args: argparse.Namespace) -> int:
    run = _start(env, args.profile)
    try:
        probe = TrafficProbe(env)
        time.sleep(1.0)  # past the load's start-up
        figures = {"profile": args.profile} | rates(*probe.window(args.seconds))
    finally:
        if run is not None:
            run.stop()
    # Something not counted makes the figures partial: said, and the exit status says so too.
    missing = [f"{source}: {line}" for source in SOURCES for line in uncounted(figures, source)]
    if args.json:
        print(json.dumps(figures))
        return 1 if missing else 0
    print(f"{args.profile}: {figures['total_kib_s']['wire']} KiB/s across zones at the router, "
          f"{figures['total_kib_s']['metrics']} KiB/s by etcd's peer metrics, over {figures['seconds']} s")
    wire = figures.get("not_available", {}).get("wire")
    for pair, v in figures["pairs"].items():
        print(f"  {pair:<18} wire {wire or str(v['wire_kib_s']) + ' KiB/s':>8}   metrics {v['metrics_kib_s']!s:>8} KiB/s")
    for line in missing:
        print(f"  not counted: {line}")
    return 1 if missing else 0
