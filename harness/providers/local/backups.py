"""Backups of the local region's etcd ([region] backups): a backup sidecar (harness.backup.sidecar)
beside each member, in the member's node namespace, writing to a bucket of the region's local cloud
(moto's S3, outside every zone and reached through the router, as a region's S3 endpoint is).

The sidecars write with a key pair of their own (an IAM user allowed the bucket and nothing else),
never the harness's. A member's sidecar starts with the member and dies with its volume
(`RegionRecord.lose_member_data`): a killed etcd process leaves its sidecar running, as a
crashed container leaves the other containers of its pod.

The same bucket holds the backups of the seed's etcds (`ensure_store`, Gardener's BackupBucket):
each shoot's etcd-main under a prefix of its own, written by the sidecars the node agents run in
its members' pods (harness.kube.agent).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness import netns
from harness.aws.errors import aws_call
from harness.backup.store import BackupStore, StoreSpec
from harness.errors import ConfigError, EnvironmentStateError
from harness.processes import log_tail, pid_alive, reap, signal_pid
from harness.providers.base import TaskEndpoint
from harness.providers.local.fault_tables import FAULT_TABLE_PREFIX, dropped_packets, remove_table
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord

SIDECAR_PORT = 8080  # etcd-backup-restore's server port
BACKUP_USER = "etcd-backup"
CLUSTER_PREFIX = "etcd"  # the region's one etcd cluster
STORE_PROBE_S = 0.1  # a connection to the store unanswered this long: the store is cut off


def bucket_name(region: str) -> str:
    return f"ha-harness-{region.lower()}-etcd-backups"


def ensure_store(env: RegionRecord) -> StoreSpec:
    """The region's backup bucket in its cloud and the key pair of its backup user (an IAM user
    allowed that bucket and nothing else), made on first use; the prefix is left to each cluster."""
    from harness.providers.local.cloud import ensure_cloud

    if env.state.get("backup_store"):
        return StoreSpec.from_dict(env.state["backup_store"])
    access = ensure_cloud(env)
    bucket = bucket_name(env.spec.name)
    s3 = access.client("s3")
    iam = access.client("iam")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": [
        f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}
    with aws_call(f"creating the backup bucket {bucket} and its user {BACKUP_USER}"):
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": access.region})
        iam.create_user(UserName=BACKUP_USER)
        iam.put_user_policy(UserName=BACKUP_USER, PolicyName="backup-bucket", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=BACKUP_USER)["AccessKey"]
    spec = StoreSpec(access.endpoint_url, access.region, bucket, "", key["AccessKeyId"], key["SecretAccessKey"])
    env.update(lambda st: st.update(backup_store=spec.to_dict()))
    return spec


def start_backups(env: RegionRecord) -> StoreSpec:
    """The store, then a sidecar beside each member; recorded in the state."""
    from harness.etcd_builds import etcdutl_binary

    spec = dataclasses.replace(ensure_store(env), prefix=CLUSTER_PREFIX)
    workdir = env.config.state_dir / env.spec.name / "backup"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "store.json").write_text(json.dumps(spec.public()))
    record = {"store": spec.to_dict(), "workdir": str(workdir), "etcdutl": str(etcdutl_binary()), "sidecars": {}}
    env.update(lambda st: st.update(backups=record))
    for m in env.members:
        start_sidecar(env, m.name)
    return spec


def store_spec(env: RegionRecord) -> StoreSpec:
    record = env.state.get("backups")
    if not record:
        raise ConfigError(f"region {env.spec.name!r} takes no backups: bring it up with [region] backups "
                          "(`harness up --backups`)")
    return StoreSpec.from_dict(record["store"])


def store(env: RegionRecord) -> BackupStore:
    return BackupStore(store_spec(env))


def sidecar_running(env: RegionRecord, member: str) -> bool:
    rec = (env.state.get("backups") or {}).get("sidecars", {}).get(member) or {}
    return bool(rec.get("pid")) and pid_alive(rec["pid"])


def start_sidecar(env: RegionRecord, member: str) -> int:
    """The member's sidecar, in its node's namespace, listening on the node's address."""
    record = env.state["backups"]
    if sidecar_running(env, member):
        return int(record["sidecars"][member]["pid"])
    m = env.member(member)
    spec = StoreSpec.from_dict(record["store"])
    workdir = Path(record["workdir"])
    node = next(n for n in env.nodes if n.name == m.node)
    log = env.config.state_dir / env.spec.name / "logs" / f"{m.name}-backup.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = ["ip", "netns", "exec", env.names.node_ns(m.node), sys.executable, "-m", "harness.backup.sidecar",
            f"--member={m.client_url}", f"--store={workdir / 'store.json'}", f"--etcdutl={record['etcdutl']}",
            f"--workdir={workdir / m.name}", f"--listen={node.address}:{SIDECAR_PORT}",
            f"--full-period={env.spec.full_snapshot_period_s}", f"--delta-period={env.spec.delta_snapshot_period_s}"]
    if env.tls is not None:  # [etcd] tls: the harness's client certificate, which the members accept
        argv += [f"--cacert={env.tls.ca}", f"--cert={env.tls.cert}", f"--key={env.tls.key}",
                 *([f"--server-name={env.tls.server_name}"] if env.tls.server_name else [])]
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    child_env |= {"AWS_ACCESS_KEY_ID": spec.access_key_id or "", "AWS_SECRET_ACCESS_KEY": spec.secret_access_key or ""}
    with open(log, "ab") as out:
        pid = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True, env=child_env).pid
    env.update(lambda st: st["backups"]["sidecars"].update({m.name: {"pid": pid, "log": str(log),
                                                                     "listen": f"{node.address}:{SIDECAR_PORT}"}}))
    wait_for(lambda: _status_or_error(env, m.name), lambda s: isinstance(s, dict) or not pid_alive(pid),
             f"{m.name}'s backup sidecar to answer", env.config.timeouts.member_ready)
    if not pid_alive(pid):
        raise EnvironmentStateError(f"{m.name}'s backup sidecar exited; its log ({log}):\n{log_tail(log)}")
    return pid


