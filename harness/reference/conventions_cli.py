"""`harness conventions explain|check`: the HA conventions from the command line.

harness/cli.py calls `add_parser` to register the command and `run` when it is chosen; errors
are raised as ConfigError for the main CLI to print (`harness: error: ...`, exit 2).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, PrerequisiteError
from harness.reference import conventions as conv


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conventions", help="HA conventions (seed 001, Gardener's HA config webhook): explain, check",
                       description="Replicas, topology spread constraints and node affinity by the HA conventions.")
    commands = p.add_subparsers(dest="conventions_command", required=True, metavar="{explain,check}")
    tolerance_help = f"failure tolerance: {'|'.join(conv.TOLERANCES)}"

    e = commands.add_parser(
        "explain", help="the replicas and spread constraints for one component",
        description="The replicas and topology spread constraints Gardener's high-availability-config webhook "
                    "sets for one component. The rules come from seed 001 (Gardener's \"High Availability of "
                    "Deployed Components\") and, where it is silent, from gardener/gardener (read at b312835d): "
                    "pkg/utils/kubernetes/highavailability.go (GetReplicaCount, GetTopologySpreadConstraints) "
                    "and pkg/resourcemanager/webhook/highavailabilityconfig/handler.go; every case of "
                    "Gardener's highavailability_test.go tables is a row of tests/unit/test_conventions_gardener.py.")
    e.add_argument("--type", dest="component_type", required=True, metavar="|".join(conv.TYPES))
    e.add_argument("--tolerance", metavar="|".join(conv.TOLERANCES),
                   help=f"{tolerance_help}; leave out for a seed or system component")
    e.add_argument("--zones", type=int, required=True, metavar="N", help="number of zones the component may use")
    e.add_argument("--replicas", type=int, help="replica count (default: the conventional one)")
    e.add_argument("--max-replicas", type=int, help="an autoscaler's maximum (default: the replicas)")
    e.add_argument("--host-spread", action="store_true", help=f"the workload has {conv.ANNOTATION_HOST_SPREAD}=true")
    e.add_argument("--one-node", action="store_true",
                   help="the cluster has a single node: the hostname spread stays best effort (ScheduleAnyway)")
    e.add_argument("--json", action="store_true", help="print exactly the JSON object")

    c = commands.add_parser("check", help="judge the Deployments and StatefulSets of manifest files")
    c.add_argument("files", nargs="+", metavar="FILE", help="YAML files, several documents each")
    c.add_argument("--tolerance", required=True, metavar="|".join(conv.TOLERANCES), help=tolerance_help)
    c.add_argument("--zones", required=True, metavar="a,b,c", help="the zones of the namespace annotation")


def run(args: argparse.Namespace) -> int:
    """Print the result to stdout; the exit code: 0, or 1 when `check` found deviations."""
    if args.conventions_command == "explain":
        return _explain(args)
    return _check(args)


def _explain(args: argparse.Namespace) -> int:
    result = conv.explain(args.component_type, args.tolerance, args.zones, args.replicas,
                          args.max_replicas, args.host_spread, multiple_nodes=not args.one_node)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"replicas: {result['replicas']}")
    if not result["topologySpreadConstraints"]:
        print("topologySpreadConstraints: none (fewer than 2 replicas)")
    for c in result["topologySpreadConstraints"]:
        print(f"- {c['topologyKey']}: " + ", ".join(f"{k} {v}" for k, v in c.items() if k != "topologyKey"))
    print("(labelSelector: the pod template labels; for a StatefulSet its spec.selector)")
    return 0


def _check(args: argparse.Namespace) -> int:
    zones = [z.strip() for z in args.zones.split(",")]
    objects = [obj for path in args.files for obj in _load(Path(path))]
    deviations = conv.check(objects, args.tolerance, zones)
    for d in deviations:
        print(d)
    checked = len(conv.workloads(objects))
    print(f"checked {checked} workload(s) against tolerance {args.tolerance} in zones {','.join(zones)}: "
          f"{len(deviations)} deviation(s)")
    return 1 if deviations else 0


def _load(path: Path) -> list[Any]:
    try:
        import yaml
    except ImportError as e:  # PyYAML comes with the `kubernetes` package (the dev extra)
        raise PrerequisiteError("reading manifests needs PyYAML: pip install 'ha-harness[dev]'") from e
    try:
        return list(yaml.safe_load_all(path.read_text()))
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not valid YAML: {e}") from e
