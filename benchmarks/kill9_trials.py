"""kill -9 of the harness mid-outage, many times: is everything restored, by the watchdog or by `harness heal`?

Each trial starts a harness process that injects the fault through the fault runner with a short
maximum duration and then hangs; the trial kills it with SIGKILL (no cleanup line runs), then
either waits for the fault's watchdog or runs `harness heal` at once, and checks that everything is
back: ledger empty, no fault table at the router, (AWS) every subnet on its original network ACL and
no harness ACL left, the machine credentials' deny policy gone, and the etcd cluster healthy.

    python benchmarks/kill9_trials.py [--trials 20] [--fault aws-zone-outage|zone-outage] [--max-duration 3]

Prints one line per trial and the counts; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.config import load_config, to_dict  # noqa: E402
from harness import netns  # noqa: E402
from harness.providers.local.region import LocalEnvironment, LocalRegion  # noqa: E402

HANG = textwrap.dedent("""
    import json, sys, time
    from harness.config import from_dict
    from harness.faults.runner import FaultRunner
    from harness.providers.local.region import LocalRegion
    from harness.timeline import Timeline
    config = from_dict(json.loads(sys.argv[1]))
    runner = FaultRunner(LocalRegion(config).attach(), Timeline())
    for kind, target in json.loads(sys.argv[3]):
        runner.inject(kind, target, max_duration=float(sys.argv[2]))
    print("injected", flush=True)
    time.sleep(600)
""")


def leftovers(env: LocalEnvironment) -> list[str]:
    """What is still applied; empty when everything is back."""
    left = [f"ledger {e['id']}" for e in env.faults()]
    tables = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
    left += [f"nft {line.split()[-1]}" for line in tables.splitlines() if "harness_" in line]
    access = env.aws()
    if access is not None:
        ec2, iam = access.client("ec2"), access.client("iam")
        acls = ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [access.vpc_id]}])["NetworkAcls"]
        left += [f"acl {a['NetworkAclId']}" for a in acls
                 if any(t["Key"] == "ha-harness/fault" for t in a.get("Tags", []))]
        if access.machine_principal:
            names = iam.list_user_policies(UserName=access.machine_principal)["PolicyNames"]
            left += [f"policy {n}" for n in names if n.startswith("ha-harness-deny-")]
    return left


def trial(env: LocalEnvironment, faults: list[tuple[str, str]], max_duration: float, then: str) -> tuple[bool, float]:
    proc = subprocess.Popen([sys.executable, "-c", HANG, json.dumps(to_dict(env.config)), str(max_duration),
                             json.dumps(faults)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if line != "injected":
        proc.kill()
        raise SystemExit(f"the harness process did not inject: {line!r}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = time.monotonic()
    if then == "harness heal":
        subprocess.run([sys.executable, "-m", "harness.cli", "--name", env.spec.name, "heal"], cwd=ROOT,
                       capture_output=True, check=False, timeout=120)
    deadline = killed + max_duration + 30
    while leftovers(env) and time.monotonic() < deadline:
        time.sleep(0.2)
    restored = not leftovers(env)
    took = time.monotonic() - killed
    if restored:
        env.wait_healthy(60)
    return restored, took


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--fault", choices=["aws-zone-outage", "zone-outage"], default="aws-zone-outage")
    p.add_argument("--max-duration", type=float, default=3.0)
    args = p.parse_args()
    region = LocalRegion(load_config(overrides={"region.name": "k9", "region.subnet_prefix": "10.94"}))
    region.down()
    env = region.up()
    try:
        faults = [(args.fault, "zone-a")]
        if args.fault.startswith("aws-"):
            region.cloud(env)
            faults.append(("aws-revoke-credentials", "machine-controller"))
        counts = {"watchdog": [0, 0], "harness heal": [0, 0]}
        for i in range(args.trials):
            then = "watchdog" if i % 2 == 0 else "harness heal"
            restored, took = trial(env, faults, args.max_duration, then)
            counts[then][0] += restored
            counts[then][1] += 1
            print(f"trial {i + 1:2d} ({then:12s}): {'restored' if restored else 'NOT RESTORED: ' + ', '.join(leftovers(env))}"
                  f" {took:5.1f} s after the kill", flush=True)
        for then, (ok, n) in counts.items():
            print(f"{then}: {ok}/{n} trials ended with everything restored")
    finally:
        region.down()


if __name__ == "__main__":
    main()
