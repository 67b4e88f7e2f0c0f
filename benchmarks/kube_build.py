"""Benchmark: building the pinned Kubernetes binaries, and finding them once cached.

    python benchmarks/kube_build.py                      # cached lookup only (builds first if needed)
    python benchmarks/kube_build.py --cold               # also a build into an empty harness cache
    python benchmarks/kube_build.py --cold --fresh-go-cache   # truly cold: empty Go build cache too (slow)

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.kube.binaries import (
    PINNED_VERSION,
    BinarySources,
    build_binaries,
    cache_dir,
    ensure_binaries,
    sources_from_env,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cold", action="store_true", help="build into an empty cache dir and time it")
    parser.add_argument("--cache-root", type=Path, help="cache root for --cold (default: a fresh temporary dir)")
    parser.add_argument("--fresh-go-cache", action="store_true", help="with --cold: use an empty GOCACHE as well")
    parser.add_argument("--lookups", type=int, default=5, help="cached lookups to time")
    args = parser.parse_args()

    if args.cold:
        # Temporary directories are removed however the build ends; a given --cache-root is kept.
        with contextlib.ExitStack() as temporary:
            def scratch(prefix: str) -> Path:
                return Path(temporary.enter_context(tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)))

            root = args.cache_root or scratch("kube-build-bench-")
            if cache_dir(root).exists():
                parser.error(f"{cache_dir(root)} exists already; a cold build needs it absent")
            gocache = None
            if args.fresh_go_cache:
                gocache = scratch("gocache-")
                os.environ["GOCACHE"] = str(gocache)
                temporary.callback(os.environ.pop, "GOCACHE", None)
            started = time.monotonic()
            target = build_binaries(root)
            cold = time.monotonic() - started
            print(f"cold build ({'empty' if gocache else 'warm'} Go build cache) of {PINNED_VERSION}: {cold:.1f}s -> {target}")

    sources = sources_from_env()
    ensure_binaries(sources)  # builds on first use, so the timings below are the cached path
    cached_only = BinarySources(None, None, sources.cache_root)
    times = []
    for _ in range(args.lookups):
        started = time.monotonic()
        ensure_binaries(cached_only, build=False)
        times.append(time.monotonic() - started)
    times.sort()
    print(f"cached lookup incl. --version checks of 5 binaries: median {times[len(times) // 2] * 1000:.0f} ms, "
          f"min {times[0] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms over {len(times)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
