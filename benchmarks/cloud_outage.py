"""Zone outage through the local cloud's AWS API: how soon the region follows the API.

    python benchmarks/cloud_outage.py [--runs N] [--scope all|availability-zone] [--hold SECONDS]

Brings up region "cb" with its local cloud; per run, harness.aws.nacl.apply_zone_outage on zone-a,
then heal_zone_outage, while a prober in zone-b's client namespace starts a TCP connect to etcd-0
(zone-a) every 10 ms. Prints, per run and as median/min/max: the time from the apply call to the
first dropped connect, and from the heal call to the first passing one (with how long the API calls
took and when the reconciler says it applied the ACL).
"""

from __future__ import annotations

import argparse
import json
import random
import selectors
import socket
import statistics
import threading
import time

from harness import netns
from harness.aws.nacl import apply_zone_outage, heal_zone_outage, plan_zone_outage
from harness.config import load_config
from harness.providers.local.cloud.account import status_path
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.wait import wait_for

PERIOD = 0.01  # a connect started every 10 ms
PATIENCE = 0.2  # a connect not answered within this was dropped (a SYN is resent only after 1 s)


class Prober(threading.Thread):
    """Non-blocking connects on a fixed 10 ms grid, however long the dropped ones hang."""

    def __init__(self, ns: str, address: str, port: int) -> None:
        super().__init__(daemon=True)
        self.ns, self.target = ns, (address, port)
        self.samples: list[tuple[float, bool]] = []  # (started, answered)
        self.stop = threading.Event()

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        with netns.entered(self.ns):  # this thread only: its sockets are zone-b's
            next_at = time.monotonic()
            while not self.stop.is_set():
                now = time.monotonic()
                if now >= next_at:
                    s = socket.socket()
                    s.setblocking(False)
                    s.connect_ex(self.target)
                    sel.register(s, selectors.EVENT_WRITE, now)
                    next_at += PERIOD
                for key, _ in sel.select(timeout=max(0.0, next_at - time.monotonic())):
                    self._done(sel, key, key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)  # type: ignore[union-attr]
                for key in list(sel.get_map().values()):
                    if time.monotonic() - key.data > PATIENCE:
                        self._done(sel, key, False)

    def _done(self, sel: selectors.BaseSelector, key: selectors.SelectorKey, ok: bool) -> None:
        self.samples.append((key.data, ok))
        sel.unregister(key.fileobj)
        key.fileobj.close()  # type: ignore[union-attr]

    def first(self, since: float, ok: bool, timeout: float = 10.0) -> float:
        """Seconds from `since` to the first connect started after it with outcome `ok`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [t for t, answered in list(self.samples) if t >= since and answered == ok]
            if found:
                return min(found) - since
            time.sleep(0.02)
        raise TimeoutError(f"no {'passing' if ok else 'dropped'} connect within {timeout}s")


def applied_after(env: LocalEnvironment, wall: float) -> float:
    """When the reconciler says it applied zone-a's ACL, after `wall` (it notes it just after nft returns)."""
    def read() -> float:
        return float(json.loads(status_path(env.config, env.spec.name).read_text())["acls"]["zone-a"]["applied_at"])

    return wait_for(read, lambda applied: applied >= wall, "the reconciler's note of zone-a's ACL", 2.0) - wall


def summary(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{name}: median {statistics.median(ms):.0f} ms, min {min(ms):.0f} ms, max {max(ms):.0f} ms over {len(ms)} runs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--scope", choices=("all", "availability-zone"), default="all")
    ap.add_argument("--hold", type=float, default=1.0, help="seconds the outage lasts in each run")
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "cb", "region.subnet_prefix": "10.95"}))
    region.down()
    env = region.up()
    try:
        access = region.cloud(env)
        ec2 = access.client("ec2")
        target = env.member("etcd-0")
        prober = Prober(env.names.client_ns("zone-b"), target.client_url.split("//")[1].split(":")[0], 2379)
        prober.start()
        cut, back = [], []
        for run in range(1, args.runs + 1):
            plan = plan_zone_outage(ec2, access.vpc_id, access.az("zone-a"), args.scope)  # type: ignore[arg-type]
            prober.first(time.monotonic(), True)  # the zone is reachable before the run
            time.sleep(random.uniform(0, 0.15))  # calls land anywhere in the reconciler's poll period
            t0, wall0 = time.monotonic(), time.time()
            data = apply_zone_outage(ec2, plan, f"bench-{run}")
            call = time.monotonic() - t0
            cut.append(prober.first(t0, False))
            applied = applied_after(env, wall0)
            time.sleep(args.hold + random.uniform(0, 0.15))
            t1, wall1 = time.monotonic(), time.time()
            heal_zone_outage(ec2, data)
            heal_call = time.monotonic() - t1
            back.append(prober.first(t1, True))
            healed = applied_after(env, wall1)
            print(f"run {run}: apply call {call * 1000:.0f} ms, reconciler applied at +{applied * 1000:.0f} ms, "
                  f"first dropped connect +{cut[-1] * 1000:.0f} ms; heal call {heal_call * 1000:.0f} ms, "
                  f"reconciler applied at +{healed * 1000:.0f} ms, first passing connect +{back[-1] * 1000:.0f} ms")
            time.sleep(0.3)
        prober.stop.set()
        print(f"zone outage of zone-a by network ACL swap (scope {args.scope}), reconciler woken by each change:")
        print("  " + summary("apply_zone_outage -> first dropped packet", cut))
        print("  " + summary("heal_zone_outage -> first passing packet", back))
    finally:
        region.down()


if __name__ == "__main__":
    main()
