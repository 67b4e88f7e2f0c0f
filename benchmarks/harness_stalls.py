"""The harness's own stalls under a scenario: how long and how often its probe's canary (a thread
asking to wake every 5 ms) woke late, on an idle machine and beside CPU hogs.

    python benchmarks/harness_stalls.py [--runs 2] [--hogs 0,3] [-k NODE_ID_PART]

A stall is a stretch in which no probe thread could run either: a write gap or a latency measured
across it may be the harness's, and a bound missed by no more than it is inconclusive. By default
the scenario is the AWS zone outage of features/aws.feature (boto3 calls while the probes run).
Prints one line per run: stalls counted, their sum, the five longest and when the longest began.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdicts_under_load import cpu_hogs  # noqa: E402  (a busy CI neighbour)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "test_a_denyall_network_acl_and_revoked_machine_credentials_take_zonea_out_as_in_gep20"


def stalls(run_file: Path) -> list[tuple[float, float]]:
    """(length, begin) of every stall the run's probes recorded, longest first."""
    data = json.loads(run_file.read_text())
    found = []
    for history in data.get("histories", []):
        names = history["fields"]
        for row in history["samples"]:
            s = dict(zip(names, row))
            if s["kind"] == "stall":
                found.append((s["end"] - s["start"], s["start"]))
    return sorted(found, reverse=True)


def run_once(part: str) -> tuple[bool, list[tuple[float, float]]]:
    runs = ROOT / "reports" / "runs"
    before = {p: p.stat().st_mtime for p in runs.glob("*.json")} if runs.exists() else {}
    proc = subprocess.run([sys.executable, "-m", "pytest", "features/test_features.py", "-k", part, "-q",
                           "-p", "no:cacheprovider", "--inconclusive=error", "--region-name=stb"],
                          cwd=ROOT, capture_output=True, text=True)
    written = [p for p in runs.glob("*.json") if before.get(p) != p.stat().st_mtime]
    if len(written) != 1:
        raise SystemExit(f"-k {part!r} must select one scenario that writes a run file; it wrote {len(written)}:\n"
                         f"{proc.stdout[-800:]}")
    return proc.returncode == 0, stalls(written[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--hogs", default="0,3", help="comma-separated numbers of CPU-bound processes beside it")
    ap.add_argument("-k", dest="part", default=DEFAULT, help="a part of the scenario's test name")
    args = ap.parse_args()
    for hogs in (int(h) for h in args.hogs.split(",")):
        for i in range(args.runs):
            with cpu_hogs(hogs):
                passed, found = run_once(args.part)
            top = ", ".join(f"{length:.3f}" for length, _ in found[:5])
            at = f" (the longest from {found[0][1]:.1f} s)" if found else ""
            print(f"hogs {hogs} run {i + 1}: {'passed' if passed else 'NOT passed'}, {len(found)} stalls, "
                  f"sum {sum(length for length, _ in found):.3f} s, longest {top or '-'}{at}", flush=True)


if __name__ == "__main__":
    main()