def stop_sidecar(env: RegionRecord, member: str) -> int | None:
    """Kill the member's sidecar (what it had not uploaded is gone); returns its pid."""
    rec = (env.state.get("backups") or {}).get("sidecars", {}).get(member) or {}
    pid = rec.get("pid")
    if pid and signal_pid(pid, signal.SIGKILL):
        reap(pid, 2.0)
    if rec:
        env.update(lambda st: st["backups"]["sidecars"][member].update(pid=None))
    return pid


def _status_or_error(env: RegionRecord, member: str) -> dict[str, Any] | str:
    try:
        return sidecar_status(env, member)
    except EnvironmentStateError as e:
        return str(e)


def sidecar_request(env: RegionRecord, member: str, method: str, path: str, timeout: float = 5.0) -> dict[str, Any]:
    """A call to the member's sidecar from its node's namespace (harness.backup.sidecar.request)."""
    from harness.backup import sidecar

    rec = (env.state.get("backups") or {}).get("sidecars", {}).get(member)
    if not rec:
        raise EnvironmentStateError(f"{member} has no backup sidecar")
    return sidecar.request(rec["listen"], method, path, timeout, env.names.node_ns(env.member(member).node),
                           f"{member}'s backup sidecar")


def sidecar_status(env: RegionRecord, member: str) -> dict[str, Any]:
    return sidecar_request(env, member, "GET", "/status", env.config.timeouts.status_request * 4)


def sidecars(env: RegionRecord) -> dict[str, dict[str, Any] | str]:
    out: dict[str, dict[str, Any] | str] = {}
    for m in env.members:
        if not sidecar_running(env, m.name):
            out[m.name] = "not running"
            continue
        try:
            out[m.name] = sidecar_status(env, m.name)
        except EnvironmentStateError as e:
            out[m.name] = str(e)
    return out


def take_snapshot(env: RegionRecord, kind: str) -> dict[str, Any]:
    """An on-demand snapshot, asked of the leading sidecar (the others refuse: 409)."""
    from harness.backup.sidecar import leading

    if kind not in ("full", "delta"):
        raise ConfigError(f"a snapshot is full or delta, got {kind!r}")
    return sidecar_request(env, leading(sidecars(env)), "POST", f"/snapshot/{kind}", 300.0)


