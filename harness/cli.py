"""`harness`: bring the local region up and down, inspect it, inject and heal faults, run the chaos job."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from harness import rootless
from harness.config import Config, load_config
from harness.errors import HarnessError
from harness.providers import get_provider
from harness.providers.local.region import LocalRegion
from harness.providers.local.state import read_state, state_path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__)
    p.add_argument("--config", type=Path, help="TOML file with [region], [etcd], [timeouts], [paths] (or HARNESS_CONFIG)")
    p.add_argument("--name", default=None, help="region name, prefixes its namespaces (default: hh)")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring the local region up (real etcd in per-zone network namespaces)")
    up.add_argument("--members", type=int, help="etcd members: 3 (default) or 5")
    up.add_argument("--layout", choices=["multi-zone", "single-zone"], help="members one per zone (default) or all in one zone")
    up.add_argument("--zones", help="comma-separated zone names (default: zone-a,zone-b,zone-c)")
    up.add_argument("--nodes-per-zone", type=int, help="nodes in each zone (default: 2)")
    up.add_argument("--etcd-bin", help="etcd binary (default: ETCD_BIN or `etcd` on PATH)")
    up.add_argument("--kubernetes", action="store_true",
                    help="also start a local Kubernetes control plane with one kwok node per region node "
                         "(binaries built from pinned Go modules on first use, then cached)")
    st = sub.add_parser("status", help="zones, nodes and members with health, leader, raft term, revision")
    st.add_argument("--json", action="store_true", help="print JSON")
    sub.add_parser("down", help="remove the region and anything a crashed run left (processes, namespaces, nftables)")
    sub.add_parser("heal", help="undo every fault still applied (from the heal ledger, then a sweep)")
    fault = sub.add_parser("fault", help="inject one fault and leave it applied until `harness heal`")
    fault.add_argument("kind", help="zone-outage, node-kill, node-freeze, node-link-down, member-kill")
    fault.add_argument("target", help="a zone, node or member name")
    run = sub.add_parser("run", help="the chaos job: each zone goes down in turn under probes; prints and writes a report")
    run.add_argument("--outage", type=float, default=4.0, help="seconds each zone stays down (default 4)")
    run.add_argument("--report", type=Path, default=None, help="JSON report path (default: reports/chaos-run.json)")
    return p


def _config(args: argparse.Namespace) -> Config:
    overrides: dict[str, Any] = {}
    if args.name:
        overrides["region.name"] = args.name
    if args.command == "up":
        for key, value in (("members", args.members), ("layout", args.layout), ("nodes_per_zone", args.nodes_per_zone)):
            if value is not None:
                overrides[f"region.{key}"] = value
        if args.zones:
            overrides["region.zones"] = [z.strip() for z in args.zones.split(",") if z.strip()]
        if args.etcd_bin:
            overrides["etcd.binary"] = args.etcd_bin
    return load_config(args.config, overrides)


def _print_status(desc: dict[str, Any]) -> None:
    print(f"region {desc['region']} ({desc['layout']}), etcd {desc['etcd']['version']} at {desc['etcd']['path']}")
    for z in desc["zones"]:
        nodes = ", ".join(n["name"] for n in desc["nodes"] if n["zone"] == z["name"])
        down = f"  FAULTS: {', '.join(z['faults'])}" if z["faults"] else ""
        print(f"  {z['name']:<10} {z['subnet']:<15} nodes: {nodes}{down}")
    print(f"  {'member':<8} {'zone':<10} {'node':<12} {'health':<12} {'leader':<7} {'term':>5} {'revision':>9}")
    for m in desc["members"]:
        print(f"  {m['name']:<8} {m['zone']:<10} {m['node']:<12} {m['health']:<12} {str(m.get('leader', '-')):<7} "
              f"{m.get('raft_term', '-'):>5} {m.get('revision', '-'):>9}")
    print(f"  leader: {desc['leader'] or 'none'}; active faults: {', '.join(desc['active_faults']) or 'none'}")
    if desc.get("kubernetes"):
        print(f"  kubernetes: {desc['kubernetes']['apiserver']}, kubeconfig {desc['kubernetes']['kubeconfig']}")
    print("  (health is each member's own answer, asked from inside its zone)")


def _dispatch(args: argparse.Namespace, config: Config) -> int:
    region = get_provider("local", config)
    assert isinstance(region, LocalRegion)
    if args.command == "up":
        env = region.up()
        print(f"region {config.region.name} is up: {len(env.zones)} zones, {len(env.nodes)} nodes, "
              f"{len(env.members)} etcd members (etcd {env.state['etcd']['version']}); state in {env.path}")
        if args.kubernetes:
            from harness.providers.local.kubernetes import start_for

            try:
                kube = start_for(env)
            except BaseException:
                region.down()  # all or nothing: no region without the control plane asked for
                raise
            print(f"kubernetes API server {kube['apiserver']}, {len(env.nodes)} nodes Ready\n"
                  f"kubeconfig: {kube['kubeconfig']}\n  export KUBECONFIG={kube['kubeconfig']}")
        return 0
    if args.command == "down":
        removed = region.down()
        print(f"removed {len(removed)} item(s)" + "".join(f"\n  {r}" for r in removed) if removed else "nothing to remove")
        return 0
    if args.command == "run":
        from harness.chaos_run import run_all

        report = args.report or config.reports_dir / "chaos-run.json"
        if region.path.exists():
            return run_all(region.attach(), outage=args.outage, report=report)
        try:
            return run_all(region.up(), outage=args.outage, report=report)
        finally:
            region.down()
    env = region.attach()
    if args.command == "status":
        desc = env.describe()
        print(json.dumps(desc, indent=1)) if args.json else _print_status(desc)
        return 0
    if args.command == "heal":
        from harness.faults.runner import heal_everything

        done = heal_everything(env)
        print("\n".join(done) if done else "no fault was applied")
        env.wait_healthy(config.timeouts.recovery)
        print("region healthy")
        return 0
    if args.command == "fault":
        from harness.faults.runner import FaultRunner
        from harness.timeline import Timeline

        active = FaultRunner(env, Timeline()).inject(args.kind, args.target)
        print(f"applied {active.id}; undo with `harness heal`")
        return 0
    raise AssertionError(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = _config(args)
        if rootless.needs_reexec():
            state = read_state(state_path(config.state_dir, config.region.name)) or {}
            rootless.reexec_if_needed(
                [sys.executable, "-m", "harness.cli", *(sys.argv[1:] if argv is None else argv)],
                holder=state.get("holder_pid"),
                keep_holder=args.command == "up",
            )
        return _dispatch(args, config)
    except HarnessError as e:
        print(f"harness: error: {e}", file=sys.stderr)
        return 2
    except PermissionError as e:
        print(f"harness: error: {e}; the region was made by another user, or needs root", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
