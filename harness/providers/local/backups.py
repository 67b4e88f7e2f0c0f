"""Backups of the local region's etcd ([region] backups): a backup sidecar (harness.backup.sidecar)
beside each member, in the member's node namespace, writing to the region's backup store
(cloud/backup_store.py) with the store's key pair, never the harness's. A member's sidecar starts
with the member and dies with its volume (`RegionRecord.lose_member_data`): a killed etcd process
leaves its sidecar running, as a crashed container leaves the other containers of its pod. Also a
snapshot on demand, and the whole cluster restored from the store.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.backup.store import StoreSpec
from harness.errors import ConfigError, EnvironmentStateError
from harness.processes import log_tail, pid_alive, reap, signal_pid
from harness.providers.local.cloud.backup_store import CLUSTER_PREFIX, ensure_store, store
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord


SIDECAR_PORT = 8080  # etcd-backup-restore's server port


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
