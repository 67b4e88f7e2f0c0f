"""Added latency between zones without netem (this kernel has none): a delay line in userspace.

In the router, policy routing sends what a zone sends to another zone (by the bridge it came in
on, its source and destination subnets) to a TUN device; this process reads each packet from the
device, holds it for the delay (plus a uniform jitter), and writes it back into the same device.
Coming in on the TUN device, the packet no longer matches the rule and goes its usual way, to
the destination zone. Packets keep their order unless the jitter is larger than their spacing
(as with netem). If the process dies, its device goes with it, the routes through it too, and
the traffic flows again undelayed: a crash fails open, and the fault's heal removes the rules.

    ip netns exec ROUTER python -m harness.providers.local.host.delay_line --dev hd-... --delay-ms 50 --jitter-ms 5
"""

from __future__ import annotations

import argparse
import fcntl
import heapq
import os
import random
import select
import signal
import struct
import subprocess
import sys
import threading
import time

TUNSETIFF, IFF_TUN, IFF_NO_PI = 0x400454CA, 0x0001, 0x1000
MAX_HELD = 100_000  # packets held at once; beyond, new ones are dropped as a full queue would
REALTIME_PRIORITY = 10  # SCHED_RR, low among real-time ones: ahead of etcd, the probes and any neighbour
LATE_S = 0.005  # a packet released this long after it was due counts as late in the log


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def run(name: str, delay_s: float, jitter_s: float, ready: str | None, seed: int | None = None) -> None:
    fd = open_tun(name)
    for cmd in (["ip", "link", "set", name, "up"],
                # Packets written back come in on this device from another zone's subnet.
                ["sysctl", "-qw", f"net.ipv4.conf.{name}.rp_filter=0"]):
        subprocess.run(cmd, check=True)
    rng, held, lock = random.Random(seed), [], threading.Condition()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    order = 0
    realtime()  # before the release thread starts: it inherits the policy
    late = {"released": 0, "late": 0, "latest": 0.0}

    def release() -> None:
        while not stop.is_set():
            with lock:
                while not held and not stop.is_set():
                    lock.wait(0.2)
                if not held:
                    continue
                due = held[0][0]
                wait = due - time.monotonic()
                if wait > 0:
                    lock.wait(wait)
                    continue
                _, _, packet = heapq.heappop(held)
            os.write(fd, packet)
            behind = time.monotonic() - due
            late["released"] += 1
            late["late"] += behind > LATE_S
            late["latest"] = max(late["latest"], behind)

    threading.Thread(target=release, daemon=True).start()
    if ready:
        open(ready, "w").close()
    while not stop.is_set():
        if not select.select([fd], [], [], 0.2)[0]:
            continue
        packet = os.read(fd, 65535)
        due = time.monotonic() + max(0.0, delay_s + rng.uniform(-jitter_s, jitter_s))
        with lock:
            if len(held) < MAX_HELD:
                order += 1
                heapq.heappush(held, (due, order, packet))
                lock.notify()
    # What the line added beyond the delay it was asked for, in its log: a busy machine's share.
    print(f"released {late['released']} packets; {late['late']} more than {LATE_S * 1000:g} ms after they were due, "
          f"the latest {late['latest'] * 1000:.1f} ms", file=sys.stderr, flush=True)


def realtime() -> None:
    """Run as a kernel qdisc would, ahead of ordinary processes: on a busy machine a delay line at
    normal priority holds packets far longer than asked (writes timed out for a second behind a
    20 ms line beside CPU-bound neighbours), and the fault would be the harness's, not the one
    asked for. SCHED_RR, else a higher nice; neither permitted is said in the log."""
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(REALTIME_PRIORITY))
    except (OSError, AttributeError) as e:
        try:
            os.nice(-10)
        except OSError:
            print(f"delay line at normal priority ({e}): a busy machine may hold packets longer than asked",
                  file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.providers.local.host.delay_line", description=__doc__)
    p.add_argument("--dev", required=True)
    p.add_argument("--delay-ms", type=float, required=True)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--ready", default=None, help="a file created once the device is up")
    args = p.parse_args(argv)
    run(args.dev, args.delay_ms / 1000, args.jitter_ms / 1000, args.ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
