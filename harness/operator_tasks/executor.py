"""The task executor: what etcd-druid's EtcdOperatorTask controller does for one etcd, small.

Every 0.2 s it lists the tasks of its namespace. A task without a state is admitted
(harness.operator_tasks.tasks.admit: a duplicate or a failed pre-condition is rejected with the reason
in lastErrors) or queued as pending. When none is in progress, the oldest pending task (FIFO) is
checked again and run: QuorumLossRecoveryTask restores every member from the backups and waits
for a healthy cluster, OnDemandSnapshotTask has the leading backup sidecar take a full or delta
snapshot, OnDemandSnapCompactionTask compacts the store's chain into a new full snapshot. A task
ends completed or failed; finished tasks are deleted ttlSecondsAfterFinished later. A task left
in progress by an executor that died is failed when the next one starts: nobody knows how far it got.

It acts on the etcd through the environment's protocols (EtcdCluster, EtcdBackups) and serves
DEP-05's metrics on `--metrics`: etcd_operator_task_duration_seconds (histogram) and
etcd_operator_tasks_total (counter), labelled type and state (success, failed, rejected).

    python -m harness.operator_tasks.executor --state-dir D --region R --kubeconfig K --namespace NS \\
        --etcd-name etcd --metrics 127.0.0.1:PORT [--shoot]

With `--shoot` the etcd is NS's etcd-main (or whichever `--etcd-name`) on the environment's seed.
"""

from __future__ import annotations

import argparse
import calendar
import sys
import time
import traceback
from collections import Counter as Tally
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.operator_tasks import tasks as t
from harness.backup.store import FULL
from harness.errors import HarnessError
from harness.providers.base import EtcdBackups, EtcdCluster, shoot_etcd
from harness.topology import KubeAccess
from harness.wait import first_within

QUORUM_LOOK_S = 2.0  # an election in progress is not a quorum loss: look this long for a leader
# Facts this fresh are the check "when its turn comes" of a task admitted a moment ago: without
# quorum each look takes QUORUM_LOOK_S, and a recovery would wait twice for a leader that is gone.
# Admission itself always reads the cluster anew.
FACTS_FRESH_S = 1.0


