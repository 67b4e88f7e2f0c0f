"""How long a member cut off with its zone takes to hear from its peers again once the cut heals.

    python benchmarks/rejoin_after_outage.py [--outages 5,15,30]

For each outage length, the zone of a follower and then the zone of the leader is cut (the
router drops its packets, as a deny-all network ACL does) and healed; printed: the seconds from
the heal until the cut-off member reports a leader, and until every member agrees on one, and the
TCP retransmission timer of the member's peer connections just before the heal (`ss`). etcd's
peer streams have no read timeout of their own: the connections stay established through the
cut, TCP backs off (its retransmission timeout doubles with each lost try), and the member is
back only when the next retry gets through, which after a long silence comes long after the heal.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Callable

from harness import netns
from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline


def _until(check: Callable[[], bool], interval: float = 0.05) -> float:
    began = time.monotonic()
    while not check():
        time.sleep(interval)
    return time.monotonic() - began


def one_run(env: LocalEnvironment, outage: float, which: str) -> str:
    leader = env.member(env.leader(env.wait_healthy()))  # type: ignore[arg-type]
    target = leader if which == "leader" else next(m for m in env.members if m.name != leader.name)
    runner = FaultRunner(env, Timeline())
    runner.inject("zone-outage", target.zone)
    try:
        time.sleep(outage)
        listed = netns.ns_run(env.state["members"][target.name]["ns"],
                              ["ss", "-tnio", "state", "established", "( sport = :2380 or dport = :2380 )"])
    finally:
        runner.heal(wait=False)
    began = time.monotonic()

    def has_leader() -> bool:
        st = env.status(via_zone=target.zone).get(target.name)
        return not isinstance(st, str) and bool(st.leader)

    def agreed() -> bool:
        sts = env.status()
        return all(not isinstance(s, str) and s.leader for s in sts.values()) and len(
            {s.leader for s in sts.values() if not isinstance(s, str)}) == 1

    heard = _until(has_leader)
    _until(agreed)
    rto = max((int(n) for n in re.findall(r"rto:(\d+)", listed)), default=0)
    return (f"outage {outage:g} s of the {which}'s zone ({target.name}): a leader {heard:.1f} s after the heal, "
            f"all agree after {time.monotonic() - began:.1f} s; its peer connections' TCP rto before the heal "
            f"{rto / 1000:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--outages", default="5,15,30", help="outage lengths in seconds, comma-separated")
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "rj"}))
    region.down()
    env = region.up()
    try:
        for outage in (float(x) for x in args.outages.split(",")):
            for which in ("follower", "leader"):
                print(one_run(env, outage, which), flush=True)
    finally:
        region.down()


if __name__ == "__main__":
    main()
