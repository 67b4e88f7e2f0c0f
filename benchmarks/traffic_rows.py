"""GEP-20's traffic rows beyond a steady PUT load, each beside GEP-20's figure.

    python benchmarks/traffic_rows.py [--seconds S] [--keys N] [--tls]

On a region of its own: the follower-to-follower direction idle and under 100 PUT/s to the
leader; one range GET of N keys of 1 KiB from a follower (client in its zone); one DELETE of
them through a follower; five watchers of the PUT load on a follower; and the PUT load through the
leader and then through a follower. Each row is the cross-zone traffic at the router over S
seconds with the request at the window's start (harness/probes/traffic.py), as
features/traffic.feature's @gep20_findings scenarios measure it.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from harness.config import load_config
from harness.load.runner import LoadRun, LoadSpec
from harness.probes.traffic import TrafficProbe
from harness.validate.traffic import rates
from harness.providers.base import zone_pair
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline

TXN_OPS = 128


def _window(env: LocalEnvironment, seconds: float, during: Callable[[], object] | None = None) -> dict[str, Any]:
    time.sleep(1.0)
    return rates(*TrafficProbe(env).window(seconds, during))


def _load(env: LocalEnvironment, workdir: Path, target: str, watchers: int = 0) -> LoadRun:
    leader = env.leader(env.wait_healthy())
    member = env.member(leader) if target == "leader" else next(m for m in env.members if m.name != leader)  # type: ignore[arg-type]
    follower = next(m for m in env.members if m.name != leader)
    spec = LoadSpec("put", 100, (env.client_url(member.name),), 1024, key_prefix=f"/bench/{time.monotonic_ns()}/", tls=env.tls)
    if watchers:
        spec = dataclasses.replace(spec, watch_hosts=(env.client_url(follower.name),) * watchers,
                                   watch_netns=env.client_netns(follower.zone))
    run = LoadRun(spec, env.client_netns(member.zone), Path(tempfile.mkdtemp(dir=workdir)), Timeline()).start()
    run.wait_started()
    return run


def _under(env: LocalEnvironment, workdir: Path, seconds: float, target: str, watchers: int = 0) -> dict[str, Any]:
    run = _load(env, workdir, target, watchers)
    try:
        return _window(env, seconds)
    finally:
        run.stop()


def _followers(env: LocalEnvironment, figures: dict[str, Any]) -> float:
    leader = env.leader(env.status())
    a, b = [m.zone for m in env.members if m.name != leader]
    return max(figures["pairs"][zone_pair(a, b)]["wire_kib_s"], figures["pairs"][zone_pair(b, a)]["wire_kib_s"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=18000)
    ap.add_argument("--tls", action="store_true", help="members speak TLS to clients and peers, as GEP-20's did")
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bw", "etcd.tls": args.tls}))
    region.down()
    env = region.up()
    rows: list[tuple[str, str, str]] = []
    workdir = Path(tempfile.mkdtemp(prefix="bench-rows-", dir=env.config.state_dir))
    try:
        idle = _window(env, args.seconds)
        rows.append(("follower -> follower, idle (max direction)", f"{_followers(env, idle):.2f} KiB/s", "~0.25 KiB/s"))
        leader = _under(env, workdir, args.seconds, "leader")
        rows.append(("follower -> follower, 100 PUT/s (max direction)", f"{_followers(env, leader):.2f} KiB/s", "~0.25 KiB/s"))

        leader_name = env.leader(env.wait_healthy())
        follower = next(m for m in env.members if m.name != leader_name)
        client = env.client(follower.name, follower.zone, timeout=60.0)
        prefix, value = "/bench-rows/", "x" * 1024
        names = [f"{prefix}{i:06d}" for i in range(args.keys)]
        for i in range(0, len(names), TXN_OPS):
            client.put_all({k: value for k in names[i:i + TXN_OPS]})
        env.wait_healthy(max_lag=0)
        read: dict[str, float] = {}

        def range_get() -> None:
            began = time.monotonic()
            count, size = client.range_read(prefix)
            read.update(keys=count, mib=size / 2**20, seconds=time.monotonic() - began)

        got = _window(env, args.seconds, range_get)
        rows.append((f"range GET of {read['keys']:.0f} keys from a follower: cross-zone",
                     f"{got['total_kib_s']['wire']:.1f} KiB/s", "unchanged from idle"))
        rows.append(("  its values read, and how fast", f"{read['mib']:.1f} MiB at {read['mib'] / read['seconds']:.0f} MiB/s",
                     "607 MiB at ~32 MiB/s"))
        deleted: dict[str, float] = {}
        gone = _window(env, args.seconds, lambda: deleted.update(keys=client.delete_prefix(prefix)))
        client.close()
        rows.append((f"DELETE of {deleted['keys']:.0f} keys through a follower: cross-zone",
                     f"{gone['total_kib_s']['wire']:.1f} KiB/s", "unchanged from idle"))
        rows.append(("idle: cross-zone", f"{idle['total_kib_s']['wire']:.1f} KiB/s", "~10.5 KiB/s"))

        watched = _under(env, workdir, args.seconds, "leader", watchers=5)
        rows.append(("100 PUT/s to the leader: cross-zone", f"{leader['total_kib_s']['wire']:.0f} KiB/s", "~412 KiB/s"))
        rows.append(("  the same, 5 watchers on a follower", f"{watched['total_kib_s']['wire']:.0f} KiB/s", "~412 KiB/s"))
        through = _under(env, workdir, args.seconds, "follower")
        excess = 100 * (through["total_kib_s"]["wire"] / leader["total_kib_s"]["wire"] - 1)
        rows.append(("100 PUT/s through a follower: cross-zone", f"{through['total_kib_s']['wire']:.0f} KiB/s", "~517 KiB/s"))
        rows.append(("  over the leader's row", f"{excess:+.0f} %", "+25 %"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        region.down()
    print(f"\n{'row (' + ('TLS' if args.tls else 'plain HTTP') + ')':<52} {'here':>22}   GEP-20")
    for name, here, gep in rows:
        print(f"{name:<52} {here:>22}   {gep}")


if __name__ == "__main__":
    main()
