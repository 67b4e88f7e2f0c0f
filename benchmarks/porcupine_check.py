"""How long Porcupine takes to check a long mixed history.

    python benchmarks/porcupine_check.py [--seconds 60] [--rate 1500] [--clients 20] [--keys 1000]
                                         [--indeterminate 0.002] [--runs 3] [--visualize OUT.html]

Simulates a linearizable store (harness/validate/simulate.py: 60% get, 30% put, 5% delete,
5% compare-and-put txn; 20% of the operations on 10 hot keys; some writes time out and are
indeterminate), then checks the history with the porcupine-check helper. Prints the history's
shape and, per run, Porcupine's own check time and the wall time of `check()` (JSON encoding,
process start, decoding included). Then once more with one stale read injected, to time the
failing path: naming the offending key and writing the visualisation.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

from harness.validate import linearizability, oplog
from harness.validate.simulate import simulate, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=1500.0)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--indeterminate", type=float, default=0.002, help="share of writes that time out")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--visualize", type=Path, default=None, help="where to write the failing run's HTML")
    args = ap.parse_args()

    exe = linearizability.helper_binary()
    t = time.monotonic()
    run = simulate(duration_s=args.seconds, rate=args.rate, clients=args.clients, keys=args.keys,
                   indeterminate=args.indeterminate)
    print(f"simulated in {time.monotonic() - t:.2f}s: {summary(run)}")
    print(f"history JSON: {len(oplog.dumps(run.ops)) / 1e6:.1f} MB")

    checks, walls = [], []
    for i in range(args.runs):
        t = time.monotonic()
        v = linearizability.check(run.ops, None, exe)
        walls.append(time.monotonic() - t)
        checks.append(v.elapsed_s)
        print(f"run {i + 1}: {v.result}, Porcupine {v.elapsed_s:.3f}s, check() wall {walls[-1]:.3f}s")
        assert v.ok, v
    print(f"clean history: Porcupine median {statistics.median(checks):.3f}s, check() wall median {statistics.median(walls):.3f}s "
          f"for {v.operations:,} operations ({v.operations / args.seconds:,.0f} ops/s over {args.seconds:.0f}s)")

    # One stale read: a get on the hottest key answered with the value before the one it read.
    ops = list(run.ops)
    hot = Counter(o.key for o in ops).most_common(1)[0][0]
    reads = [i for i, o in enumerate(ops) if o.kind == "get" and o.ok and o.result is not None and o.key == hot]
    puts = {o.value: o for o in ops if o.kind == "put" and o.ok}
    for i in reversed(reads):
        older = [o for o in puts.values() if o.key == hot and o.ret is not None and o.ret < puts.get(ops[i].result, ops[i]).invoke]
        if ops[i].result in puts and older:
            ops[i] = replace(ops[i], result=max(older, key=lambda o: o.ret or 0.0).value)
            break
    with tempfile.TemporaryDirectory() as tmp:
        vis = args.visualize or Path(tmp) / "porcupine.html"
        t = time.monotonic()
        v = linearizability.check(ops, vis, exe)
        wall = time.monotonic() - t
        size = vis.stat().st_size / 1e6 if vis.exists() else 0.0
        print(f"with one stale read: {v.result} (keys {list(v.illegal_keys)}), Porcupine {v.elapsed_s:.3f}s, "
              f"check() wall {wall:.3f}s incl. a {size:.1f} MB visualisation")
        print(v)


if __name__ == "__main__":
    main()
