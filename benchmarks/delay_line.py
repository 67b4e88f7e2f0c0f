"""The delay line (zone-link-delay): added latency achieved against asked, its jitter, and the
throughput it lets through.

    python benchmarks/delay_line.py [--delays 1,10,50,100] [--probes 100] [--seconds 3]

On a region of its own, for each asked delay on the path zone-a>zone-b (one way): datagram
round trips from zone-a's client namespace to an echo in zone-b's, against the same path
without the fault (added latency: the median's difference; jitter: the standard deviation); then
a TCP stream from zone-a to zone-b for --seconds with no delay and through the line (0 ms asked
is not accepted, so 1 ms), in MB/s: the line's throughput ceiling, userspace Python per packet.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import threading
import time

from harness import netns
from harness.config import load_config
from harness.faults.runner import FaultRunner
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.timeline import Timeline


def stream_mb_s(env: LocalEnvironment, seconds: float) -> float:
    """A TCP stream from zone-a's client namespace to zone-b's for `seconds`; MB/s received."""
    with netns.entered(env.names.client_ns("zone-b")):
        server = socket.socket()
    server.bind((env.names.client_address("zone-b"), 0))
    server.listen(1)
    got = [0]

    def sink() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1 << 16):
                got[0] += len(data)

    reader = threading.Thread(target=sink, daemon=True)
    reader.start()
    with netns.entered(env.names.client_ns("zone-a")):
        client = socket.socket()
    chunk = bytes(1 << 16)
    with server, client:
        client.connect(server.getsockname())
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            client.sendall(chunk)
        client.shutdown(socket.SHUT_WR)
        reader.join(30)
        return got[0] / (time.monotonic() - began) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delays", default="1,10,50,100")
    ap.add_argument("--probes", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "bd"}))
    region.down()
    env = region.up()

    def trips() -> list[float]:
        return netns.udp_round_trips(env.names.client_ns("zone-a"), env.names.client_ns("zone-b"),
                                     env.names.client_address("zone-b"), args.probes)

    try:
        base = trips()
        print(f"no delay: round trip median {statistics.median(base):.2f} ms, stdev {statistics.stdev(base):.2f} ms")
        runner = FaultRunner(env, Timeline())
        for asked in (float(d) for d in args.delays.split(",")):
            runner.inject("zone-link-delay", "zone-a>zone-b", {"delay_ms": asked})
            delayed = trips()
            runner.heal()
            print(f"asked {asked:g} ms: added {statistics.median(delayed) - statistics.median(base):.2f} ms, "
                  f"jitter (stdev) {statistics.stdev(delayed):.2f} ms, max {max(delayed):.2f} ms", flush=True)
        plain = stream_mb_s(env, args.seconds)
        runner.inject("zone-link-delay", "zone-a>zone-b", {"delay_ms": 1})
        through = stream_mb_s(env, args.seconds)
        runner.heal()
        print(f"TCP stream zone-a>zone-b: {plain:.0f} MB/s without, {through:.1f} MB/s through the delay line (1 ms)")
    finally:
        region.down()


if __name__ == "__main__":
    main()
