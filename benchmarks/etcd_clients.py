"""Which Python etcd client drives the load: each library under locust, same profile, same region.

    pip install etcd3 aetcd        # the candidates besides etcd-sdk-python (a dependency already)
    python benchmarks/etcd_clients.py [--seconds 15]

- etcd-sdk-python (`pyetcd`) and etcd3 under locust: the put profile at an unreachable rate
  (20 users) against one member, from its zone; etcd3 0.12 needs the pure-Python protobuf
  (PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python) on current protobuf.
- aetcd is asyncio-only: it cannot run under locust's gevent loop, so it is measured alone with
  20 concurrent tasks on its own event loop, the closest like-for-like.
Prints ops/s and p99 per library; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.load.runner import LOCUSTFILE  # noqa: E402
from harness.providers.local.region import LocalRegion  # noqa: E402

AETCD = """
import asyncio, sys, time, aetcd
async def main(host, seconds):
    client = aetcd.Client(host=host, port=2379)
    lat, n, end = [], [0], time.monotonic() + seconds
    async def worker(i):
        seq = 0
        while time.monotonic() < end:
            seq += 1; t = time.monotonic()
            await client.put(f"/bench/a/{i}/{seq}".encode(), b"x" * 1024)
            lat.append(time.monotonic() - t); n[0] += 1
    await asyncio.gather(*(worker(i) for i in range(20)))
    lat.sort(); print(n[0] / seconds, lat[int(len(lat) * 0.99)] * 1000)
asyncio.run(main(sys.argv[1], float(sys.argv[2])))
"""


def locust_run(netns: str, host: str, library: str, seconds: float) -> tuple[float, float]:
    import csv

    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python") if library == "etcd3" else dict(os.environ)
    with tempfile.TemporaryDirectory(prefix=f"clients-{library}-") as tmp:
        out = Path(tmp)
        subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-m", "locust", "-f", str(LOCUSTFILE),
                        "--headless", "-u", "20", "-r", "20", "-t", f"{int(seconds)}s", "--host", host, "--load-profile",
                        "put", "--rate", "100000", "--etcd-client", library, "--csv", str(out / "s"), "--only-summary",
                        "EtcdUser"], env=env, capture_output=True, check=True)
        with open(out / "s_stats.csv") as f:
            agg = next(r for r in csv.DictReader(f) if r["Name"] == "Aggregated")
    return int(agg["Request Count"]) / seconds, float(agg["99%"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bcl"}))
    region.down()
    env = region.up()
    try:
        m = env.members[0]
        netns, host = env.names.client_ns(m.zone), m.client_url
        results = {}
        for library in ("pyetcd", "etcd3"):
            results[library] = locust_run(netns, host, library, args.seconds)
        proc = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", AETCD, host.split("//")[1].split(":")[0],
                               str(args.seconds)], capture_output=True, text=True)
        results["aetcd"] = tuple(map(float, proc.stdout.split())) if proc.returncode == 0 else (0.0, float("nan"))
        for library, (ops, p99) in results.items():
            print(f"{library:<8} {ops:8.0f} puts/s   p99 {p99:6.1f} ms")
        print(json.dumps({k: {"puts_per_s": round(v[0]), "p99_ms": v[1]} for k, v in results.items()}))
    finally:
        region.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