def restore_from_backups(env: RegionRecord, restore_members: Callable[[Path, Path], float],
                         progress: Callable[[str], None] | None = None, deltas: bool = True) -> dict[str, Any]:
    """Compact the store's chain into one full snapshot, restore every member from it and start
    them (`restore_members(snapshot, etcdutl)`, the region's: seconds the restore took)."""
    from harness.backup.compaction import compact

    began = time.monotonic()
    record = env.state["backups"]
    held = store(env).latest_revision()
    c = compact(store(env), Path(env.state["etcd"]["path"]), Path(record["etcdutl"]),
                Path(record["workdir"]) / "restore", progress=progress, deltas=deltas)
    restored = restore_members(c.snapshot.path, Path(record["etcdutl"]))
    return {"revision": c.revision, "store_revision": held, "full": c.chain.full.name, "deltas": len(c.chain.deltas),
            "events": c.events, "compaction_s": round(c.seconds, 3), "restore_s": round(restored, 3),
            "total_s": round(time.monotonic() - began, 3)}


# -- the backup-store-outage fault: the store unreachable from zones, dropped at the router --------
def _store_address(env: RegionRecord) -> tuple[str, int]:
    """The store of the region's backups and of its seed's etcds alike."""
    recorded = env.state.get("backup_store")
    if not recorded:
        raise EnvironmentStateError(f"region {env.spec.name!r} has no backup store yet: it is made with the region's "
                                    "backups (`harness up --backups`) or the first seed etcd backed up")
    parts = urlsplit(recorded.get("endpoint_url") or "")
    if not parts.hostname or not parts.port:
        raise EnvironmentStateError(f"the backup store's endpoint {recorded.get('endpoint_url')!r} has no address and port")
    return parts.hostname, parts.port


def store_cut_table(run_id: str) -> str:
    return f"{FAULT_TABLE_PREFIX}store_{run_id.replace('-', '_')}"


def cut_backup_store(env: RegionRecord, zones: list[str], run_id: str) -> dict[str, Any]:
    """The router drops what the zones send to the store's address and port (the harness, outside
    every zone, still reaches it)."""
    address, port = _store_address(env)
    table = store_cut_table(run_id)
    subnets = ", ".join(env.names.subnet(z) for z in zones)
    netns.nft(env.names.router, f"""add table inet {table}
flush table inet {table}
add chain inet {table} forward {{ type filter hook forward priority -10; policy accept; }}
add rule inet {table} forward ip saddr {{ {subnets} }} ip daddr {address} tcp dport {port} counter drop
""", env.config.timeouts.command)
    return {"table": table, "zones": zones, "store": f"{address}:{port}"}


def backup_store_cut_effect(env: RegionRecord, data: dict[str, Any]) -> dict[str, Any] | None:
    """In effect once a connection to the store from each cut zone goes unanswered (tried from the
    zones' client namespaces at once; the store answers a zone it can hear in well under 0.1 s)."""
    address, port = _store_address(env)

    def answered(zone: str) -> bool:
        try:
            with netns.entered(env.names.client_ns(zone)):
                socket.create_connection((address, port), timeout=STORE_PROBE_S).close()
            return True
        except OSError:
            return False

    with ThreadPoolExecutor(len(data["zones"])) as pool:
        if any(pool.map(answered, data["zones"])):
            return None
    return {"unreachable_from": data["zones"], "dropped_packets": dropped_packets(env.names.router, data["table"])}


def restore_backup_store(env: RegionRecord, data: dict[str, Any]) -> None:
    """Idempotent; from the run id alone when inject never returned (the table is named after it)."""
    table = data.get("table") or store_cut_table(data["run_id"])
    netns.nft(env.names.router, remove_table(table), env.config.timeouts.command)


def compact_backups(env: RegionRecord) -> dict[str, Any]:
    from harness.backup.compaction import compact_and_upload

    record = env.state["backups"]
    return compact_and_upload(store(env), Path(env.state["etcd"]["path"]), Path(record["etcdutl"]),
                              Path(record["workdir"]) / "compaction")


# -- the operator tasks' executor on the local seed ----------------------------------------------
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
    from harness.providers.local.kubernetes import start_seed_component

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
