"""DEP-05's task executor for the local region or a shoot's etcd on the seed: where its tasks are
created and who runs them (harness.operator_tasks.executor, started on first use)."""

from __future__ import annotations

import socket
import sys
import urllib.request
from typing import TYPE_CHECKING, Any

from harness.errors import ConfigError, EnvironmentStateError
from harness.processes import log_tail, pid_alive
from harness.providers.base import TaskEndpoint
from harness.providers.local.cloud.backup_store import CLUSTER_PREFIX, store_spec
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord


TASK_NAMESPACE = "default"
EXECUTOR = "etcd-task-executor"


def task_endpoint(env: RegionRecord, shoot: tuple[str, str] | None = None) -> TaskEndpoint:
    """The EtcdOperatorTask CRD installed on the region's seed and an executor running (a seed
    component: it stops with the seed): for the region's etcd, or for `shoot` (namespace, etcd
    name), one of a shoot's etcds on the seed. A shoot deployed anew (another namespace uid: new
    certificates, new members) gets a new executor."""
    from harness.operator_tasks.tasks import install_crd
    from harness.processes import ProcessRecord, terminate
    from harness.locks import held
    from harness.providers.local.seed.kubernetes import start_seed_component

    kube = env.kube()
    if kube is None:
        raise ConfigError(f"region {env.spec.name!r} has no seed to hold operator tasks: bring it up with "
                          "`harness up --kubernetes --backups`")
    if shoot is None:
        store_spec(env)  # refuses a region without backups, saying how to get them
    namespace, etcd_name = shoot or (TASK_NAMESPACE, CLUSTER_PREFIX)
    key = f"{namespace}/{etcd_name}"
    instance = _namespace_uid(kube, namespace) if shoot else ""
    with held(env.config.state_dir, f"the task executor of {key} in region {env.spec.name}"):
        record = (env.refresh().get("task_executors") or {}).get(key)
        if record and pid_alive(record["pid"]):
            if record.get("instance") == instance:
                return TaskEndpoint(kube, namespace, etcd_name, f"http://{record['metrics']}/metrics")
            terminate(ProcessRecord.from_dict(record["process"]), 5.0)
        install_crd(kube, env.config.timeouts.kube_request * 3)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            metrics = f"127.0.0.1:{s.getsockname()[1]}"
        process = start_seed_component(env, f"{EXECUTOR}-{namespace}-{etcd_name}" if shoot else EXECUTOR, [
            sys.executable, "-m", "harness.operator_tasks.executor", f"--state-dir={env.config.state_dir}",
            f"--region={env.spec.name}", f"--kubeconfig={kube.kubeconfig}", f"--namespace={namespace}",
            f"--etcd-name={etcd_name}", f"--metrics={metrics}", *(["--shoot"] if shoot else [])])
        pid = process.pid
        env.update(lambda st: st.setdefault("task_executors", {}).update({key: {
            "pid": pid, "metrics": metrics, "instance": instance, "process": process.to_dict()}}))
    url = f"http://{metrics}/metrics"

    def answers() -> str | None:
        if not pid_alive(pid):
            raise EnvironmentStateError(f"the task executor exited; its log ({process.log}):\n{log_tail(process.log)}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return "up"
        except OSError:
            return None

    wait_for(answers, lambda a: a is not None, "the task executor's metrics", env.config.timeouts.region_up)
    return TaskEndpoint(kube, namespace, etcd_name, url)


def _namespace_uid(kube: Any, namespace: str) -> str:
    from kubernetes import client as k8s

    from harness.kube import cluster

    with cluster.api_errors(f"reading namespace {namespace}"):
        return str(k8s.CoreV1Api(cluster.connect(kube)).read_namespace(namespace).metadata.uid)
