"""`harness`: bring an environment up and down, inspect it, inject and heal faults, render and
deploy the reference HA control plane, check workloads against the HA conventions, and run
the chaos job."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from harness import etcd_builds, rootless, task_commands
from harness.config import PROVIDER_NAMES, Config, load_config, option_overrides, zone_list
from harness.errors import CapabilityMissing, ConfigError, HarnessError
from harness.faults import FAULTS
from harness.processes import run_to_end
from harness.providers import get_provider
from harness.providers.base import (CloudStarter, Environment, Provider, SeedBackupStore, SeedEtcdDruid,
                                    SeedResourceManager)
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.state import read_state, state_path
from harness.reference import conventions_cli
from harness.reference.render import DEFAULT_NAMESPACE, FORMS, TOLERANCES
from harness.teardown import take_down

# Commands that need no environment (and no namespaces, so no rootless re-exec).
OFFLINE = ("render", "conventions", "report", "nightly", "explore", "steps")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness", description=__doc__)
    p.add_argument("--config", type=Path, help="TOML file with [region], [provider], [etcd], [timeouts], [paths] (or HARNESS_CONFIG)")
    p.add_argument("--name", default=None, help="local region name, prefixes its namespaces (default: hh)")
    p.add_argument("--provider", choices=PROVIDER_NAMES, default=None,
                   help="local (default: the embedded region and its seed), cluster (an existing kubeconfig context) or kind")
    p.add_argument("--kubeconfig", default=None,
                   help="kubeconfig the cluster provider reads and `up --kubernetes` merges its context into "
                        "(default: $KUBECONFIG, then ~/.kube/config)")
    p.add_argument("--context", default=None, help="cluster provider: kubeconfig context (default: the current one)")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring the environment up (local: real etcd in per-zone network namespaces)")
    up.add_argument("--members", type=int, help="etcd members: 3 (default) or 5")
    up.add_argument("--layout", choices=["multi-zone", "single-zone"], help="members one per zone (default) or all in one zone")
    up.add_argument("--zones", help="comma-separated zone names (default: zone-a,zone-b,zone-c)")
    up.add_argument("--nodes-per-zone", type=int, help="nodes in each zone (default: 2)")
    up.add_argument("--hosts-per-zone", type=int, help="physical hosts per zone; nodes share them round-robin (default: not modelled)")
    up.add_argument("--etcd-bin", help="an etcd binary of your own (default: ETCD_BIN, else --etcd-version)")
    up.add_argument("--etcd-version", help="an etcd release built from the Go module proxy on first use "
                                           "(default: the pinned one, v3.5.35)")
    up.add_argument("--data-on-disk", action="store_true", default=None,
                    help="etcd's data on a real filesystem ([paths] disk_data_dir) instead of tmpfs, where fsync costs "
                         "nothing")
    up.add_argument("--member-disk-mib", type=int,
                    help="each member's data directory on a filesystem of its own of this size (tmpfs, at least 160), "
                         "which the member-disk-full fault fills (default 0: one filesystem for all)")
    up.add_argument("--power-loss-fs", action="store_true", default=None,
                    help="each member's data directory served by powerloss-fs, which keeps writes in memory until "
                         "they are fsynced; the member-power-loss fault drops the rest (built on first use)")
    up.add_argument("--backups", action="store_true", default=None,
                    help="a backup sidecar beside each member taking full and delta snapshots into a bucket of the "
                         "region's local cloud (started for it)")
    up.add_argument("--full-period", type=float, help="with --backups: seconds between full snapshots (default 3600)")
    up.add_argument("--delta-period", type=float, help="with --backups: seconds between delta snapshots (default 5)")
    up.add_argument("--kubernetes", action="store_true",
                    help="also start the local seed: a Kubernetes control plane with one kwok node per region node "
                         "(binaries built from pinned Go modules on first use), its context merged into the kubeconfig")
    up.add_argument("--cloud", action="store_true",
                    help="also start the region's local cloud: an AWS API (moto) holding a VPC with a subnet per zone "
                         "and an instance per node, whose network ACLs and instance states are applied to the region")
    st = sub.add_parser("status", help="zones, nodes and members with health, leader, raft term, revision")
    st.add_argument("--json", action="store_true", help="print JSON")
    sub.add_parser("down", help="remove the environment and anything a crashed run left (processes, namespaces, contexts)")
    heal = sub.add_parser("heal", help="undo every fault still applied (from the heal ledger, then a sweep, AWS "
                                       "fault effects the harness tagged included)")
    heal.add_argument("--dry-run", action="store_true", help="list what heal would undo; change nothing")
    fault = sub.add_parser("fault", help="inject one fault and leave it applied until `harness heal` or its maximum duration")
    fault.add_argument("kind", help=", ".join(FAULTS))
    fault.add_argument("target", nargs="?", default=None,
                       help="a zone, node, host or member name, NAMESPACE/POD, an instance id, (zone-link-*) zone pairs: "
                            "ZONE>ZONE, ZONE<>ZONE, ZONE>*, *>ZONE, ZONE<>*, or (aws-revoke-credentials) "
                            "a user or role (default: the machine controller)")
    fault.add_argument("--zone", default=None, help="the target zone (the same as giving it as TARGET)")
    fault.add_argument("--scope", choices=["all", "availability-zone"], default=None,
                       help="aws-zone-outage: deny everything (all, default) or only traffic with the other zones' subnets")
    fault.add_argument("--subnet-tag", action="append", default=None, metavar="KEY=VALUE",
                       help="aws-zone-outage: only the zone's subnets with this tag (repeatable)")
    fault.add_argument("--method", choices=["deny-policy", "deactivate-keys"], default=None,
                       help="aws-revoke-credentials: an explicit deny-all inline policy (default) or the access keys deactivated")
    fault.add_argument("--loss-percent", type=float, default=None, help="zone-link-loss: share of the packets dropped")
    fault.add_argument("--larger-than", type=int, default=None, help="zone-link-mtu: drop IP packets above this many bytes")
    fault.add_argument("--rate-kbytes", type=int, default=None, help="zone-link-rate: drop what exceeds this many KiB/s")
    fault.add_argument("--delay-ms", type=float, default=None, help="zone-link-delay: milliseconds each packet is held")
    fault.add_argument("--jitter-ms", type=float, default=None, help="zone-link-delay: ± this many ms at random (default 0)")
    fault.add_argument("--port", choices=["all", "peer", "client"], default=None,
                       help="zone-link-*: only etcd's peer (2380) or client (2379) traffic (default: all)")
    fault.add_argument("--down-s", type=float, default=None, help="zone-link-flap, node-flap: seconds down each time (default 2)")
    fault.add_argument("--up-min-s", type=float, default=None, help="zone-link-flap, node-flap: least seconds up between (default 2)")
    fault.add_argument("--up-max-s", type=float, default=None, help="zone-link-flap, node-flap: most seconds up (default: the least)")
    fault.add_argument("--seed", type=int, default=None, help="zone-link-flap, node-flap: the up times' random seed (replays)")
    fault.add_argument("--leave-kib", type=int, default=None, help="member-disk-full: KiB left free (default 0)")
    fault.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    fault.add_argument("--max-duration", type=float, default=None,
                       help="seconds after which the fault heals itself, even if the harness is gone (default: "
                            "timeouts.fault_max_duration, 900)")
    run = sub.add_parser("run", help="the chaos job: features/gep20.feature's zone outage on the reference control "
                                     "plane running for real, each zone in turn, through pytest in a region of its own; "
                                     "prints the tables and figures its steps recorded, writes the report")
    run.add_argument("--form", choices=FORMS, default="gep20", help="scheduling form of the reference (default gep20)")
    run.add_argument("--zone", action="append", default=None, help="take only this zone down (repeatable; default: every zone)")
    run.add_argument("--druid", action="store_true",
                     help="with --form gardener: the etcds are gardenlet's Etcd resources, made by etcd-druid (real)")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments (after --)")
    for name, help_ in (("render", "print the reference HA control plane as YAML"),
                        ("deploy", "apply the reference HA control plane, wait for the scheduler, print where its pods went")):
        cmd = sub.add_parser(name, help=help_)
        cmd.add_argument("--tolerance", required=True, choices=TOLERANCES, help="failure tolerance type of the shoot")
        cmd.add_argument("--form", choices=FORMS, default="gep20",
                         help="gep20: GEP-20's affinity rules (default); conventions: the HA conventions' spread constraints; "
                              "gardener: none of its own, Gardener's gardener-resource-manager (started on the local "
                              "seed) writes them")
        cmd.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"shoot namespace in the seed (default: {DEFAULT_NAMESPACE})")
        cmd.add_argument("--storage-class", default=None, help="StorageClass of etcd's volumes (default: the seed's)")
        cmd.add_argument("--etcd-members", type=int, default=None, metavar="N",
                         help="members of each etcd: 1 without high availability, else 3 (default), 5 or 7; "
                              "their budgets let (N-1)/2 go at once")
    sub.choices["render"].add_argument("--zones", default=None, help="the seed's zones, comma-separated (default: the region's)")
    sub.choices["deploy"].add_argument("--real", action="store_true",
                                       help="local seed: etcd and kube-apiserver pods run as real processes under the node agents")
    sub.choices["deploy"].add_argument("--backup-delta-period", metavar="S", type=float, default=None,
                                       help="with --real: back etcd-main up to the region's bucket, a sidecar beside each "
                                            "member taking a delta snapshot every S seconds (seed 003)")
    sub.choices["deploy"].add_argument("--backup-full-period", metavar="S", type=float, default=3600.0,
                                       help="with --backup-delta-period: seconds between full snapshots (default 3600)")
    sub.choices["deploy"].add_argument("--druid", action="store_true",
                                       help="with --form gardener --real: the etcds are gardenlet's Etcd resources and "
                                            "etcd-druid (started on the local seed) makes them")
    from harness.load.profiles import PROFILES

    load = sub.add_parser("load", help="run a load profile with locust from a client zone and print its statistics")
    load.add_argument("--profile", required=True, choices=[n for n in PROFILES if n != "idle"],
                      help="; ".join(f"{n}: {p.description}" for n, p in PROFILES.items() if p))
    load.add_argument("--seconds", type=float, default=30.0, help="how long (default 30)")
    load.add_argument("--processes", type=int, default=1,
                      help="locust --processes: more than one core (default 1); with workers, on each worker")
    load.add_argument("--workers", metavar="ZONE[,ZONE...]", default=None,
                      help="distributed: locust's master in the profile's client zone, a worker in each of these "
                           "zones' client namespaces; the workers ship their histories back to the master")
    load.add_argument("--expect-workers", metavar="N", type=int, default=0,
                      help="distributed: also wait for N locust workers started elsewhere, with the command printed")
    load.add_argument("--json", action="store_true", help='print {"profile", "seconds", "requests", "failures", "ops_per_s", "p99_ms"}')
    load.add_argument("--out", type=Path, default=None,
                      help="keep locust's statistics and the recorded history in a new directory under OUT "
                           "(default: the region's work directory, which `harness down` removes)")
    measure = sub.add_parser("measure", help="measure something of the region under a load profile")
    measure.add_argument("what", choices=["traffic"], help="traffic: bytes per zone pair, at the router and from etcd's peer metrics")
    measure.add_argument("--profile", default="idle", choices=list(PROFILES), help="load while measuring (default idle)")
    measure.add_argument("--seconds", type=float, default=10.0, help="measuring window (default 10)")
    measure.add_argument("--json", action="store_true", help="print the figures as JSON")
    undeploy = sub.add_parser("undeploy", help="delete a reference control plane and its volumes")
    undeploy.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"(default: {DEFAULT_NAMESPACE})")
    report = sub.add_parser("report", help="print where the newest (or the given) run's report is; --open opens it; "
                                           "--screenshot renders it to screenshot.png")
    report.add_argument("run", nargs="?", default=None, help="run id (or a unique prefix, or a run directory); default: newest")
    report.add_argument("--open", action="store_true", help="open index.html with xdg-open")
    report.add_argument("--screenshot", action="store_true",
                        help="render index.html in headless chromium, save screenshot.png in the run directory, print its path")
    nightly = sub.add_parser("nightly", help="run the whole suite on the configured provider with the report on; print "
                                             "where the report is and every test that did not run (with its skip reason); "
                                             "exit non-zero when any scenario fails, or none ran (5 when pytest saw no failure)")
    nightly.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments (after --)")
    explore = sub.add_parser("explore", help="the @explore features: a seeded random schedule of faults under load, judged "
                                             "by every validator, with the report; says the seed and how to replay it")
    explore.add_argument("--seed", type=int, default=None, help="the schedule's seed (default: a new one)")
    length = explore.add_mutually_exclusive_group()
    length.add_argument("--seconds", type=float, default=None, help="how long the schedule runs (default: the feature's)")
    length.add_argument("--minutes", type=float, default=None, help="the same in minutes")
    explore.add_argument("pytest_args", nargs=argparse.REMAINDER, help="more pytest arguments (after --)")
    steps = sub.add_parser("steps", help="the Gherkin steps a feature may use, read from their definitions: each one's "
                                         "text, what it says it does, what it needs and hands on, the must-fail "
                                         "scenarios that show a Then-step failing")
    steps.add_argument("--grep", default=None, metavar="WORD", help="only steps whose text or description has WORD")
    steps.add_argument("--markdown", action="store_true", help="as a Markdown page")
    conventions_cli.add_parser(sub)
    task_commands.add_parser(sub)
    return p


def _steps(args: argparse.Namespace) -> int:
    from harness.steps import catalogue

    found = catalogue.steps()
    given = catalogue.providers(found)
    chosen = [s for s in found if s.matches(args.grep)] if args.grep else found
    if args.grep and not chosen:
        raise ConfigError(f"no step has {args.grep!r} in its text or description; `harness steps` lists all "
                          f"{len(found)}")
    print(catalogue.markdown(chosen, given) if args.markdown else catalogue.text(chosen, given))
    if not args.markdown:
        print(f"\n{catalogue.summary(found)}" + (f"; {len(chosen)} shown" if args.grep else ""))
    return 0


def _config(args: argparse.Namespace) -> Config:
    given = {name: getattr(args, name) for name in ("name", "provider", "kubeconfig", "context")}
    if args.command == "up":
        given |= {name: getattr(args, name) for name in (
            "members", "layout", "zones", "nodes_per_zone", "hosts_per_zone", "etcd_bin", "etcd_version", "data_on_disk",
            "member_disk_mib", "power_loss_fs", "backups", "full_period", "delta_period")}
    if args.command in ("render", "deploy"):
        given["storage_class"] = args.storage_class
    return load_config(args.config, option_overrides(given))


def _print_status(desc: dict[str, Any]) -> None:
    if desc.get("provider") in ("cluster", "kind"):
        print(f"{desc['provider']} cluster, kubeconfig {desc['kubeconfig']} (context {desc['context'] or 'current'})")
        for z in desc["zones"]:
            print(f"  {z['name']:<12} nodes: {', '.join(z['nodes'])}")
        not_ready = [n["name"] for n in desc["nodes"] if n["ready"] != "Ready"]
        print(f"  not ready: {', '.join(not_ready) or 'none'}; references: {', '.join(desc['references']) or 'none'}; "
              f"active faults: {', '.join(desc['active_faults']) or 'none'}")
        return
    print(f"region {desc['region']} ({desc['layout']}), etcd {desc['etcd']['version']} at {desc['etcd']['path']}")
    for z in desc["zones"]:
        nodes = ", ".join(n["name"] + (f" on {n['host']}" if n["host"] else "") for n in desc["nodes"] if n["zone"] == z["name"])
        down = f"  FAULTS: {', '.join(z['faults'])}" if z["faults"] else ""
        print(f"  {z['name']:<10} {z['subnet']:<15} nodes: {nodes}{down}")
    print(f"  {'member':<8} {'zone':<10} {'node':<12} {'health':<12} {'leader':<7} {'term':>5} {'revision':>9}")
    for m in desc["members"]:
        print(f"  {m['name']:<8} {m['zone']:<10} {m['node']:<12} {m['health']:<12} {str(m.get('leader', '-')):<7} "
              f"{m.get('raft_term', '-'):>5} {m.get('revision', '-'):>9}")
    print(f"  leader: {desc['leader'] or 'none'}; active faults: {', '.join(desc['active_faults']) or 'none'}")
    if desc.get("kubernetes"):
        kube = desc["kubernetes"]
        print(f"  kubernetes: {kube['apiserver']}, kubeconfig {kube['kubeconfig']}"
              + (f", context {kube['context']} in {kube['merged_into']}" if kube.get("merged_into") else ""))
    if desc.get("references"):
        print(f"  reference control planes: {', '.join(desc['references'])}")
    print("  (health is each member's own answer, asked from inside its zone)")


def _record_reference(env: Environment, namespace: str, add: bool) -> None:
    def change(st: dict[str, Any]) -> None:
        refs = [r for r in st.get("references", []) if r != namespace]
        st["references"] = refs + ([namespace] if add else [])

    env.update(change)  # type: ignore[attr-defined]


def _up(provider: Provider, config: Config, args: argparse.Namespace) -> int:
    env = provider.up()
    if not isinstance(env, LocalEnvironment):
        print(f"{provider.name} cluster is up: {len(env.zones)} zones ({', '.join(env.zones)}), {len(env.nodes)} nodes")
        return 0
    print(f"region {config.region.name} is up: {len(env.zones)} zones, {len(env.nodes)} nodes, "
          f"{len(env.members)} etcd members (etcd {env.state['etcd']['version']}); state in {env.path}")
    if args.kubernetes:
        from harness.providers.local.seed.kubernetes import start_for

        assert config.provider.kubeconfig is not None
        try:
            kube = start_for(env, merge_into=Path(config.provider.kubeconfig))
        except BaseException:
            provider.down()  # all or nothing: no region without the control plane asked for
            raise
        print(f"kubernetes API server {kube['apiserver']}, {len(env.nodes)} nodes Ready\n"
              f"context {kube['context']} merged into {kube['merged_into']} and made current (kubectl works as is)")
    if args.cloud:
        assert isinstance(provider, CloudStarter)  # a local region's (the branch above returned otherwise)
        try:
            access = provider.cloud(env)
        except BaseException:
            provider.down()
            raise
        print(f"local cloud: AWS API at {access.endpoint_url} ({access.region}), {access.vpc_id} with subnets in "
              f"{', '.join(f'{z}={az}' for z, az in access.zones.items())}; faults aws-* act on it")
    return 0


def _deploy(provider: Provider, env: Environment, config: Config, args: argparse.Namespace) -> int:
    from harness.kube.placement import table
    from harness.reference.deploy import deploy
    from harness.reference.render import DECIDED_BY_WEBHOOK, ReferenceSpec

    seed = provider.seed(env)
    spec = ReferenceSpec(args.tolerance, env.zones, args.form, args.namespace, seed.storage_class, real=args.real,
                         delta_snapshot_period_s=args.backup_delta_period, full_snapshot_period_s=args.backup_full_period,
                         etcd_members=args.etcd_members, druid=args.druid)
    store = None
    if spec.delta_snapshot_period_s is not None:
        if not isinstance(env, SeedBackupStore):
            raise CapabilityMissing(f"the {env.provider} environment has no object store for the seed's backups")
        store = env.seed_backup_store()
    if spec.form in DECIDED_BY_WEBHOOK and isinstance(env, SeedResourceManager) and env.start_resource_manager():
        print(f"gardener-resource-manager started on the seed; it decides the {spec.form} form's workloads until "
              "`harness down`")
    if spec.druid:
        if not isinstance(env, SeedEtcdDruid):
            raise CapabilityMissing(f"the {env.provider} environment cannot run etcd-druid on its seed")
        if env.start_etcd_druid():
            print("etcd-druid started on the seed; it runs the etcds of gardenlet's Etcd resources until `harness down`")
    _record_reference(env, spec.namespace, add=True)
    pods = deploy(seed, spec, config.timeouts.deploy, store)
    print(f"reference control plane ({args.tolerance} tolerance, {args.form} form) in {spec.namespace}, "
          f"zones {', '.join(spec.zones)}:\n{table(pods)}")
    return 0


def _render(config: Config, args: argparse.Namespace) -> int:
    from harness.reference.render import ReferenceSpec, render, to_yaml

    zones = zone_list(args.zones) if args.zones is not None else list(config.region.zones)
    storage = config.provider.storage_class or "harness-zonal"
    print(to_yaml(render(ReferenceSpec(args.tolerance, tuple(zones), args.form, args.namespace, storage,
                                       etcd_members=args.etcd_members))), end="")
    return 0


def _fault(env: Environment, args: argparse.Namespace) -> int:
    from harness.faults.runner import FaultRunner
    from harness.timeline import Timeline

    if args.zone and args.target and args.zone != args.target:
        raise ConfigError(f"two targets given: {args.target!r} and --zone {args.zone!r}; give one")
    target = args.zone or args.target or ("machine-controller" if args.kind == "aws-revoke-credentials" else None)
    if target is None:
        raise ConfigError(f"fault {args.kind} needs a target (a zone, node, host, member, NAMESPACE/POD or instance)")
    options: dict[str, Any] = {k: v for k, v in (("scope", args.scope), ("method", args.method),
                                                  ("loss_percent", args.loss_percent), ("larger_than", args.larger_than),
                                                  ("rate_kbytes", args.rate_kbytes), ("port", args.port),
                                                  ("delay_ms", args.delay_ms), ("jitter_ms", args.jitter_ms),
                                                  ("down_s", args.down_s), ("up_min_s", args.up_min_s),
                                                  ("up_max_s", args.up_max_s), ("seed", args.seed),
                                                  ("leave_kib", args.leave_kib)) if v is not None}
    if args.subnet_tag:
        bad = [t for t in args.subnet_tag if "=" not in t or not t.partition("=")[0]]
        if bad:
            raise ConfigError(f"--subnet-tag takes KEY=VALUE, got {', '.join(map(repr, bad))}")
        options["subnet_tags"] = dict(t.partition("=")[::2] for t in args.subnet_tag)
    runner = FaultRunner(env, Timeline())
    if args.dry_run:
        print(runner.plan(args.kind, target, options))
        return 0
    active = runner.inject(args.kind, target, options, args.max_duration)
    deadline = active.data.get("watchdog", {}).get("deadline")
    until = f"; it heals itself at {time.strftime('%H:%M:%S', time.localtime(deadline))}" if deadline else ""
    print(f"applied {active.id}; undo with `harness heal`{until}")
    return 0


def _report(config: Config, args: argparse.Namespace) -> int:
    import shutil
    import subprocess

    from harness.report.runs import find_run

    index = find_run(config.reports_dir, args.run) / "index.html"
    if not index.exists():
        raise ConfigError(f"{index.parent} has no index.html (the run's report was not finished)")
    print(index)
    if args.screenshot:
        from harness.report.browser import screenshot

        print(screenshot(index))
    if args.open:
        opener = shutil.which("xdg-open")
        if opener is None:
            print("harness: xdg-open is not installed; open the path above in a browser", file=sys.stderr)
            return 1
        subprocess.Popen([opener, str(index)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return 0


def _nightly(config: Config, args: argparse.Namespace) -> int:
    import json

    from harness.report.nightly import verdict
    from harness.report.runs import new_run_id

    # The run id is ours, so the summary read back is this run's, never an older `latest`.
    run_id = new_run_id()
    extra = [a for a in args.pytest_args if a != "--"]
    cmd = [sys.executable, "-m", "pytest", "--harness-report", "--harness-run-id", run_id,
           "--provider", config.provider.name, *(["--harness-config", str(args.config)] if args.config else []), *extra]
    print(f"harness nightly: {' '.join(cmd)}", flush=True)
    code = run_to_end(cmd, "pytest")
    run_dir = config.reports_dir / run_id
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError) as e:
        print(f"harness nightly: no report of this run in {run_dir} ({e}); cannot tell which scenarios ran "
              f"(pytest exit status {code})", file=sys.stderr)
        return code or 1
    print(f"harness nightly: report {run_dir / 'index.html'} (pytest exit status {code})")
    result = verdict(summary, code)
    for line in result.lines:
        print(f"harness nightly: {line}")
    if result.problem:
        print(f"harness nightly: {result.problem}", file=sys.stderr)
    from harness.validate.contradictions import check_paths

    judged, contrary = check_paths(sorted((run_dir / "runs").glob("*.json")))
    print(f"harness nightly: contrary leadership claims judged on {judged} run(s) with a fault window: "
          f"{len(contrary)} both held")
    for line in contrary:  # a validator passing a claim and its contrary: the harness is wrong
        print(f"harness nightly: harness defect: {line}", file=sys.stderr)
    return result.status or (1 if contrary else 0)


def _chaos_job(config: Config, args: argparse.Namespace) -> int:
    """features/gep20.feature's zone outage scenario for each zone, through pytest (harness.chaos_job
    picks the examples and prints what they recorded)."""
    from harness.report.runs import new_run_id

    if args.druid and args.form != "gardener":
        raise ConfigError(f"--druid runs the gardener form's outage with etcd-druid's etcds: give --form gardener, "
                          f"not --form {args.form}")
    if config.provider.name != "local":
        raise HarnessError(f"the chaos job runs the reference for real on the local seed: the local provider only, "
                           f"not {config.provider.name}")
    features = Path(__file__).resolve().parents[1] / "features"
    if not (features / "gep20.feature").is_file():
        raise HarnessError(f"`harness run` runs the repository's features/gep20.feature, not found in {features}: run it "
                           "from a clone of the harness (pip install -e)")
    region = LocalRegion(config)
    if region.path.exists():
        raise HarnessError(f"region {config.region.name!r} is up; the chaos job brings up a region of its own under "
                           f"that name: take it down first (harness down) or give the job another (harness --name NAME run)")
    run_id = new_run_id()
    cmd = [sys.executable, "-m", "pytest", str(features / "test_features.py"), "-p", "harness.chaos_job",
           "--chaos-form", "druid" if args.druid else args.form, *[a for z in args.zone or () for a in ("--chaos-zone", z)],
           "--region-name", config.region.name, "--provider", "local", "--harness-report", "--harness-run-id", run_id,
           *(["--harness-config", str(args.config)] if args.config else []), "-q", "--no-header",
           *[a for a in args.pytest_args if a != "--"]]
    print(f"harness run: {' '.join(cmd)}", flush=True)
    try:
        code = run_to_end(cmd, "pytest")
    finally:
        if region.path.exists():  # pytest did not tear its region down (killed, or interrupted twice)
            print(f"harness run: region {config.region.name!r} is still up: healing it and taking it down",
                  file=sys.stderr, flush=True)
            for removed in take_down(region):
                print(f"harness run: removed {removed}", file=sys.stderr, flush=True)
    print(f"harness run: report {config.reports_dir / run_id / 'index.html'} (pytest exit status {code})")
    return code


def _explore(config: Config, args: argparse.Namespace) -> int:
    import random

    from harness.explore import replay_command

    seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    seconds = args.minutes * 60 if args.minutes is not None else args.seconds
    if seconds is not None and seconds <= 0:
        raise ConfigError(f"an exploration runs for a positive time, got {seconds:g} s")
    args.pytest_args = ["-m", "explore", "--explore-seed", str(seed),
                        *(["--explore-seconds", f"{seconds:g}"] if seconds else []), *args.pytest_args]
    print(f"harness explore: seed {seed}", flush=True)
    code = _nightly(config, args)
    if code:
        print(f"harness explore: the schedule of seed {seed} failed; replay it with: {replay_command(seed, seconds)}",
              file=sys.stderr)
    return code


def _dispatch(args: argparse.Namespace, config: Config) -> int:
    if args.command == "report":
        return _report(config, args)
    if args.command == "nightly":
        return _nightly(config, args)
    if args.command == "run":
        return _chaos_job(config, args)
    if args.command == "explore":
        return _explore(config, args)
    if args.command == "conventions":
        return conventions_cli.run(args)
    if args.command == "render":
        return _render(config, args)
    if args.command == "steps":
        return _steps(args)
    provider = get_provider(config.provider.name, config)
    if args.command == "up":
        return _up(provider, config, args)
    if args.command == "down":
        removed = take_down(provider)
        print(f"removed {len(removed)} item(s)" + "".join(f"\n  {r}" for r in removed) if removed else "nothing to remove")
        return 0
    if args.command in ("load", "measure"):
        if not isinstance(provider, LocalRegion):
            raise HarnessError(f"`harness {args.command}` drives the local region's etcd; not the {provider.name} provider")
        from harness.load_commands import run_load, measure_traffic

        command = run_load if args.command == "load" else measure_traffic
        if provider.path.exists():
            return command(provider.attach(), args)
        try:
            return command(provider.up(), args)
        finally:
            provider.down()
    env = provider.attach()
    if args.command == "status":
        desc = env.describe()
        print(json.dumps(desc, indent=1)) if args.json else _print_status(desc)
        return 0
    if args.command == "heal":
        from harness.faults.runner import heal_everything

        if args.dry_run:
            print("\n".join(heal_everything(env, dry_run=True)))
            print("Dry run: nothing was changed.")
            return 0
        done = heal_everything(env)
        print("\n".join(done) if done else "no fault was applied")
        env.wait_healthy(config.timeouts.recovery)
        print("environment healthy")
        return 0
    if args.command == "fault":
        return _fault(env, args)
    if args.command == "task":
        return task_commands.run(env, args, provider.seed(env) if args.shoot else None)
    if args.command == "deploy":
        return _deploy(provider, env, config, args)
    if args.command == "undeploy":
        from harness.reference.deploy import undeploy

        removed = undeploy(provider.seed(env), args.namespace, config.timeouts.deploy)
        _record_reference(env, args.namespace, add=False)
        print("\n".join(f"removed {r}" for r in removed) or f"no namespace {args.namespace}")
        return 0
    raise AssertionError(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = _config(args)
        if rootless.needs_reexec() and config.provider.name == "local" and args.command not in OFFLINE:
            state = read_state(state_path(config.state_dir, config.region.name)) or {}
            if args.command in ("up", "run") and config.etcd.binary is None:
                etcd_builds.build_before_namespace(config.etcd.version, config.etcd.failpoints)
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
    except BrokenPipeError:  # `harness steps | head`: the reader had what it wanted
        sys.stdout = open(os.devnull, "w")  # nor a second error when Python flushes it at exit
        return 0


if __name__ == "__main__":
    sys.exit(main())
