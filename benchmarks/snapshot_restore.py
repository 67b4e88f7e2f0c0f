"""Time to take a full snapshot of the region's etcd and to restore every member from it.

    python benchmarks/snapshot_restore.py [--keys 10000,100000,1000000] [--runs 1]

For each key count a region of its own comes up and etcd's benchmark tool (built once, see
load_figures.py) writes that many keys of 1 KiB values. Then, per run: a full snapshot from the
leader (its Maintenance.Snapshot stream, harness.backup.snapshots.save_full), every member's
data deleted and made again from it with etcdutl (`snapshot restore`, LocalEnvironment.
restore_members), and the members started until all are healthy at the snapshot's revision.
Printed: the snapshot's size, the seconds to take it, to restore the three data directories, and
from the start of the members to a healthy cluster. etcd's data is on tmpfs, so the figures are
etcd's and etcdutl's own work, without a disk's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_figures import go_benchmark  # noqa: E402
from harness.backup.snapshots import save_full  # noqa: E402
from harness.config import load_config  # noqa: E402
from harness.etcd_builds import etcdutl_binary  # noqa: E402
from harness.providers.local.region import LocalEnvironment, LocalRegion  # noqa: E402


def fill(env: LocalEnvironment, keys: int) -> float:
    leader = env.member(env.leader(env.wait_healthy()))  # type: ignore[arg-type]
    began = time.monotonic()
    subprocess.run(["ip", "netns", "exec", env.names.client_ns(leader.zone), str(go_benchmark()), "put",
                    f"--endpoints={leader.client_url}", "--clients=50", "--conns=10", f"--total={keys}",
                    "--val-size=1024", "--key-size=32", "--sequential-keys", f"--key-space-size={keys}"],
                   check=True, capture_output=True, timeout=3600)
    return time.monotonic() - began


def one_run(env: LocalEnvironment, etcdutl: Path, workdir: Path) -> dict[str, float]:
    leader = env.leader(env.wait_healthy())
    client = env.client(leader, None, timeout=30.0)  # type: ignore[arg-type]
    try:
        snap = save_full(client, workdir / "full.db", etcdutl, timeout=3600.0)
    finally:
        client.close()
    restore_s = env.restore_members(snap.path, etcdutl)
    began = time.monotonic()
    statuses = env.wait_healthy(600.0)
    serve_s = time.monotonic() - began
    revisions = {s.revision for s in statuses.values() if not isinstance(s, str)}
    if revisions != {snap.revision}:
        raise SystemExit(f"restored members are at {revisions}, the snapshot at {snap.revision}")
    snap.path.unlink()
    return {"size_mib": snap.size / 2**20, "keys": snap.keys, "save_s": snap.seconds, "restore_s": restore_s,
            "serve_s": serve_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="10000,100000,1000000")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    etcdutl = etcdutl_binary()
    for keys in (int(k) for k in args.keys.split(",")):
        region = LocalRegion(load_config(overrides={"region.name": "bsr"}))
        region.down()
        env = region.up()
        try:
            took = fill(env, keys)
            print(f"{keys} keys of 1 KiB written in {took:.1f} s", flush=True)
            with tempfile.TemporaryDirectory(prefix="bench-snapshot-", dir="/var/tmp") as tmp:
                for i in range(args.runs):
                    r = one_run(env, etcdutl, Path(tmp))
                    print(f"{keys} keys, run {i + 1}: snapshot {r['size_mib']:.1f} MiB ({r['keys']:.0f} keys in its "
                          f"backend) taken in {r['save_s']:.2f} s; 3 members restored in {r['restore_s']:.2f} s, "
                          f"healthy {r['serve_s']:.2f} s after they started", flush=True)
        finally:
            region.down()


if __name__ == "__main__":
    main()
