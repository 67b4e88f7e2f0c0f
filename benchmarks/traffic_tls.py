"""GEP-20's traffic rows over plain HTTP and over TLS, side by side with GEP-20's figures.

    python benchmarks/traffic_tls.py [--seconds S] [--profiles idle,gep-put-leader,gep-put-follower]

For each transport a region of its own comes up ([etcd] tls off, then on); for each named load
(harness/load/profiles.py) the cross-zone traffic is measured for S seconds (wire bytes at the
router and the members' peer metrics, harness/probes/traffic.py). Printed per row: wire and
metrics KiB/s for plain and TLS, TLS's extra wire bytes in percent, and GEP-20's figure (its
peers spoke TLS).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from harness.config import load_config
from harness.load.profiles import resolve
from harness.load.runner import LoadRun
from harness.probes.traffic import TrafficProbe
from harness.validate.traffic import rates
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline

GEP20_KIB_S = {"idle": 10.5, "gep-put-leader": 412.0, "gep-put-follower": 517.0}


def measure(env: LocalEnvironment, profile: str, seconds: float, workdir: Path) -> tuple[float, float]:
    resolved = resolve(profile, env)
    run = None
    if resolved is not None:
        spec, netns = resolved
        run = LoadRun(spec, netns, workdir / profile, Timeline()).start()
        run.wait_started()
    try:
        time.sleep(1.0)  # past the load's start-up
        figures = rates(*TrafficProbe(env).window(seconds))
    finally:
        if run is not None:
            run.stop()
    return figures["total_kib_s"]["wire"], figures["total_kib_s"]["metrics"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--profiles", default="idle,gep-put-leader,gep-put-follower")
    args = ap.parse_args()
    profiles = args.profiles.split(",")
    rows: dict[str, dict[str, tuple[float, float]]] = {p: {} for p in profiles}
    for transport in ("plain", "tls"):
        region = LocalRegion(load_config(overrides={"region.name": "bt", "etcd.tls": transport == "tls"}))
        region.down()
        env = region.up()
        try:
            with tempfile.TemporaryDirectory(prefix="bench-traffic-", dir=env.config.state_dir / "bt") as tmp:
                for p in profiles:
                    rows[p][transport] = measure(env, p, args.seconds, Path(tmp))
                    print(f"{transport} {p}: wire {rows[p][transport][0]} KiB/s, metrics {rows[p][transport][1]} KiB/s",
                          flush=True)
        finally:
            region.down()
    print(f"{'row':<18} {'plain wire':>10} {'tls wire':>9} {'tls extra':>9} {'plain metrics':>13} {'tls metrics':>11} "
          f"{'GEP-20':>7}")
    for p in profiles:
        (pw, pm), (tw, tm) = rows[p]["plain"], rows[p]["tls"]
        extra = f"{(tw / pw - 1) * 100:+.0f} %" if pw else "-"
        print(f"{p:<18} {pw:>10} {tw:>9} {extra:>9} {pm:>13} {tm:>11} {GEP20_KIB_S.get(p, '-'):>7}")


if __name__ == "__main__":
    main()
