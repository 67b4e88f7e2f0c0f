"""The local region provider: a router namespace, one bridge and subnet per zone, node
namespaces attached to their zone, client namespaces (one per zone) for the harness,
and real etcd members running inside node namespaces. With the local seed (harness/kube)
the region's nodes are also Kubernetes nodes, each kept alive from inside its namespace."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import netns, rootless
from harness.backup.snapshots import MemberSeed, restore
from harness.command_lines import EtcdServingTls
from harness.config import Config, with_region
from harness.errors import CapabilityMissing, ConfigError, EnvironmentStateError, PrerequisiteError, WaitTimeout
from harness.etcd_gateway import EtcdClient, EtcdRequestError, Status
from harness.files import remove_partial
from harness.kube import cluster, loadbalancer
from harness.kube.agent import volume_path
from harness.kube.binaries import KUBERNETES_VERSION
from harness.kube.pki import EtcdNames, generate_etcd_pki
from harness.processes import cmdline, log_tail, pid_alive, reap, signal_pid
from harness.providers.base import LinkImpairment, TaskEndpoint
from harness.providers.local import effects, members as member_ops
from harness.providers.local.core import EtcdMembers, Names, RegionRecord, plan
from harness.providers.local.host import cpu_group, disks, etcd as etcdproc, powerloss_fs
from harness.providers.local.network.traffic_counters import zone_pair_bytes
from harness.providers.local.seed.kubernetes import (
    STORAGE_CLASS, keep_logs, lb_address, restart_node_agents, restore_silenced, start_for, stop_for, sweep_cordons,
    volumes_root, wait_nodes_ready,
)
from harness.providers.local.seed.shoot import ShootEtcd
from harness.providers.state import read_state, state_path, stop_watchdogs, write_state
from harness.topology import Member, Node, Seed
from harness.wait import wait_for

if TYPE_CHECKING:
    from harness.aws.access import AwsAccess

# The local cloud, the backups and the seed's machine controllers, cloud controller and task
# executor are imported where they are used: they need botocore and yaml, which `harness
# up/fault/heal/down` run without on the system's own Python (tests/integration/test_rootless.py),
# as the kubernetes client, a second to import, waits for the one method that needs it.


class LocalEnvironment(RegionRecord):
    """A running local region, as recorded in its state file, and everything it can do."""

    node_failure_modes = effects.NODE_FAILURE_MODES

    def run_facts(self) -> dict[str, str]:
        # tmpfs: fsync costs nothing and a killed process's writes survive in the page cache; every
        # write-gap, latency and lost-write figure of the run is about that medium. The seed's
        # Kubernetes is the pinned one until a scenario starts it and its API says.
        return {"etcd_version": self.state["etcd"]["version"], "etcd_binary": self.state["etcd"]["path"],
                "etcd_data": self.state.get("data_medium", "unknown"), "kubernetes_version": KUBERNETES_VERSION}

    def zone_pair_bytes(self) -> dict[str, int]:
        return zone_pair_bytes(self)

    def _data_disk(self, member: str) -> Path:
        name = self.member(member).name
        return disks.own_disk(Path(self.state["data_dir"]) / name, name)

    def fill_member_disk(self, member: str, leave_bytes: int) -> dict[str, Any]:
        path = self._data_disk(member)
        return {"path": str(path), "ballast_bytes": disks.fill(path, leave_bytes), "leave_bytes": leave_bytes}

    def free_member_disk(self, member: str, data: dict[str, Any]) -> None:
        disks.empty(Path(self.state["data_dir"]) / self.member(member).name)  # also after a fill that never began

    def member_disk_free(self, member: str) -> int:
        return disks.free_bytes(self._data_disk(member))

    def load_balancer_targets(self) -> dict[str, str]:
        """The seed's HAProxy in front of the shoot's kube-apiservers, from its stats socket."""
        record = self.state.get("loadbalancer") or self.refresh().get("loadbalancer")
        if not record:
            raise CapabilityMissing(f"region {self.spec.name} runs no shoot API load balancer: it comes up with the "
                                    "local seed (`harness up --kubernetes`)")
        return loadbalancer.backend_states(record)

    def shoot_etcd(self, seed: Seed, namespace: str, name: str) -> EtcdMembers:
        return ShootEtcd(self, seed, namespace, name)

    def wait_healthy(
        self, timeout: float | None = None, members: list[str] | None = None, max_lag: int = 20
    ) -> dict[str, Status | str]:
        """The members healthy (see EtcdMembers.wait_members); with the local seed running and no
        member named, also every seed node Ready. A member that kept them waiting is named with the
        end of its log: the state file and the logs may be gone when the error is read (a CI run)."""
        try:
            statuses = self.wait_members(timeout, members, max_lag)
        except WaitTimeout as e:
            raise WaitTimeout(e.description + self._behind(e.last, max_lag), e.timeout, e.last) from None
        if members is None and self.refresh().get("kubernetes"):
            wait_nodes_ready(self, timeout or self.config.timeouts.member_ready)
        return statuses

    def _behind(self, last: object, max_lag: int) -> str:
        """What the logs of the members that did not answer, or were more than `max_lag` entries
        behind, end with; "" when `last` holds no statuses."""
        if not isinstance(last, dict):
            return ""
        applied = [s.applied_index for s in last.values() if isinstance(s, Status)]
        behind = [name for name, s in last.items()
                  if not isinstance(s, Status) or (applied and max(applied) - s.applied_index > max_lag)]
        said = []
        for name in behind:
            log = (self.state.get("members", {}).get(name) or {}).get("log")
            if log:
                lines = [line[:300] for line in log_tail(log, 3).splitlines()]
                said.append(f"{name}'s log {log} ends with: {' | '.join(lines)}")
        return "".join(f" ({s})" for s in said)

    # -- member processes: harness.providers.local.members -------------------------
    def member_pid(self, member: str) -> int | None:
        return member_ops.member_pid(self, member)

    def member_running(self, member: str) -> bool:
        return member_ops.member_running(self, member)

    def members_cpu_waited(self) -> float | None:
        group = self.state.get("cpu_group")
        return cpu_group.waited(Path(group)) if group else None

    def kill_member(self, member: str) -> int | None:
        return member_ops.kill_member(self, member)

    def signal_member(self, member: str, sig: signal.Signals) -> None:
        return member_ops.signal_member(self, member, sig)

    def start_member(self, member: str, joining: bool = False) -> int:
        return member_ops.start_member(self, member, joining)

    def disk_serving(self, member: str) -> bool:
        return member_ops.disk_serving(self, member)

    def power_off_member(self, member: str) -> dict[str, Any]:
        name = self.member(member).name
        fs = self.state["members"][name].get("fs")
        if not fs:
            raise CapabilityMissing(f"{name}'s data directory loses nothing when its power goes: bring the region up "
                                    "with [region] power_loss_fs (`harness up --power-loss-fs`)")
        pid = self.kill_member(name)
        dropped = powerloss_fs.power_off(fs["pid"], Path(fs["mount"]), self.config.timeouts.command) if fs["pid"] \
            else {"dropped_bytes": 0, "dropped_files": 0, "note": "its filesystem was not running"}
        self.update(lambda st: st["members"][name]["fs"].update(pid=None))
        fs["pid"] = None
        return {"pid": pid, **dropped}

    # -- a member's volume: lost, and made again from a snapshot (seed 003) ----
    def _flag(self, member: str, flag: str) -> str:
        return member_ops.flag(self, member, flag)

    def lose_member_data(self, member: str) -> dict[str, Any]:
        """Kill the member and delete its data directory's contents (its own filesystem, if it has
        one, stays mounted and empty): irreversible."""
        name = self.member(member).name
        if self.state.get("backups"):  # its pod is gone, and the backup sidecar with it
            from harness.providers.local.backups import stop_sidecar

            # First: a sidecar that saw its member die would upload what it held as it lost
            # the lead, which a pod gone as a whole never does.
            stop_sidecar(self, name)
        pid = self.kill_member(name)
        data = Path(self._flag(name, "data-dir"))
        removed = 0
        for entry in list(data.iterdir()) if data.exists() else []:
            if entry.name == disks.BALLAST:
                continue
            removed += sum(p.stat().st_size for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else entry.stat().st_size
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        return {"pid": pid, "data_dir": str(data), "removed_bytes": removed}

    def replace_member(self, member: str) -> dict[str, Any]:
        """The member's pod back on an empty volume, joining as a new member (what etcd-druid's
        backup sidecar makes of a member whose data is gone or damaged while the others keep
        quorum): its data deleted, the old member removed and a new one with its name and peer URL
        added through a member that is up, then started to catch up from the leader."""
        name = self.member(member).name
        lost = self.lose_member_data(name)
        peer_url = self.member(name).peer_url
        survivor = next((m.name for m in self.members if m.name != name and self.member_running(m.name)), None)
        if survivor is None:
            raise EnvironmentStateError(f"no other member runs to add {name} back through: restore from the backups")
        client = self.client(survivor, timeout=10.0)
        try:
            old = next((m["ID"] for m in client.members() if peer_url in m.get("peerURLs", [])), None)
            if old is not None:
                client.remove_member(old)
            # Refused as "unhealthy cluster" until the leader has heard from the remaining voters
            # for etcd's health interval (5 s) since the removal: retried until then.
            new_id = wait_for(lambda: _try_add(client, peer_url), lambda got: isinstance(got, int),
                              f"{name} added back to the cluster", self.config.timeouts.recovery)
            current = ",".join(f"{m.get('name') or name}={m['peerURLs'][0]}" for m in client.members())
        finally:
            client.close()
        args = [a for a in self.state["members"][name]["args"]
                if not a.startswith(("--initial-cluster-state=", "--initial-cluster="))]
        args += ["--initial-cluster-state=existing", f"--initial-cluster={current}"]
        self.update(lambda st: st["members"][name].update(args=args))
        pid = self.start_member(name, joining=True)
        return {"removed_id": old, "added_id": new_id, "pid": pid, "removed_bytes": lost["removed_bytes"]}

    def corrupt_member_data(self, member: str) -> dict[str, Any]:
        """Stop the member and overwrite both of its backend's meta pages (the first 8 KiB of its
        bbolt database): a damaged database the member cannot open again."""
        name = self.member(member).name
        pid = self.kill_member(name)
        db = Path(self._flag(name, "data-dir")) / "member" / "snap" / "db"
        if not db.exists():
            raise EnvironmentStateError(f"{name} has no backend database at {db} to damage")
        with open(db, "r+b") as f:
            f.write(os.urandom(8192))
            f.flush()
            os.fsync(f.fileno())
        return {"pid": pid, "db": str(db), "damaged_bytes": 8192}

    def alter_member_value(self, member: str, value: bytes, altered: bytes) -> dict[str, Any]:
        """Stop the member and rewrite every stored copy of `value` in its backend database as
        `altered`, in place: bbolt checksums only its meta pages, so the member opens the database
        again and serves the altered value as if it had been written. Nothing changed when the
        database holds no copy (not committed yet: etcd commits its backend every 100 ms)."""
        if len(altered) != len(value) or altered == value:
            raise ConfigError("an altered value must differ from the value and have its length")
        name = self.member(member).name
        pid = self.kill_member(name)
        db = Path(self._flag(name, "data-dir")) / "member" / "snap" / "db"
        data = db.read_bytes() if db.exists() else b""
        copies = data.count(value)
        if copies:
            with open(db, "r+b") as f:
                f.write(data.replace(value, altered))
                f.flush()
                os.fsync(f.fileno())
        return {"pid": pid, "db": str(db), "copies": copies}

    def restore_members(self, snapshot: Path, etcdutl: Path) -> float:
        """Every member's data deleted and made again from `snapshot`, a new cluster of the same
        members (what etcd-druid does after a permanent quorum loss: no member's data is kept),
        then started; returns the seconds the restore took (not the start)."""
        for m in self.members:
            self.lose_member_data(m.name)
        seeds = [MemberSeed(m.name, m.peer_url, Path(self._flag(m.name, "data-dir"))) for m in self.members]
        took = restore(etcdutl, snapshot, seeds, f"{self.spec.name}-restored-{int(time.time())}")
        for m in self.members:
            self.start_member(m.name)
        return took

    # -- backups ([region] backups): harness.providers.local.backups ------------
    def backup_store(self) -> Any:
        from harness.providers.local.cloud.backup_store import store

        return store(self)

    def seed_backup_store(self) -> Any:
        from harness.providers.local.cloud.backup_store import ensure_store

        return ensure_store(self)

    def backup_sidecars(self) -> dict[str, dict[str, Any] | str]:
        from harness.providers.local.backups import sidecars

        return sidecars(self)

    def take_snapshot(self, kind: str) -> dict[str, Any]:
        from harness.providers.local.backups import take_snapshot

        return take_snapshot(self, kind)

    def compact_backups(self) -> dict[str, Any]:
        from harness.providers.local.cloud.backup_store import compact_backups

        return compact_backups(self)

    def task_endpoint(self) -> TaskEndpoint:
        from harness.providers.local.seed.task_executor import task_endpoint

        return task_endpoint(self)

    def restore_from_backups(self, progress: Callable[[str], None] | None = None, deltas: bool = True) -> dict[str, Any]:
        from harness.providers.local.backups import restore_from_backups

        return restore_from_backups(self, self.restore_members, progress, deltas)

    def cut_backup_store(self, zones: list[str], run_id: str) -> dict[str, Any]:
        from harness.providers.local.cloud.backup_store import cut_backup_store

        return cut_backup_store(self, zones, run_id)

    def backup_store_cut_effect(self, data: dict[str, Any]) -> dict[str, Any] | None:
        from harness.providers.local.cloud.backup_store import backup_store_cut_effect

        return backup_store_cut_effect(self, data)

    def restore_backup_store(self, data: dict[str, Any]) -> None:
        from harness.providers.local.cloud.backup_store import restore_backup_store

        restore_backup_store(self, data)

    def pause_member(self, member: str) -> int | None:
        pid = self.member_pid(member)
        self.signal_member(member, signal.SIGSTOP)
        return pid

    def resume_member(self, member: str) -> None:
        self.signal_member(member, signal.SIGCONT)

    def member_paused(self, member: str) -> bool:
        pid = self.member_pid(member)
        return pid is not None and effects.process_state(pid) in ("T", "t")

    # -- gofail failpoints: harness.providers.local.members ------------------------
    def set_failpoint(self, member: str, name: str, action: str) -> None:
        return member_ops.set_failpoint(self, member, name, action)

    def clear_failpoint(self, member: str, name: str) -> None:
        return member_ops.clear_failpoint(self, member, name)

    def failpoints(self, member: str) -> dict[str, str]:
        return member_ops.failpoints(self, member)

    # -- faults (the ledger is StateBacked's) -------------------------------
    def cut_zone(self, zone: str) -> dict[str, Any]:
        return effects.cut_zone(self, zone)

    def restore_zone(self, zone: str, data: dict[str, Any]) -> None:
        effects.restore_zone(self, zone, data)

    def zone_cut_effect(self, zone: str, data: dict[str, Any]) -> dict[str, Any] | None:
        return effects.zone_cut_effect(self, zone, data)

    def cut_peer_traffic(self, member: str) -> dict[str, Any]:
        return effects.cut_peer_traffic(self, self.member(member).name)

    def restore_peer_traffic(self, member: str, data: dict[str, Any]) -> None:
        effects.restore_peer_traffic(self, member, data)

    def peer_cut_effect(self, member: str, data: dict[str, Any]) -> dict[str, Any] | None:
        return effects.peer_cut_effect(self, member, data)

    def impair_links(self, paths: Sequence[tuple[str, str]], impairment: LinkImpairment, run_id: str) -> dict[str, Any]:
        return effects.impair_links(self, [(self.zone(a), self.zone(b)) for a, b in paths], impairment, run_id)

    def restore_links(self, data: dict[str, Any]) -> None:
        effects.restore_links(self, data)

    def links_effect(self, data: dict[str, Any]) -> dict[str, Any] | None:
        return effects.links_effect(self, data)

    def acl_effect(self, zone: str, acl_ids: Collection[str]) -> dict[str, Any] | None:
        return effects.acl_effect(self, zone, acl_ids)

    def fail_node(self, node: str, mode: str) -> dict[str, Any]:
        return effects.fail_node(self, node, mode)

    def restore_node(self, node: str, data: dict[str, Any]) -> None:
        effects.restore_node(self, node, data)

    def node_failure_effect(self, node: str, data: dict[str, Any]) -> dict[str, Any] | None:
        return effects.node_failure_effect(self, node, data)

    def sweep(self) -> list[str]:
        return effects.sweep(self) + restore_silenced(self) + sweep_cordons(self)

    def health(self) -> dict[str, Any]:
        return {name: (s if isinstance(s, str) else {"leader": s.leader, "term": s.raft_term, "rev": s.revision})
                for name, s in self.status().items()}

    # -- what backs the local seed's volumes: directories (volume-loss on NAMESPACE/POD) -------
    def volume_backing_refused(self, volume: dict[str, Any]) -> str | None:
        return None

    def destroy_volume_backing(self, volume: dict[str, Any], run_id: str,
                               record: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """The volume's directory deleted, as a cloud disk deleted with its PersistentVolume. A
        process still running on it (the member of a pod the API no longer holds, which its node
        agent would stop within its grace period) dies with its disk, at once."""
        path = volume_path(volumes_root(self), volume["volume"], volume["volume_uid"])
        users = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and str(path) in cmdline(int(p.name))]
        for pid in users:
            signal_pid(pid, signal.SIGKILL)
        for pid in users:
            reap(pid, 2.0)
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0
        shutil.rmtree(path, ignore_errors=True)
        return {"backing": str(path), "removed_bytes": size, "killed": users}

    # -- Gardener's components on the seed --------------------------------------
    def start_resource_manager(self) -> bool:
        from harness.providers.local.seed.resource_manager import start_resource_manager

        return start_resource_manager(self)

    def stop_resource_manager(self) -> list[str]:
        from harness.providers.local.seed.resource_manager import stop_resource_manager

        return stop_resource_manager(self)

    def kill_resource_manager(self) -> list[str]:
        from harness.providers.local.seed.resource_manager import kill_resource_manager

        return kill_resource_manager(self)

    def resource_manager_state(self) -> dict[str, bool]:
        from harness.providers.local.seed.resource_manager import resource_manager_state

        return resource_manager_state(self)

    def start_etcd_druid(self) -> bool:
        from harness.providers.local.seed.etcd_druid import start_etcd_druid

        return start_etcd_druid(self)

    def stop_etcd_druid(self) -> list[str]:
        from harness.providers.local.seed.etcd_druid import stop_etcd_druid

        return stop_etcd_druid(self)

    def etcd_druid_running(self) -> bool:
        from harness.providers.local.seed.etcd_druid import etcd_druid_running

        return etcd_druid_running(self)

    # -- the local cloud ----------------------------------------------------
    def start_machine_controllers(self, health_timeout_s: float, drain_timeout_s: float) -> str:
        from harness.providers.local.seed.machines import start_machine_controllers

        return start_machine_controllers(self, health_timeout_s, drain_timeout_s)

    def stop_machine_controllers(self) -> list[str]:
        from harness.providers.local.seed.machines import stop_machine_controllers

        return stop_machine_controllers(self)

    def machines(self) -> list[dict[str, Any]]:
        from kubernetes import client as k8s

        from harness.providers.local.seed.machines import NAMESPACE, machines

        kube = self.kube()
        if kube is None:
            raise ConfigError(f"region {self.spec.name!r} has no seed, so no machines")
        return machines(k8s.CustomObjectsApi(cluster.connect(kube)), NAMESPACE)

    def start_cloud_controller(self, version: str | None = None) -> dict[str, Any]:
        from harness.providers.local.seed.cloud_controller import start_cloud_controller

        return start_cloud_controller(self, version)

    def load_balancer_nodes(self, namespace: str, service: str) -> list[str] | None:
        from harness.providers.local.seed.cloud_controller import load_balancer_nodes

        return load_balancer_nodes(self, namespace, service)

    def load_balancer_endpoint(self, namespace: str, service: str) -> tuple[str, int, str | None] | None:
        from harness.providers.local.seed.cloud_controller import load_balancer_endpoint

        return load_balancer_endpoint(self, namespace, service)

    def load_balancer_health(self, namespace: str, service: str) -> dict[str, str]:
        from harness.providers.local.seed.cloud_controller import load_balancer_health

        return load_balancer_health(self, namespace, service)

    def replace_terminated_instance(self, instance_id: str) -> str | None:
        """Stands in for the machine controller the local cloud lacks (NodeInstances)."""
        from harness.providers.local.cloud.account import replace_terminated

        nodes = [n for n, i in (self.refresh().get("cloud") or {}).get("instances", {}).items() if i == instance_id]
        replaced = replace_terminated(self, nodes)
        return next((new for _, new in replaced.values()), None)

    def cloud_requests(self, since: float = 0.0) -> list[dict[str, Any]]:
        from harness.providers.local.cloud.account import requests_since

        return requests_since(self, since)

    def aws(self) -> AwsAccess | None:
        """The local cloud (moto) this region presents itself in, once `LocalRegion.cloud` started it."""
        if not (self.state.get("cloud") or {}).get("access"):
            return None  # no local cloud: nothing of boto3's is needed (or maybe even installed)
        from harness.providers.local.cloud.account import cloud_access

        return cloud_access(self.state)

    def restart_node_agents(self, node: str) -> bool:
        """Start the node's kubelet stand-in again if the node's failure killed it; True if it did."""
        return restart_node_agents(self, node)

    def _faults_on(self, zone: str) -> list[str]:
        """Active faults on the zone itself or on one of its nodes or members."""
        inside = {zone} | {n.name for n in self.nodes_in(zone)} | {m.name for m in self.members_in(zone)}
        return [f["id"] for f in self.state.get("faults", []) if f["target"] in inside]

    def describe(self) -> dict[str, Any]:
        """What `harness status --json` prints."""
        statuses = self.status()
        leader = self.leader(statuses)
        members = []
        for m in self.members:
            s = statuses[m.name]
            row: dict[str, Any] = {"name": m.name, "zone": m.zone, "node": m.node, "url": m.client_url}
            if isinstance(s, Status):
                row |= {"health": "healthy", "leader": s.leader == s.member_id, "raft_term": s.raft_term,
                        "revision": s.revision, "raft_index": s.raft_index, "version": s.version}
            else:
                row |= {"health": "unreachable", "error": s}
            row["running"] = self.member_running(m.name)
            members.append(row)
        return {
            "provider": self.provider,
            "region": self.spec.name,
            "layout": self.spec.layout,
            "etcd": self.state["etcd"],
            "zones": [{"name": z, "subnet": self.names.subnet(z), "faults": self._faults_on(z)} for z in self.zones],
            "nodes": [{"name": n.name, "zone": n.zone, "address": n.address, "host": n.host} for n in self.nodes],
            "members": members,
            "leader": leader,
            "active_faults": [f["id"] for f in self.state.get("faults", [])],
            "kubernetes": self.state.get("kubernetes"),
            "references": self.state.get("references", []),
        }


def _try_add(client: EtcdClient, peer_url: str) -> int | str:
    try:
        return client.add_member([peer_url])
    except EtcdRequestError as e:
        return str(e)


def _helpers_serving(data: Path) -> list[int]:
    """powerloss-fs processes whose mount point is under `data`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = cmdline(int(entry.name)).split()
            if argv and argv[0].endswith(powerloss_fs.BINARY_NAME) and "--mount" in argv[:-1]:
                mount = Path(argv[argv.index("--mount") + 1])
                if mount == data or data in mount.parents:
                    found.append(int(entry.name))
    return found


def _ancestry() -> set[int]:
    """This process and its ancestors."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return pids


class LocalRegion:
    """Provider: `up()` builds the region, `down()` removes everything (idempotent)."""

    name = "local"

    def __init__(self, config: Config) -> None:
        self.config = config
        self.spec = config.region
        self.names = Names(self.spec)
        self.path = state_path(config.state_dir, self.spec.name)

    def fresh(self, name: str, etcd: dict[str, Any] | None = None, **shape: Any) -> LocalRegion:
        return LocalRegion(with_region(self.config, etcd, name=name, **shape))

    def check_prerequisites(self) -> etcdproc.EtcdBinary:
        if rootless.needs_reexec():
            raise PrerequisiteError(
                "the local region needs root or a user namespace; run through `harness` (it re-executes "
                "itself under `unshare` when not root) or as root"
            )
        netns.require_tools("ip", "nft")
        binary = etcdproc.find_etcd(self.config.etcd)
        if self.spec.power_loss_fs:
            powerloss_fs.helper_binary()  # built on first use, before anything is made
        return binary

    def leftovers(self) -> list[str]:
        found = [ns for ns in netns.list_netns() if self.names.owns(ns)]
        found += [str(p) for p in disks.mounts_under(self.config.data_dir / self.spec.name)]
        if self.path.exists():
            found.insert(0, str(self.path))
        return found

    def reclaim(self) -> list[str]:
        left = self.leftovers()
        if left:
            owner = (read_state(self.path) or {}).get("owner_pid")
            if owner and owner != os.getpid() and pid_alive(owner):
                raise EnvironmentStateError(
                    f"region {self.spec.name!r} is in use by process {owner}; wait for it or give this run "
                    "another region name (--region-name, or harness --name)")
            self.down()
        return left

    def replace(self) -> LocalEnvironment:
        self.down()
        return self.up()

    def attach(self) -> LocalEnvironment:
        state = read_state(self.path)
        if state is None:
            raise EnvironmentStateError(f"region {self.spec.name!r} is not up (no state file {self.path}); run `harness up`")
        return LocalEnvironment(self.config, state)

    def seed(self, env: Any) -> Seed:
        """The local seed: the Kubernetes control plane beside the region, started on first use."""
        assert isinstance(env, LocalEnvironment)
        if env.refresh().get("kubernetes") is None:
            start_for(env)
        access = env.kube()
        assert access is not None
        return Seed(access, STORAGE_CLASS, static_volumes=True, shoot_api=lb_address(env), real_pods=True)

    def cloud(self, env: Any) -> AwsAccess:
        """The local cloud: the region as a VPC in a local AWS API, started on first use."""
        from harness.providers.local.cloud.account import ensure_cloud

        assert isinstance(env, LocalEnvironment)
        return ensure_cloud(env)

    def up(self) -> LocalEnvironment:
        binary = self.check_prerequisites()
        left = self.leftovers()
        if left:
            raise EnvironmentStateError(
                f"region {self.spec.name!r} already exists or a previous run left it behind: {', '.join(left)}; "
                "run `harness down` to remove it"
            )
        nodes, members = plan(self.spec, self.config.etcd.tls)
        data_root = (self.config.disk_data_dir if self.spec.data_on_disk else self.config.data_dir) / self.spec.name
        medium = filesystem_of(data_root)
        if self.spec.data_on_disk and medium in MEMORY_FILESYSTEMS:
            raise ConfigError(f"[region] data_on_disk needs a real filesystem, but {data_root} is on {medium}; "
                              "point [paths] disk_data_dir at one")
        log_root = self.config.state_dir / self.spec.name / "logs"
        state: dict[str, Any] = {
            "spec": asdict(self.spec),
            "owner_pid": os.getpid(),
            "holder_pid": rootless.namespace_holder(),
            "created": time.time(),
            "etcd": asdict(binary),
            "namespaces": [],
            "data_dir": str(data_root),
            "data_medium": medium,
            # The members' CA and certificates, made below (None: plain HTTP).
            "tls": str(self.config.state_dir / self.spec.name / "etcd-pki") if self.config.etcd.tls else None,
            "members": {},
            "faults": [],
        }
        # Record before creating anything: a crash mid-way must still be cleanable.
        write_state(self.path, state)
        try:
            group = cpu_group.create(self.spec.name)
            state["cpu_group"] = str(group) if group else None
            self._build_network(nodes, state)
            env = LocalEnvironment(self.config, state)
            self._start_members(env, binary, members, data_root, log_root)
            try:
                env.wait_healthy(self.config.timeouts.region_up)
            except WaitTimeout as e:
                dead = [m.name for m in members if not env.member_running(m.name)]
                logs = "".join(f"\n--- {name} log:\n{log_tail(env.state['members'][name]['log'], 15)}" for name in dead)
                raise EnvironmentStateError(f"region did not become healthy: {e}{logs}") from None
            env.update(lambda st: [rec.update(bootstrapped=True) for rec in st["members"].values()])
            if self.spec.backups:
                from harness.providers.local.backups import start_backups

                start_backups(env)
            return env
        except BaseException:
            self.down()
            raise

    def _build_network(self, nodes: tuple[Node, ...], state: dict[str, Any]) -> None:
        n = self.names
        t = self.config.timeouts.command

        def add_ns(name: str) -> None:
            state["namespaces"].append(name)
            write_state(self.path, state)
            netns.run(["ip", "netns", "add", name], timeout=t)
            netns.run(["ip", "-n", name, "link", "set", "lo", "up"], timeout=t)

        add_ns(n.router)
        netns.ns_run(n.router, ["sysctl", "-qw", "net.ipv4.ip_forward=1"], timeout=t)
        router_cmds = []
        for zone in self.spec.zones:
            br = n.bridge(zone)
            router_cmds += [
                f"link add {br} type bridge",
                f"addr add {n.gateway(zone)}/24 dev {br}",
                f"link set {br} up",
            ]
        attach: list[tuple[str, str, str, str]] = [
            (n.node_ns(node.name), f"v-{node.name}", node.address, node.zone) for node in nodes
        ] + [(n.client_ns(z), f"c-{z}", n.client_address(z), z) for z in self.spec.zones]
        for ns, veth, _, _ in attach:
            add_ns(ns)
        for ns, veth, _, zone in attach:
            router_cmds += [
                f"link add {veth} type veth peer name eth0 netns {ns}",
                f"link set {veth} master {n.bridge(zone)}",
                f"link set {veth} up",
            ]
        netns.run(["ip", "-n", n.router, "-batch", "-"], stdin="\n".join(router_cmds) + "\n", timeout=t)
        for ns, _, address, zone in attach:
            cmds = [f"addr add {address}/24 dev eth0", "link set eth0 up", f"route add default via {n.gateway(zone)}"]
            netns.run(["ip", "-n", ns, "-batch", "-"], stdin="\n".join(cmds) + "\n", timeout=t)

    def _start_members(
        self, env: LocalEnvironment, binary: etcdproc.EtcdBinary, members: tuple[Member, ...], data_root: Path, log_root: Path
    ) -> None:
        initial = ",".join(f"{m.name}={m.peer_url}" for m in members)
        token = f"{self.spec.name}-{int(time.time())}"
        serving = None
        if env.state["tls"]:
            pki = generate_etcd_pki(Path(env.state["tls"]), EtcdNames(tuple(n.address for n in env.nodes)))
            serving = EtcdServingTls(pki.ca, pki.server_cert, pki.server_key, pki.ca, pki.peer_cert, pki.peer_key)
        for m in members:
            if self.spec.member_disk_mib:
                disks.mount(data_root / m.name, self.spec.member_disk_mib, self.config.timeouts.command)
            args = etcdproc.member_args(binary, m, initial, data_root / m.name, self.config.etcd, token, serving)
            env.state["members"][m.name] = {
                "ns": self.names.node_ns(m.node),
                "args": args,
                "log": str(log_root / f"{m.name}.log"),
                "pid": None,
            }
            if self.spec.power_loss_fs:  # mounted by start_member, before the member starts
                env.state["members"][m.name]["fs"] = {"backing": str(data_root / "synced" / m.name),
                                                      "mount": str(data_root / m.name),
                                                      "log": str(log_root / f"{m.name}-fs.log"), "pid": None}
        write_state(self.path, env.state)
        for m in members:
            env.start_member(m.name)

    def left_to_heal(self) -> None:
        return None  # every fault effect lives in the region's namespaces, processes and cloud: `down` removes them

    def down(self) -> list[str]:
        """Remove processes, namespaces (with their nftables tables), data and the state file.

        Works from the state file, and also from namespace names alone when the state file is gone.
        Returns what it removed.
        """
        state = read_state(self.path)
        removed: list[str] = stop_watchdogs(state)
        work = self.config.state_dir / self.spec.name
        # The cloud's reconciler first: it must not restart nodes while they are taken down. (Only
        # imported when there is a cloud: the region itself needs no third-party package.)
        if (state or {}).get("cloud") or (work / "cloud").exists():
            from harness.providers.local.cloud.account import stop_cloud

            removed += stop_cloud(self.config, self.spec.name, state)
        removed += stop_for(self.config, self.spec.name, state)
        names = set(state.get("namespaces", []) if state else []) | {ns for ns in netns.list_netns() if self.names.owns(ns)}
        pids: set[int] = set()
        if state:
            # A recorded pid may have been recycled since: only an etcd still counts as the member.
            pids |= {rec["pid"] for rec in state.get("members", {}).values()
                     if rec.get("pid") and "etcd" in cmdline(rec["pid"])}
        for ns in names:
            pids |= set(netns.netns_pids(ns, with_pods=True))
        pids -= _ancestry()  # never this process or what runs it, whatever namespace it visits
        for pid in pids:
            if signal_pid(pid, signal.SIGKILL):
                removed.append(f"process {pid}")
        for pid in pids:
            reap(pid, 2.0)
        data = Path(state["data_dir"]) if state else self.config.data_dir / self.spec.name
        # The members' powerloss-fs helpers run in no namespace of the region: found by the data they serve.
        for pid in _helpers_serving(data):
            if signal_pid(pid, signal.SIGKILL):
                reap(pid, 2.0)
                removed.append(f"powerloss-fs process {pid}")
        group = cpu_group.remove(self.spec.name)  # its members are gone: it is empty
        if group:
            removed.append(group)
        for ns in sorted(names):
            # Deleting a namespace drops its interfaces and its nftables tables with it.
            netns.run(["ip", "netns", "del", ns], check=False, timeout=self.config.timeouts.command)
            removed.append(f"netns {ns}")
        # The uplink's peer was in the router and went with it; a half-made one may not have.
        netns.run(["ip", "link", "del", self.names.uplink], check=False, timeout=self.config.timeouts.command)
        kept = keep_logs(self.config, self.spec.name)
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
            removed.append(f"work directory {work}" + (f" (logs kept in {kept})" if kept else ""))
        removed += disks.unmount_under(data, self.config.timeouts.command)  # the members' own disks
        if data.exists():
            shutil.rmtree(data, ignore_errors=True)
            removed.append(f"data {data}")
        if self.path.exists():
            self.path.unlink()
            removed.append(f"state {self.path}")
        self.path.with_suffix(".lock").unlink(missing_ok=True)
        holder = state.get("holder_pid") if state else None
        if holder and holder != os.getpid():
            signal_pid(holder, signal.SIGKILL)
        # Last, when no process of the region is left to write one: a state file's writer killed
        # mid-write (a crashed reconciler, a harness the OOM killer took) left its half behind.
        removed += [f"half-written state {tmp}" for tmp in remove_partial(self.path)]
        return removed


MEMORY_FILESYSTEMS = ("tmpfs", "ramfs")


def filesystem_of(path: Path) -> str:
    """The type of the filesystem `path` is (or would be) on, from /proc/mounts (longest mount point)."""
    target = path.resolve()
    while not target.exists() and target != target.parent:
        target = target.parent
    best, kind = "", "unknown"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3:
            point = parts[1].replace("\\040", " ")
            if (str(target) == point or str(target).startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                best, kind = point, parts[2]
    return kind


