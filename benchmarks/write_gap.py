"""Write gap and write latency of the local region, with etcd's data on tmpfs and on disk.

    python benchmarks/write_gap.py [--runs N] [--outage SECONDS] [--media tmpfs,disk] [--rate PUTS_PER_S]
                                   [--transports plain,tls]

For each medium a region of its own comes up ([region] data_on_disk), a put load runs from a
client zone (locust, --rate PUT/s of 1 KiB), and each run takes the etcd leader's zone down for
--outage seconds under write probes (every 10 ms, from another zone). Printed per run: the
longest write gap (from the cut taking effect, the open stretch counted), the time to a new
leader and the load's p99; per medium: medians. On tmpfs fsync costs nothing, so the disk
figures are the ones a real control plane's disks come closer to. With --transports plain,tls
each medium runs once with plain HTTP and once with clients and peers over TLS ([etcd] tls).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.load.runner import LoadRun, LoadSpec
from harness.probes.availability import AvailabilityProbe
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.validate import availability as av


def one_run(env: LocalEnvironment, outage: float, rate: float, workdir: Path) -> dict[str, float | None]:
    leader = env.member(env.leader(env.wait_healthy()))  # type: ignore[arg-type]
    via = next(z for z in env.zones if z != leader.zone)
    timeline = Timeline()
    load = LoadRun(LoadSpec("put", rate, tuple(m.client_url for m in env.members if m.zone == via),
                            key_prefix=f"/bench/{time.time_ns()}/", tls=env.tls), env.names.client_ns(via), workdir,
                   timeline).start()
    load.wait_started()
    probe = AvailabilityProbe(env, timeline, via).start()
    runner = FaultRunner(env, timeline)
    try:
        time.sleep(2.0)
        fault = runner.inject("zone-outage", leader.zone)
        time.sleep(outage)
    finally:
        runner.heal(wait=False)
        healed = timeline.now()
        history = probe.stop()
        stats = load.stop()
    env.wait_healthy(env.config.timeouts.recovery)
    gap = av.longest_write_gap(history.samples, fault.effective_at, healed)
    elected = av.new_leader_after(history.samples, fault.effective_at, next(
        i for i, n in history.member_ids.items() if n == leader.name), history.member_ids)
    return {"gap_s": round(gap.length, 3), "new_leader_s": round(elected[0], 3) if elected else None,
            "p99_ms": stats["p99_ms"], "ops_per_s": stats["ops_per_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--outage", type=float, default=4.0)
    ap.add_argument("--rate", type=float, default=300.0)
    ap.add_argument("--media", default="tmpfs,disk")
    ap.add_argument("--transports", default="plain")
    args = ap.parse_args()
    for medium, transport in ((m, t) for m in args.media.split(",") for t in args.transports.split(",")):
        region = LocalRegion(load_config(overrides={"region.name": "bw", "region.data_on_disk": medium == "disk",
                                                    "etcd.tls": transport == "tls"}))
        region.down()
        env = region.up()
        rows = []
        try:
            with tempfile.TemporaryDirectory(prefix="bench-write-gap-", dir=env.config.state_dir / "bw") as tmp:
                for i in range(args.runs):
                    r = one_run(env, args.outage, args.rate, Path(tmp) / f"run-{i}")
                    rows.append(r)
                    print(f"{medium} ({env.state['data_medium']}), {transport}, run {i + 1}: leader-zone write gap {r['gap_s']} s, "
                          f"new leader after {r['new_leader_s']} s, load p99 {r['p99_ms']} ms at {r['ops_per_s']} ops/s",
                          flush=True)
        finally:
            region.down()
        med = {k: statistics.median([r[k] for r in rows if r[k] is not None]) for k in ("gap_s", "p99_ms")}
        print(f"{medium}, {transport}: median write gap {med['gap_s']:.3f} s, median load p99 {med['p99_ms']:.0f} ms "
              f"over {len(rows)} runs", flush=True)


if __name__ == "__main__":
    main()
