"""`harness task create|status|delete`: DEP-05's operator tasks (seed 003) on an environment's seed."""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.operator_tasks import tasks as t
from harness.errors import CapabilityMissing, ConfigError, HarnessError
from harness.providers.base import Environment, OperatorTasks, TaskEndpoint, shoot_etcd
from harness.topology import Seed

SNAPSHOT_CHOICES = {"full": "full-snapshot", "delta": "delta-snapshot"}


def add_parser(sub: Any) -> None:
    task = sub.add_parser("task", help="DEP-05's operator tasks on the seed: create one, show them, delete one "
                                       "(the local seed runs an executor for the region's etcd, or a shoot's)")
    verbs = task.add_subparsers(dest="verb", required=True)
    create = verbs.add_parser("create", help="create a task and (unless --no-wait) wait until it is completed, "
                                             "rejected or failed; exit 1 unless it completed")
    create.add_argument("type", choices=t.TASK_TYPES)
    create.add_argument("--snapshot-type", choices=sorted(SNAPSHOT_CHOICES), default=None,
                        help=f"{t.ON_DEMAND_SNAPSHOT}: full or delta")
    create.add_argument("--task-name", default=None, help="the task's name (default: made from its type and the time)")
    create.add_argument("--ttl", type=int, default=None,
                        help=f"ttlSecondsAfterFinished: seconds a finished task is kept (default {t.DEFAULT_TTL_S})")
    create.add_argument("--no-wait", action="store_true", help="return once the task is created")
    create.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for it (default 600)")
    create.add_argument("--json", action="store_true", help="print the task's summary as JSON")
    status = verbs.add_parser("status", help="every task of the etcd (or one), oldest first")
    status.add_argument("task_name", metavar="name", nargs="?", default=None)
    status.add_argument("--json", action="store_true", help="print JSON")
    delete = verbs.add_parser("delete", help="delete a task (a finished one goes by itself after its TTL)")
    delete.add_argument("task_name", metavar="name")
    for verb in (create, status, delete):
        verb.add_argument("--shoot", metavar="NAMESPACE", default=None,
                          help="the tasks of etcd-main of the control plane in NAMESPACE on the seed (default: the "
                               "environment's own etcd)")


def endpoint(env: Environment, shoot: str | None = None, seed: Seed | None = None) -> TaskEndpoint:
    target: object = env
    if shoot is not None:
        assert seed is not None
        target = shoot_etcd(env, seed, shoot, "etcd-main")
    if not isinstance(target, OperatorTasks):
        what = f"etcd-main of {shoot}" if shoot else f"the {env.provider} environment's etcd"
        raise CapabilityMissing(f"nothing runs operator tasks for {what}")
    return target.task_endpoint()


def run(env: Environment, args: argparse.Namespace, seed: Seed | None = None) -> int:
    if args.verb == "create":
        config = None
        if args.type == t.ON_DEMAND_SNAPSHOT:
            if args.snapshot_type is None:
                raise ConfigError(f"{t.ON_DEMAND_SNAPSHOT} needs --snapshot-type full or delta")
            config = {"snapshotType": SNAPSHOT_CHOICES[args.snapshot_type]}
        elif args.snapshot_type is not None:
            raise ConfigError(f"--snapshot-type is for {t.ON_DEMAND_SNAPSHOT} only, not {args.type}")
        name = args.task_name or t.unique_name(args.type)
        ep = endpoint(env, args.shoot, seed)
        manifest = t.task_manifest(name, ep.namespace, args.type, ep.etcd_name, config, args.ttl)  # checked first
        t.create_task(ep.kube, manifest)
        if args.no_wait:
            _show(t.summary(t.get_task(ep.kube, ep.namespace, name)), args.json)
            return 0
        done = t.summary(t.wait_finished(ep.kube, ep.namespace, name, args.timeout))
        _show(done, args.json)
        return 0 if done["state"] == t.COMPLETED else 1
    ep = endpoint(env, args.shoot, seed)
    if args.verb == "status":
        found = [t.get_task(ep.kube, ep.namespace, args.task_name)] if args.task_name else t.list_tasks(ep.kube, ep.namespace)
        rows = [t.summary(task) for task in found if (task.get("spec") or {}).get("etcdName") == ep.etcd_name]
        if args.json:
            print(json.dumps(rows, indent=1))
        else:
            for row in rows or [None]:
                print("no tasks" if row is None else _line(row))
        return 0
    if args.verb == "delete":
        t.delete_task(ep.kube, ep.namespace, args.task_name)
        print(f"deleted task {args.task_name}")
        return 0
    raise HarnessError(f"unknown verb {args.verb}")


def _show(row: dict[str, Any], as_json: bool) -> None:
    print(json.dumps(row, indent=1) if as_json else _line(row))


def _line(row: dict[str, Any]) -> str:
    op = row.get("lastOperation") or {}
    return f"{row['name']}  {row['type']}  {row['state'] or 'new'}  {op.get('reason', '')}".rstrip()
