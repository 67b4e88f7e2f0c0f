"""A shoot control plane running for real on the local seed, as probes and checks see it: its
etcd clusters are EtcdMembers like the region's own, and its API is behind the load balancer."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Callable

from harness.errors import ConfigError, EnvironmentStateError, HarnessError
from harness.kube import cluster, etcd_tls, placement
from harness.providers.base import TaskEndpoint
from harness.topology import KubeAccess, Member, Seed
from harness.providers.local.core import EtcdMembers, RegionRecord
from harness.wait import wait_for


def _state(pid: int) -> str:
    """A process's state letter from /proc (Z: a zombie, dead but not reaped by its agent yet)."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


class ShootEtcd(EtcdMembers):
    """One of the shoot's etcd clusters (etcd-main, etcd-events), its members where the scheduler
    put them. The member set is taken once, while every member runs; a member that moves keeps its
    address (its volume keeps it in its zone), so the view stays true across outages."""

    provider = "local"
    durable = False  # see the ledger below

    def __init__(self, env: RegionRecord, seed: Seed, namespace: str, name: str = "etcd-main") -> None:
        self.env, self.seed, self.namespace = env, seed, namespace
        # Faults on the members themselves (member-kill) are kept here, not in the region's
        # ledger: the node agent restarts a killed member within a second, whatever becomes
        # of the harness, so nothing is left for `harness heal` to undo after a crash.
        self._ledger: list[dict[str, Any]] = []
        self.config = env.config
        self.names = env.names
        self.zones = env.zones
        self.nodes = env.nodes
        self.etcdctl = env.etcdctl
        self.name = name
        pods = placement.of(placement.observe(cluster.connect(seed.kube), namespace), name)
        missing = [p.name for p in pods if not (p.ip and p.node and p.zone and p.phase == "Running")]
        if not pods or missing:
            raise EnvironmentStateError(f"{name} in {namespace} is not running everywhere yet: {missing or 'no pods'}")
        self.tls = etcd_tls.client_tls(cluster.connect(seed.kube), namespace, name,
                                        env.config.state_dir / env.spec.name / "etcd-tls" / f"{namespace}_{name}")
        scheme = "https" if self.tls else "http"
        self.members = tuple(
            Member(p.name, p.node, p.zone, f"{scheme}://{p.ip}:2379", f"{scheme}://{p.ip}:2380")  # type: ignore[arg-type]
            for p in pods
        )

    def wait_healthy(self, timeout: float | None = None, members: list[str] | None = None,
                     max_lag: int = 20) -> Any:
        return self.wait_members(timeout, members, max_lag)

    # -- as an environment for the fault runner (member faults) ------------------------------
    def kube(self) -> KubeAccess:
        return self.seed.kube

    def faults(self) -> list[dict[str, Any]]:
        return list(self._ledger)

    def record_fault(self, entry: dict[str, Any]) -> None:
        self._ledger.append(entry)

    def update_fault(self, fault_id: str, data: dict[str, Any]) -> None:
        for entry in self._ledger:
            if entry["id"] == fault_id:
                entry["data"] = data

    def forget_fault(self, fault_id: str) -> None:
        self._ledger = [e for e in self._ledger if e["id"] != fault_id]

    def health(self) -> dict[str, Any]:
        return {n: (s if isinstance(s, str) else {"leader": s.leader, "rev": s.revision}) for n, s in self.status().items()}

    def sweep(self) -> list[str]:
        return []

    def _pid(self, member: str) -> int:
        """The member's process, from the state of the agent of the node its pod is bound to."""
        from kubernetes import client as k8s

        with cluster.api_errors(f"reading pod {self.namespace}/{member}"):
            node = k8s.CoreV1Api(cluster.connect(self.seed.kube)).read_namespaced_pod(self.member(member).name,
                                                                                       self.namespace).spec.node_name
        agents = self.config.state_dir / self.env.spec.name / "kube" / "agents"
        running = json.loads((agents / f"agent-{node}.json").read_text())
        record = next((r for r in running.values() if r["name"] == member and r["namespace"] == self.namespace), None)
        if record is None:
            raise HarnessError(f"the agent of {node} runs no process for {self.namespace}/{member}")
        return int(record["process"]["pid"])

    def kill_member(self, member: str) -> int | None:
        """SIGKILL the member's process, as a crashing container; its pod stays. Returns the pid
        once it is gone (the node agent restarts the member under a new one)."""
        pid = self._pid(member)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: os.path.exists(f"/proc/{pid}") and _state(pid) != "Z", lambda there: not there,
                 f"{member} (pid {pid}) gone after SIGKILL", self.config.timeouts.command)
        return pid

    def member_running(self, member: str) -> bool:
        try:
            return _state(self._pid(member)) not in ("", "Z")
        except (HarnessError, OSError, KeyError):
            return False

    def start_member(self, member: str) -> int:
        """The node agent restarts a member that died after it was ready; wait until it answers."""
        wait_for(lambda: self.status()[member], lambda s: not isinstance(s, str),
                 f"{member} restarted by its node agent", self.config.timeouts.member_ready)
        return self._pid(member)

    # -- backups (seed 003): the sidecars the node agents run in etcd-main's pods --------------
    def backup_store(self) -> Any:
        from harness.kube.seed_store import store_of
        from harness.backup.store import BackupStore

        return BackupStore(store_of(cluster.connect(self.seed.kube), self.namespace, self.name))

    def _sidecar(self, member: str, method: str, path: str, timeout: float) -> dict[str, Any]:
        from harness.backup import sidecar
        from harness.kube.agent import BACKUP_PORT

        m = self.member(member)
        host = m.client_url.split("://", 1)[1].rsplit(":", 1)[0]  # the pod's address, fixed in its zone
        return sidecar.request(f"{host}:{BACKUP_PORT}", method, path, timeout, self.names.node_ns(m.node),
                               f"{member}'s backup sidecar")

    def backup_sidecars(self) -> dict[str, dict[str, Any] | str]:
        out: dict[str, dict[str, Any] | str] = {}
        for m in self.members:
            try:
                out[m.name] = self._sidecar(m.name, "GET", "/status", self.config.timeouts.status_request * 4)
            except HarnessError as e:
                out[m.name] = str(e)
        return out

    def take_snapshot(self, kind: str) -> dict[str, Any]:
        from harness.backup.sidecar import leading

        if kind not in ("full", "delta"):
            raise ConfigError(f"a snapshot is full or delta, got {kind!r}")
        return self._sidecar(leading(self.backup_sidecars()), "POST", f"/snapshot/{kind}", 300.0)

    def _workdir(self) -> Path:
        return self.config.state_dir / self.env.spec.name / "backup" / f"{self.namespace}_{self.name}"

    def compact_backups(self) -> dict[str, Any]:
        from harness.backup.compaction import compact_and_upload
        from harness.etcd_builds import etcdutl_binary

        return compact_and_upload(self.backup_store(), Path(self.env.state["etcd"]["path"]), etcdutl_binary(),
                                  self._workdir() / "compaction")

    def restore_from_backups(self, progress: Callable[[str], None] | None = None, deltas: bool = True) -> dict[str, Any]:
        """What etcd-druid does for a permanent quorum loss, on the local seed: the store's chain
        compacted into one snapshot, the StatefulSet scaled to 0, every member's volume emptied and
        restored from the snapshot (a new cluster of the same members), the StatefulSet scaled back."""
        from kubernetes import client as k8s

        from harness.backup.compaction import compact
        from harness.backup.snapshots import MemberSeed, restore
        from harness.etcd_builds import etcdutl_binary
        from harness.kube.agent import REJOIN_MARKER, volume_path
        from harness.providers.local.seed.kubernetes import volumes_root

        say = progress or (lambda _: None)
        began = time.monotonic()
        store = self.backup_store()
        held = store.latest_revision()
        etcdutl = etcdutl_binary()
        c = compact(store, Path(self.env.state["etcd"]["path"]), etcdutl, self._workdir() / "restore", progress=progress,
                    deltas=deltas)
        api = cluster.connect(self.seed.kube)
        apps, core = k8s.AppsV1Api(api), k8s.CoreV1Api(api)
        where = f"{self.namespace}/{self.name}"
        with cluster.api_errors(f"reading StatefulSet {where}"):
            replicas = int(apps.read_namespaced_stateful_set(self.name, self.namespace).spec.replicas)
        say(f"scaling {where} to 0")
        self._scale(apps, 0)
        wait_for(lambda: placement.of(placement.observe(api, self.namespace), self.name), lambda pods: not pods,
                 f"every pod of {where} gone", self.config.timeouts.recovery)
        seeds = []
        for m in self.members:
            with cluster.api_errors(f"reading the claim of {m.name}"):
                claim = core.read_namespaced_persistent_volume_claim(f"{self.name}-{m.name}", self.namespace)
                pv = core.read_persistent_volume(claim.spec.volume_name)
            volume = volume_path(volumes_root(self.env), pv.metadata.name, pv.metadata.uid)
            shutil.rmtree(volume / m.name, ignore_errors=True)
            (volume / REJOIN_MARKER).unlink(missing_ok=True)
            seeds.append(MemberSeed(m.name, m.peer_url, volume / m.name))
        took = restore(etcdutl, c.snapshot.path, seeds, f"{self.namespace}-{self.name}-restored-{int(time.time())}")
        say(f"restored {len(seeds)} members at revision {c.revision}; scaling {where} to {replicas}")
        self._scale(apps, replicas)
        return {"revision": c.revision, "store_revision": held, "full": c.chain.full.name, "deltas": len(c.chain.deltas),
                "events": c.events, "compaction_s": round(c.seconds, 3), "restore_s": round(took, 3),
                "total_s": round(time.monotonic() - began, 3)}

    def _scale(self, apps: Any, replicas: int) -> None:
        with cluster.api_errors(f"scaling {self.namespace}/{self.name} to {replicas}"):
            apps.patch_namespaced_stateful_set_scale(self.name, self.namespace, {"spec": {"replicas": replicas}})

    def task_endpoint(self) -> TaskEndpoint:
        from harness.providers.local.seed.task_executor import task_endpoint

        return task_endpoint(self.env, (self.namespace, self.name))
