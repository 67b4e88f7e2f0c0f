"""Load generation figures: what one locust process (and `--processes 2`) drives, next to etcd's
own Go `benchmark` tool doing the same puts in the same run on the same region, and how well
locust keeps a target rate.

    python benchmarks/load_figures.py [--seconds 20]

etcd's benchmark tool is built once from the pinned module harness/kube/gomod/etcd-benchmark
into ~/.cache/ha-harness/tools/. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.load.runner import LoadRun, LoadSpec  # noqa: E402
from harness.providers.local.region import LocalRegion  # noqa: E402
from harness.timeline import Timeline  # noqa: E402

MODULE = ROOT / "harness" / "kube" / "gomod" / "etcd-benchmark"


def go_benchmark() -> Path:
    out = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ha-harness" / "tools" / "etcd-benchmark-v3.5.11"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"building etcd's benchmark tool into {out} ...", file=sys.stderr, flush=True)
        subprocess.run(["go", "build", "-o", str(out), "go.etcd.io/etcd/v3/tools/benchmark"], cwd=MODULE, check=True)
    return out


def locust(netns: str, spec: LoadSpec, seconds: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="load-figures-") as tmp:
        run = LoadRun(spec, netns, Path(tmp), Timeline()).start()
        try:
            run.wait_started()
            time.sleep(seconds)
        except BaseException:
            run.stop_writers()  # not left writing into a directory about to be removed
            run.stop_watchers()
            raise
        stats = run.stop()
    requests = int(stats["requests"])  # type: ignore[arg-type]
    return {"ops_per_s": round(requests / seconds), "p99_ms": stats["p99_ms"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    tool = go_benchmark()
    region = LocalRegion(load_config(overrides={"region.name": "blf"}))
    region.down()
    env = region.up()
    try:
        leader = env.member(env.leader(env.wait_healthy()))  # type: ignore[arg-type]
        netns, host = env.names.client_ns(leader.zone), leader.client_url
        unbounded = 100_000.0
        rows = []
        for profile, processes in (("put", 1), ("put", 2), ("mixed", 1), ("mixed", 2)):
            figures = locust(netns, LoadSpec(profile, unbounded, (host,), users=30, processes=processes), args.seconds)
            rows.append((f"locust {profile}, --processes {processes}", figures))
        total = 30000
        started = time.monotonic()
        out = subprocess.run(["ip", "netns", "exec", netns, str(tool), "put", f"--endpoints={host}", "--clients=30",
                              "--conns=30", f"--total={total}", "--val-size=1024", "--key-size=32",
                              "--sequential-keys", "--key-space-size=1000000"], capture_output=True, text=True).stdout
        took = time.monotonic() - started
        match = re.search(r"Requests/sec:\s+([0-9.]+)", out)
        go_rate = float(match.group(1)) if match else total / took
        p99 = re.search(r"99% in ([0-9.]+) secs", out)
        rows.append(("etcd benchmark put (Go), 30 clients", {"ops_per_s": round(go_rate), "p99_ms": float(p99.group(1)) * 1000 if p99 else None}))
        for rate in (100, 500):
            figures = locust(netns, LoadSpec("put", rate, (host,), users=20), args.seconds)
            rows.append((f"locust put at {rate}/s (accuracy)", figures))
        for name, figures in rows:
            print(f"{name:<40} {figures['ops_per_s']:>7} ops/s   p99 {figures['p99_ms']} ms")
        put1 = rows[0][1]["ops_per_s"]
        print(f"locust (1 process) / Go benchmark, puts: {put1 / go_rate:.2f}; (2 processes): {rows[1][1]['ops_per_s'] / go_rate:.2f}")
    finally:
        region.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