class Executor:
    def __init__(self, env: Any, kube: KubeAccess, namespace: str, etcd_name: str, registry: Any = None,
                 progress: Callable[[str], None] = print) -> None:
        if not isinstance(env, EtcdCluster) or not isinstance(env, EtcdBackups):
            raise HarnessError(f"the {env.provider} environment has no backed-up etcd to run tasks on")
        from prometheus_client import REGISTRY, Counter, Histogram

        self.env = env
        self.kube = kube
        self.namespace = namespace
        self.etcd_name = etcd_name
        self.say = progress
        self.admitted: dict[str, int] = {}  # pending tasks in the order they were queued
        self._facts: tuple[float, t.ClusterFacts] | None = None  # (monotonic time taken, facts)
        registry = registry or REGISTRY
        self.duration = Histogram("etcd_operator_task_duration_seconds", "Runtime of each etcd operator task",
                                  ["type", "state"], registry=registry,
                                  buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600))
        self.total = Counter("etcd_operator_tasks", "Etcd operator tasks by type and final state", ["type", "state"],
                             registry=registry)

    # -- what the pre-conditions are judged on ----------------------------------------------
    def facts(self, fresh_s: float = 0.0) -> t.ClusterFacts:
        """What the pre-conditions are judged on; those taken less than `fresh_s` ago are reused."""
        if self._facts is not None and time.monotonic() - self._facts[0] < fresh_s:
            return self._facts[1]

        def quorum() -> bool | None:
            statuses = self.env.status()
            seen = Tally(s.leader for s in statuses.values() if not isinstance(s, str) and s.leader)
            leader, followers = seen.most_common(1)[0] if seen else (0, 0)
            return True if leader and followers > len(self.env.members) // 2 else None

        has_quorum = bool(first_within(quorum, "a leader a majority follows", QUORUM_LOOK_S, interval=0.1))
        try:
            backups = any(n.kind == FULL for n in self.env.backup_store().list())
        except Exception:  # no backups configured, or the store unreachable: nothing to restore from
            backups = False
        facts = t.ClusterFacts(len(self.env.members), has_quorum, backups)
        self._facts = (time.monotonic(), facts)
        return facts

    # -- one pass ------------------------------------------------------------------------------
    def fail_orphans(self) -> None:
        for task in self._mine():
            if t.state(task) == t.IN_PROGRESS:
                self._finish(task, t.FAILED, "the executor restarted while the task ran; how far it got is unknown",
                             "ERR_EXECUTOR_RESTARTED", time.time())

    def step(self) -> None:
        mine = self._mine()
        # Creation times are whole seconds: tasks made in one second are taken in the order the
        # API server stored them (their resourceVersion, unchanged until admitted).
        fresh = sorted((task for task in mine if t.state(task) is None),
                       key=lambda task: int(task["metadata"].get("resourceVersion") or 0))
        # One reading of the cluster for the tasks seen together, taken now: one kept from an earlier
        # pass could predate a fault these tasks were created after (two members lost at once).
        facts = self.facts() if fresh else None
        for task in fresh:
            self._admit(task, mine, facts)  # type: ignore[arg-type]
        self._collect(mine)
        if any(t.state(task) == t.IN_PROGRESS for task in mine):
            return
        # A task admitted in this pass runs from the next one: tasks created together are admitted
        # together, so the second of two alike is the first's duplicate, however fast the first runs.
        just = {task["metadata"]["name"] for task in fresh}
        pending = [task for task in self._mine() if t.state(task) == t.PENDING and task["metadata"]["name"] not in just]
        if pending:  # FIFO: in the order admitted (after a restart of the executor, by creation)
            self._run(min(pending, key=lambda task: (self.admitted.get(task["metadata"]["name"], sys.maxsize),
                                                      task["metadata"]["creationTimestamp"], task["metadata"]["name"])))

    def _mine(self) -> list[dict[str, Any]]:
        return [task for task in t.list_tasks(self.kube, self.namespace)
                if (task.get("spec") or {}).get("etcdName", self.etcd_name) == self.etcd_name]

    def _admit(self, task: dict[str, Any], mine: list[dict[str, Any]], facts: t.ClusterFacts) -> None:
        name, kind = task["metadata"]["name"], task["spec"]["taskType"]
        why = t.admit(task, mine, facts)
        if why is not None:
            code = "ERR_DUPLICATE_TASK" if why.startswith("duplicate") else "ERR_PRECONDITION_FAILED"
            self._finish(task, t.REJECTED, why, code, _created(task))
            return
        task["status"] = t.patch_status(self.kube, self.namespace, name, {
            "taskStatus": t.PENDING, "observedGeneration": task["metadata"].get("generation"),
            "lastOperation": _operation("Admit", t.PENDING, "queued: its pre-conditions hold")})["status"]
        self.admitted[name] = len(self.admitted)
        self.say(f"{name} ({kind}) queued")

    def _run(self, task: dict[str, Any]) -> None:
        name, kind = task["metadata"]["name"], task["spec"]["taskType"]
        why = t.admit(task, [], self.facts(FACTS_FRESH_S))  # the cluster may have changed while it waited
        if why is not None:
            self._finish(task, t.REJECTED, f"when its turn came: {why}", "ERR_PRECONDITION_FAILED", _created(task))
            return
        began = time.time()
        t.patch_status(self.kube, self.namespace, name, {
            "taskStatus": t.IN_PROGRESS, "initiatedAt": t.now(),
            "lastOperation": _operation(kind, t.IN_PROGRESS, "running")})
        self.say(f"{name} ({kind}) running")
        self._facts = None  # what the task does changes them
        try:
            reason = self._execute(task)
        except Exception as e:
            self._finish(task, t.FAILED, f"{type(e).__name__}: {e}", "ERR_TASK_FAILED", began)
            return
        self._finish(task, t.COMPLETED, reason, None, began)

    def _execute(self, task: Mapping[str, Any]) -> str:
        kind = task["spec"]["taskType"]
        if kind == t.QUORUM_LOSS_RECOVERY:
            done = self.env.restore_from_backups(lambda line: self.say(f"{task['metadata']['name']}: {line}"))
            statuses = self.env.wait_healthy(self.env.config.timeouts.recovery)
            return (f"restored revision {done['revision']} from {done['full']} and {done['deltas']} delta snapshot(s) "
                    f"({done['events']} events) in {done['total_s']:.2f} s; {len(statuses)} members healthy")
        if kind == t.ON_DEMAND_SNAPSHOT:
            snapshot_type = task["spec"]["taskConfig"]["snapshotType"]
            done = self.env.take_snapshot("full" if snapshot_type == "full-snapshot" else "delta")
            taken = done.get("snapshot")
            if taken is None:
                return f"no event since revision {done['revision']}: no delta snapshot to take"
            return f"{taken['name']} covers revisions {taken['start']}-{taken['end']}"
        if kind == t.ON_DEMAND_SNAP_COMPACTION:
            done = self.env.compact_backups()
            return (f"compacted {done['full']} and {done['deltas']} delta snapshot(s) into {done['snapshot']} "
                    f"(revision {done['revision']})")
        raise HarnessError(f"no executor for task type {kind!r}")

    def _finish(self, task: Mapping[str, Any], state: str, reason: str, code: str | None, began: float) -> None:
        name, kind = task["metadata"]["name"], task["spec"]["taskType"]
        status: dict[str, Any] = {"taskStatus": state, "lastOperation": _operation(kind, state, reason)}
        if code is not None:
            status["lastErrors"] = [{"code": code, "description": reason, "lastUpdateTime": t.now()}]
        t.patch_status(self.kube, self.namespace, name, status)
        label = t.METRIC_STATE[state]
        self.duration.labels(kind, label).observe(max(0.0, time.time() - began))
        self.total.labels(kind, label).inc()
        self.say(f"{name} ({kind}) {state}: {reason}")

    def _collect(self, mine: list[dict[str, Any]]) -> None:
        """Finished tasks past their ttlSecondsAfterFinished are deleted."""
        for task in mine:
            if t.state(task) not in t.FINISHED:
                continue
            ttl = int((task.get("spec") or {}).get("ttlSecondsAfterFinished", t.DEFAULT_TTL_S))
            ended = ((task.get("status") or {}).get("lastOperation") or {}).get("lastTransitionTime")
            if ended and time.time() - _epoch(ended) >= ttl:
                t.delete_task(self.kube, self.namespace, task["metadata"]["name"])
                self.say(f"{task['metadata']['name']} deleted {ttl} s after it finished")


