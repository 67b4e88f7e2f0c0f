"""A follower's zone away until the others are N revisions ahead, then back: the catch-up's bytes
per zone pair, its time, from the log or from a snapshot, and the leader's CPU.

    python benchmarks/catch_up.py [--gaps 2000,8000,20000] [--snapshot-counts 100000,1000] [--rate 500]
                                  [--repeat 1] [--raft-debug]

For each snapshot count a region of its own (etcd 3.5 keeps that many entries plus 5,000 in the
leader's log); for each gap the zone of a follower goes down under a load of RATE PUT/s of 1 KiB
to the leader (from a client in its zone) until the others are GAP revisions ahead, and comes
back; the catch-up is measured as features/rejoin.feature measures it (harness/probes/catch_up.py):
from just before the return until the member has the revision the leader had at its return.
GEP-20's appendix: a member 5.1 GB behind was sent ~120 MiB/s for ~40 s, and sent ~159 KiB/s back.

Besides the wire's bytes each line gives what the leader counts as sent to the member (its
etcd_network_peer_sent_bytes_total{To}: raft messages and a snapshot's whole size) and its
database's size (what a snapshot sends). --raft-debug runs etcd at --log-level=debug and counts,
over the catch-up, the appends the member rejected (raft logs each: "rejected MsgApp") and how
often the leader went back to resend from the member's last entry ("decreased progress"): the
appends it had sent while the member was away, or out of order, arrive and are refused, and the
missing entries are sent again. Debug logging costs CPU (every applied entry is logged too).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import tempfile
import time
from pathlib import Path

from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.load.runner import LoadRun, LoadSpec
from harness.probes.catch_up import CatchUp
from harness.validate.catch_up import figures as catch_up_figures
from harness.providers.base import zone_pair
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline
from harness.wait import wait_for


def one_run(env: LocalEnvironment, gap: int, rate: float, workdir: Path) -> str:
    leader = env.member(env.leader(env.wait_healthy(max_lag=0)))  # type: ignore[arg-type]
    member = next(m for m in env.members if m.name != leader.name)
    spec = LoadSpec("put", rate, (env.client_url(leader.name),), 1024, key_prefix=f"/catch-up/{gap}/", users=20)
    run = LoadRun(dataclasses.replace(spec, tls=env.tls), env.client_netns(leader.zone),
                  Path(tempfile.mkdtemp(dir=workdir)), Timeline()).start()
    runner = FaultRunner(env, Timeline())
    try:
        run.wait_started()
        at = env.status()[member.name].revision  # type: ignore[union-attr]
        catch_up = CatchUp(env, env, member.name)
        runner.inject("zone-outage", member.zone)
        catch_up.begin(at)
        began = time.monotonic()
        wait_for(lambda: max(s.revision for n, s in env.status().items() if n != member.name and not isinstance(s, str)),
                 lambda head: head >= at + gap, f"the others {gap} revisions ahead", 900, interval=0.2)
        away = time.monotonic() - began
        logs = {m: Path(env.state["members"][m]["log"]) for m in (leader.name, member.name)}
        offsets = {m: path.stat().st_size for m, path in logs.items()}
        figures = catch_up_figures(catch_up.end(lambda: runner.heal(wait=False), 600))
        raft = {m: _read_from(path, offsets[m]) for m, path in logs.items()}
    finally:
        runner.heal(wait=False)
        run.stop()
    mib = figures["mib"]
    to_it, back = mib[zone_pair(leader.zone, member.zone)], mib[zone_pair(member.zone, leader.zone)]
    rest = sum(v for k, v in mib.items() if k not in (zone_pair(leader.zone, member.zone), zone_pair(member.zone, leader.zone)))
    source = "a snapshot" if figures["snapshots_sent"] else "the log"
    rejected = re.findall(r"rejected MsgApp \[logterm: \d+, index: (\d+)\]", raft[member.name])
    went_back = raft[leader.name].count(f"decreased progress of {catch_up.member_id}")
    debug = (f"; {len(rejected)} appends rejected (after {len(set(rejected))} different entries), the leader went "
             f"back {went_back} times") if env.config.etcd.log_level == "debug" else ""
    return (f"gap {gap:>6} (away {away:5.1f} s): from {source:<10} in {figures['seconds']:5.1f} s; leader -> it "
            f"{to_it:7.1f} MiB (the leader counts {figures['leader_counted_mib']:6.1f} MiB sent; its database "
            f"{figures['leader_db_mib']:6.1f} MiB), it -> leader {back:5.2f} MiB, other pairs {rest:5.1f} MiB; leader CPU "
            f"{figures['leader_cpu_before']:.2f} -> {figures['leader_cpu_during']:.2f} s/s{debug}")


def _read_from(path: Path, offset: int) -> str:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gaps", default="2000,8000,20000", help="revisions the others get ahead, comma-separated")
    ap.add_argument("--snapshot-counts", default="100000,1000", help="etcd --snapshot-count per region, comma-separated")
    ap.add_argument("--rate", type=float, default=500.0, help="PUT/s of 1 KiB to the leader")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each gap, one after the other on the same region")
    ap.add_argument("--raft-debug", action="store_true",
                    help="etcd at --log-level=debug: count the appends the member rejected and the leader's resends")
    args = ap.parse_args()
    for count in (int(x) for x in args.snapshot_counts.split(",")):
        overrides: dict[str, object] = {"region.name": "cu", "etcd.snapshot_count": count}
        if args.raft_debug:
            overrides["etcd.log_level"] = "debug"
        region = LocalRegion(load_config(overrides=overrides))
        region.down()
        env = region.up()
        workdir = Path(tempfile.mkdtemp(prefix="bench-catch-up-", dir=env.config.state_dir))
        try:
            for gap in (int(x) for x in args.gaps.split(",") for _ in range(args.repeat)):
                print(f"snapshot count {count}: {one_run(env, gap, args.rate, workdir)}", flush=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            region.down()


if __name__ == "__main__":
    main()
