"""Seed 001's cases side by side: the seed's sentence, the harness's reading of the conventions,
and what Gardener's own high-availability-config webhook (gardener-resource-manager, real, on an
embedded control plane) made of the same workload.

    python benchmarks/conventions_gardener.py [--workdir DIR]

Prints a Markdown table and the differences; asserts nothing (tests/kube/test_resource_manager.py
pins the differences).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.kube import ControlPlaneSpec, ensure_binaries, sources_from_env, start_control_plane
from harness.kube import resource_manager as grm
from harness.reference.seed_cases import CASES, apply, by_the_conventions, deviations, placement


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, help="where the control plane lives (default: a temporary directory)")
    args = parser.parse_args()
    program = grm.binary()
    with tempfile.TemporaryDirectory(prefix="hh-grm-") as tmp:
        workdir = args.workdir or Path(tmp)
        cp = start_control_plane(ControlPlaneSpec(), workdir, ensure_binaries(sources_from_env()))
        try:
            started = time.monotonic()
            grm.start(cp, cp.zones, workdir / "gardener-resource-manager", program=program)
            print(f"gardener-resource-manager ({grm.PROGRAM.pin_label} {grm.PROGRAM.pinned_version()}) serving and "
                  f"registered in {time.monotonic() - started:.1f} s\n")
            print("| case | seed 001 | the harness's conventions | Gardener's webhook |")
            print("|---|---|---|---|")
            found: dict[str, list[str]] = {}
            for case in CASES:
                stored = apply(cp.client(), case)
                workload = next(o for o in stored if o["kind"] == case.kind)
                print(f"| {case.name} | {case.sentence} | {placement(by_the_conventions(case))} | {placement(workload)} |")
                found[case.name] = deviations(case, stored)
        finally:
            cp.stop()
    print("\nDifferences (the conventions' expectation against the webhook's result):")
    for name, lines in found.items():
        for line in lines:
            print(f"- {name}: {line}")
    if not any(found.values()):
        print("- none")
    return 0


if __name__ == "__main__":
    sys.exit(main())
