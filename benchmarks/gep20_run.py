"""The GEP-20 experiment as the main job (`harness run`): wall time, the per-zone figures, and the
peak memory of the whole setup (every process the run added to the machine: etcd members, the
seed's control plane, kwoks, node agents, the shoot's etcd and kube-apiservers, HAProxy, the
harness itself), sampled every second.

    python benchmarks/gep20_run.py [--form gep20|conventions]

Also prints the time from nothing to a healthy reference control plane running for real
(`harness up --kubernetes` + `harness deploy --real`: every pod Running and ready, the shoot API
answering through the load balancer). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_by_pid() -> dict[int, int]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                for line in (entry / "status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        out[int(entry.name)] = int(line.split()[1])
            except OSError:
                pass
    return out


def sample_peak(baseline: set[int], stop: threading.Event, peak: list[int]) -> None:
    while not stop.is_set():
        total = sum(kb for pid, kb in rss_by_pid().items() if pid not in baseline)
        peak[0] = max(peak[0], total)
        stop.wait(1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--form", default="gep20")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gep20-run-") as tmp:  # removed however the run ends
        return run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> int:
    env = dict(os.environ, KUBECONFIG=str(tmp / "config"))
    harness = [sys.executable, "-m", "harness.cli", "--name", "bgep"]
    subprocess.run([*harness, "down"], cwd=ROOT, env=env, capture_output=True)

    started = time.monotonic()
    for step in (["up", "--kubernetes"], ["deploy", "--tolerance", "zone", "--form", args.form, "--real"]):
        subprocess.run([*harness, *step], cwd=ROOT, env=env, check=True, capture_output=True)
    print(f"nothing -> reference control plane running for real, every pod ready: {time.monotonic() - started:.1f} s")
    subprocess.run([*harness, "down"], cwd=ROOT, env=env, check=True, capture_output=True)

    baseline, stop, peak = set(rss_by_pid()), threading.Event(), [0]
    sampler = threading.Thread(target=sample_peak, args=(baseline, stop, peak), daemon=True)
    sampler.start()
    report = tmp / "run.json"
    started = time.monotonic()
    proc = subprocess.run([*harness, "run", "--form", args.form, "--report", str(report)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    took = time.monotonic() - started
    stop.set()
    sampler.join()
    print(f"harness run ({args.form} form, 3 zones): {took:.0f} s wall, exit {proc.returncode}; "
          f"peak memory of the whole setup {peak[0] / 1024:.0f} MiB")
    for r in json.loads(report.read_text())["results"]:
        print(f"  {r['zone']}: NotReady after {r['not_ready_after']} s; rescheduled kube-apiserver Ready after "
              f"{r['apiserver_ready_after']} s; members Pending after {r['moved_after']} s; "
              f"longest write gap etcd-main {r['etcd_write_gap']} s, "
              f"shoot API {r['shoot_write_gap']} s; all Running {r['recovered_after']} s after the return")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