def _operation(name: str, state: str, reason: str) -> dict[str, str]:
    return {"name": name, "state": state, "lastTransitionTime": t.now(), "reason": reason}


def _epoch(stamp: str) -> float:
    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))


def _created(task: Mapping[str, Any]) -> float:
    stamp = task["metadata"].get("creationTimestamp")
    return _epoch(stamp) if stamp else time.time()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.operator_tasks.executor", description=__doc__.split("\n\n")[0])
    p.add_argument("--state-dir", required=True, type=Path)
    p.add_argument("--region", required=True)
    p.add_argument("--provider", default="local", help="the provider whose environment the tasks act on")
    p.add_argument("--kubeconfig", required=True, type=Path)
    p.add_argument("--namespace", required=True)
    p.add_argument("--etcd-name", required=True)
    p.add_argument("--shoot", action="store_true",
                   help="the etcd is a shoot's on the environment's seed (NAMESPACE's ETCD_NAME), not the environment's own")
    p.add_argument("--metrics", required=True, help="address:port of /metrics")
    p.add_argument("--interval", type=float, default=0.2)
    args = p.parse_args(argv)
    from prometheus_client import start_http_server

    from harness.config import load_config
    from harness.providers import get_provider

    def say(line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)

    config = load_config(overrides={"region.name": args.region, "paths.state_dir": str(args.state_dir),
                                    "provider.name": args.provider})
    provider = get_provider(config.provider.name, config)
    env = provider.attach()
    if args.shoot:
        env = shoot_etcd(env, provider.seed(env), args.namespace, args.etcd_name)
    executor = Executor(env, KubeAccess(args.kubeconfig), args.namespace, args.etcd_name, progress=say)
    executor.fail_orphans()
    # Served only now: whoever started it takes /metrics answering for "ready", and a shoot's
    # members are read above, while they all still run (a fault may take them any moment after).
    host, port = args.metrics.rsplit(":", 1)
    start_http_server(int(port), host)
    say(f"running the {args.namespace} tasks for etcd {args.etcd_name}")
    while True:  # until SIGTERM: it stops with the seed
        try:
            if hasattr(executor.env, "refresh"):  # a state file changes under it (faults, restores by others)
                executor.env.refresh()
            executor.step()
        except Exception:
            traceback.print_exc()
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())
