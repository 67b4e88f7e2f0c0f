"""What etcd-druid reports through a zone outage, next to what its pods do: the reference deployed
with etcd-druid's etcds (`harness deploy --form gardener --real --druid`), zone-a cut off for
`--outage` seconds, then healed.

    python benchmarks/druid_status.py [--outage 300] [--after 240]

Brings up region "bdru" with its seed, gardener-resource-manager and etcd-druid. Every second
through the outage and up to `--after` s after the heal it reads etcd-main's `Etcd` status and
prints each change, timed from the cut and from the heal: `status.ready` and its ready replicas,
the conditions, each member's status; and when etcd-main's pods were all Running and ready again.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config  # noqa: E402
from harness.faults.runner import FaultRunner  # noqa: E402
from harness.errors import HarnessError  # noqa: E402
from harness.kube import cluster, druid, placement  # noqa: E402
from harness.probes.etcd_status import read_of  # noqa: E402
from harness.providers.local.region import LocalRegion  # noqa: E402
from harness.reference.deploy import deploy  # noqa: E402
from harness.reference.render import ReferenceSpec  # noqa: E402
from harness.timeline import Timeline  # noqa: E402

NAMESPACE, ZONE = "shoot--bench--druid", "zone-a"


def druid_view(api: Any) -> str:
    """etcd-main's status as druid writes it, in a line (harness.probes.etcd_status)."""
    try:
        return read_of(0.0, "etcd-main", druid.etcd_status(api, NAMESPACE, "etcd-main"), time.time()).says()
    except HarnessError as e:  # a failed read is printed as what was seen
        return f"unreadable: {e}"


def pods_ready(api: Any) -> bool:
    pods = placement.of(placement.observe(api, NAMESPACE), "etcd-main")
    return len(pods) == 3 and all(p.phase == "Running" and p.ready for p in pods)


def watch(api: Any, until: float, cut: float, healed: float | None, last: Any) -> Any:
    while time.monotonic() < until:
        now = druid_view(api)
        if now != last:
            at = time.monotonic()
            since = f"{at - cut:6.1f} s after the cut" + (f", {at - healed:6.1f} s after the heal" if healed else "")
            print(f"{since}: {now}", flush=True)
            last = now
        time.sleep(1.0)
    return last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outage", type=float, default=300.0)
    ap.add_argument("--after", type=float, default=240.0)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bdru"}))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        env.start_resource_manager()
        env.start_etcd_druid()
        deploy(seed, ReferenceSpec("zone", env.zones, "gardener", NAMESPACE, seed.storage_class, real=True, druid=True),
               420.0)
        api = cluster.connect(seed.kube)
        runner = FaultRunner(env, Timeline())
        active = runner.inject("zone-outage", ZONE)
        cut = time.monotonic()
        try:
            last = watch(api, cut + args.outage, cut, None, None)
        finally:
            runner.heal(active)
        healed = time.monotonic()
        ready_at = None
        while time.monotonic() < healed + args.after:
            last = watch(api, time.monotonic() + 1.0, cut, healed, last)
            if ready_at is None and pods_ready(api):
                ready_at = time.monotonic() - healed
                print(f"etcd-main's pods all Running and ready {ready_at:.1f} s after the heal", flush=True)
    finally:
        region.down()


if __name__ == "__main__":
    main()
