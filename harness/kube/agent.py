"""The node agent: what a kubelet does, for the pods that run for real on one local seed node.

One agent per node runs inside the node's network namespace (so it shares the node's fate on
the network) and looks after the pods bound to its node that carry AGENT_LABEL: etcd members
(with etcd-main's backup sidecar, BACKUP_CONTAINER, beside the member; a member whose volume was
lost is added back to its cluster before it starts, as etcd-druid does) and kube-apiservers of
the reference control plane, the harness's vantage pods (relays) and echo pods (the backends of
a Service's load balancer, harness.kube.echo), and every pod of etcd-druid's StatefulSets, each in
a sandbox of its own with its containers' real programs (harness.kube.druid_pods). It
gives each pod an address of its own in the node's zone subnet, starts the process, reports
phase, pod IP and readiness (from the process's own health endpoint), keeps a PortForward object
so that the node's kubelet API (kwok's) port-forwards to the pod, restarts a process that dies
after it was ready, reports a process that cannot start as a Failed pod with the reason, stops
the process gracefully when the pod is deleted and then confirms the deletion. It marks its Node
(AGENT_NODE_ANNOTATION). kwok keeps simulating every other pod.

    python -m harness.kube.agent --node zone-a-1 --zone zone-a --kubeconfig K --workdir W --logs L \\
        --volumes V --zone-subnets zone-a=10.77.1,zone-b=10.77.2 --pool 10.77.1.120-123 \\
        --host-ip 10.77.1.11 --etcd BIN --kube-apiserver BIN [--etcd-backup-restore BIN]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection

from harness.command_lines import EtcdClientTls, EtcdServingTls, etcd_command, kube_apiserver_command
from harness.errors import HarnessError
from harness.kube.controlplane import AGENT_LABEL, AGENT_NODE_ANNOTATION, ZONE_LABEL
from harness.kube import druid_pods, etcd_tls, sandbox
from harness.kube.pki import pki_files
from harness.kube.vantage import RELAY_PORT
from harness.processes import ProcessRecord, log_tail, spawn, terminate
from harness.files import replace_text

# Pods of a StatefulSet get a fixed address in their zone: <zone subnet>.<IP_BASE + ordinal>. A
# member pinned to its zone by its volume keeps its peer address wherever it is rescheduled.
# kube-apiserver pods: the zones whose etcd members it is given (default: every member).
ETCD_ZONES_ANNOTATION = "ha-harness/etcd-zones"
IP_BASE_ANNOTATION = "ha-harness/ip-base"
PKI_SECRET = "ha-harness-shoot-pki"
REQUEST_TIMEOUT = 2.0
# The reference pods' termination grace period (harness.reference.render) bounds a stop anyway.
STOP_GRACE_S = 5.0
# A pod gone from the API (deleted with grace 0: an undeploy, the pod garbage collection's force
# deletion after an outage) gets what a kubelet gives it: its minimum grace, 2 s.
FORCED_GRACE_S = 2.0
# etcd-main's backup sidecar (seed 003) in the member's pod: a container of this name runs
# harness.backup.sidecar with its args, beside the member, on the member's address.
BACKUP_CONTAINER = "backup-restore"
BACKUP_IMAGE = "europe-docker.pkg.dev/gardener-project/releases/gardener/etcdbrctl:v0.36.0"
BACKUP_PORT = 8080  # etcd-backup-restore's server port
BACKUP_SECRET = BACKUP_VOLUME = "etcd-backup"
REJOIN_MARKER = "rejoin.json"  # in a member's volume: the cluster it was added back to (Agent._rejoin)
# On an etcd StatefulSet: the id of the cluster its members formed (set once one is ready). Only a
# member of that cluster adds a member on an empty volume back: the fixed addresses of a namespace
# deployed anew may still answer for the old one's members for a few seconds.
CLUSTER_ID_ANNOTATION = "ha-harness/etcd-cluster-id"
# On the agent's Node: the namespaces whose pods it still runs processes for. A pod deleted at once
# (grace 0) leaves the API before its process has stopped; a caller that must know the processes
# are gone (an undeploy) waits for its namespace to leave this list.
RUNNING_ANNOTATION = "ha-harness/agent-running-namespaces"
ETCD_METRICS_PORT = 2381  # etcd's metrics listener (etcd_command's metrics_url), not a declared port
KINDS = ("etcd", "kube-apiserver", "relay", "echo")
DRUID = "druid"  # the kind of etcd-druid's pods (druid_pods.is_druid_pod), which carry no AGENT_LABEL
ECHO_PORT = 8080  # an echo pod's port when its container declares none


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Running:
    """One pod this agent runs: its process and what was last reported for it."""

    uid: str
    namespace: str
    name: str
    kind: str
    ip: str
    process: dict[str, Any]
    started: str
    ready: bool = False
    was_ready: bool = False
    restarts: int = 0
    reported: str = ""  # the last status reported, to patch only on change
    argv: list[str] = field(default_factory=list)
    forwarded: bool = False  # its PortForward (the kubelet API's port-forward to it) is in place
    sidecar: dict[str, Any] | None = None  # etcd-main's backup sidecar process, when the pod has one
    sidecar_argv: list[str] = field(default_factory=list)
    sidecar_restarts: int = 0
    cluster_recorded: bool = False  # its cluster's id is on its StatefulSet (CLUSTER_ID_ANNOTATION)
    pause: dict[str, Any] | None = None  # the process holding a sandboxed pod's network namespace (DRUID)
    hosts_refreshed: float = 0.0  # when a sandboxed pod's /etc/hosts was last written (monotonic)

    @property
    def record(self) -> ProcessRecord:
        return ProcessRecord.from_dict(self.process)

    @property
    def sidecar_record(self) -> ProcessRecord | None:
        return ProcessRecord.from_dict(self.sidecar) if self.sidecar else None

    @property
    def pause_record(self) -> ProcessRecord | None:
        return ProcessRecord.from_dict(self.pause) if self.pause else None


class StartError(Exception):
    """The pod cannot be started; the message says why (it becomes the pod's status)."""


class NotYet(Exception):
    """The pod cannot be started yet (peers unscheduled, address still held); retried."""


def ip_base(pod: Any) -> int | None:
    """Where the fixed addresses of a pod's (or pod template's) StatefulSet begin in its zone's
    subnet, member k at base + k: the renderer's annotation, or for etcd-druid's pods the base of
    the reference's member of the same etcd (druid_pods.address_base); None for other pods."""
    base = (pod.metadata.annotations or {}).get(IP_BASE_ANNOTATION)
    if base is not None:
        return int(base)
    return druid_pods.address_base(pod) if druid_pods.is_druid_pod(pod) else None


@dataclass(frozen=True)
class ClientUrl:
    """A member's client URL; `name` when the URL holds its name, not its `address` (etcd-druid's
    members: their serving certificates name no address)."""

    url: str
    address: str
    name: str | None = None


class Agent:
    def __init__(self, args: argparse.Namespace, api: Any) -> None:
        from kubernetes import client as k8s

        self.args = args
        self.core = k8s.CoreV1Api(api)
        self.apps = k8s.AppsV1Api(api)
        self.node = args.node
        self.workdir = Path(args.workdir)
        self.state_path = self.workdir / f"agent-{self.node}.json"
        self.subnets = dict(kv.split("=", 1) for kv in args.zone_subnets.split(","))
        first, last = args.pool.split("-")
        base = first.rsplit(".", 1)[0]
        self.pool = [f"{base}.{i}" for i in range(int(first.rsplit(".", 1)[1]), int(last) + 1)]
        self.running: dict[str, Running] = self._load()
        self.waiting: dict[str, str] = {}  # uid -> why it is not started yet (reported once)
        self.announced = False  # AGENT_NODE_ANNOTATION set on our Node
        self.running_announced: str | None = None  # RUNNING_ANNOTATION as last set on our Node
        self.stopping = False

    # -- state kept across agent restarts (a killed node comes back) --------------------------
    def _load(self) -> dict[str, Running]:
        try:
            raw = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return {}
        return {uid: Running(**r) for uid, r in raw.items()}

    def _save(self) -> None:
        replace_text(self.state_path, json.dumps({uid: asdict(r) for uid, r in self.running.items()}, indent=1), 0o644)

    # -- the loop -------------------------------------------------------------------------------
    def run(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        while not self.stopping:
            began = time.monotonic()
            try:
                self.reconcile()
                self._announce_running()
            except Exception as e:  # the API unreachable (a cut zone) is a normal state
                self.log(f"reconcile: {type(e).__name__}: {str(e)[:300]}")
            time.sleep(max(0.0, self.args.interval - (time.monotonic() - began)))
        # The seed goes down (ControlPlane.stop is the only sender of SIGTERM; a node fault kills
        # the agent): nothing is judged after it, and graceful stops of a whole cluster at once
        # wait on each other (a leader's etcd hands its leadership to a member that is stopping
        # too, and waits for it until killed; a kube-apiserver waits on its stopped etcd), which
        # took 5-6 s per node. Every pod is killed at once.
        self.stop_all(list(self.running), grace_s=0.0)

    def reconcile(self) -> None:
        if not self.announced:
            self.core.patch_node(self.node, {"metadata": {"annotations": {AGENT_NODE_ANNOTATION: ",".join(KINDS)}}},
                                 _request_timeout=REQUEST_TIMEOUT)
            self.announced = True
        pods = [p for selector in (AGENT_LABEL, "=".join(druid_pods.MANAGED_BY))
                for p in self.core.list_pod_for_all_namespaces(
                    field_selector=f"spec.nodeName={self.node}", label_selector=selector,
                    _request_timeout=REQUEST_TIMEOUT).items]
        seen = {p.metadata.uid for p in pods}
        gone = [u for u in self.running if u not in seen]
        for uid in gone:
            # Deleted while we could not see it (a cut zone, or force-deleted): a kubelet stops it.
            self.log(f"pod {self.running[uid].namespace}/{self.running[uid].name} is gone; stopping it")
        deleting = [p for p in pods if p.metadata.deletion_timestamp is not None]
        self.stop_all(gone + [p.metadata.uid for p in deleting if p.metadata.uid in self.running], forced=gone)
        for pod in deleting:
            self._confirm_deletion(pod)
        for pod in pods:
            uid = pod.metadata.uid
            if pod.metadata.deletion_timestamp is not None:
                continue
            elif uid not in self.running:
                if pod.status.phase not in ("Failed", "Succeeded"):
                    self._start(pod)
            else:
                self._check(pod, self.running[uid])

    def _announce_running(self) -> None:
        namespaces = ",".join(sorted({r.namespace for r in self.running.values()}))
        if namespaces != self.running_announced:
            self.core.patch_node(self.node, {"metadata": {"annotations": {RUNNING_ANNOTATION: namespaces or None}}},
                                 _request_timeout=REQUEST_TIMEOUT)
            self.running_announced = namespaces

    # -- starting -------------------------------------------------------------------------------
    def _start(self, pod: Any) -> None:
        try:
            r = self._launch_druid(pod) if druid_pods.is_druid_pod(pod) else self._launch(pod)
        except NotYet as e:
            if self.waiting.get(pod.metadata.uid) != str(e):
                self.waiting[pod.metadata.uid] = str(e)
                self.log(f"{pod.metadata.namespace}/{pod.metadata.name} waits: {e}")
                self._patch(pod.metadata.namespace, pod.metadata.name, {"conditions": [
                    {"type": "ContainersReady", "status": "False", "reason": "Waiting", "message": str(e)}]})
            return
        except StartError as e:
            self._fail(pod, str(e))
            return
        self.waiting.pop(pod.metadata.uid, None)
        self.running[r.uid] = r
        self._save()
        self.log(f"started {r.namespace}/{r.name} ({r.kind}) on {r.ip}, pid {r.record.pid}"
                 + (f", its {BACKUP_CONTAINER} pid {r.sidecar['pid']}" if r.sidecar else ""))
        self._report(r)
        self._forward(pod, r)

    def _launch(self, pod: Any) -> Running:
        kind = (pod.metadata.labels or {}).get(AGENT_LABEL, "")
        if kind not in KINDS:
            raise StartError(f"{AGENT_LABEL}={kind!r} is not a kind the agent runs; accepted: {', '.join(KINDS)}")
        binary = {"etcd": self.args.etcd, "kube-apiserver": self.args.kube_apiserver, "relay": sys.executable,
                  "echo": sys.executable}[kind]
        if not Path(binary).is_file():
            raise StartError(f"the {kind} binary {binary} does not exist")
        ip = self._address(pod)
        argv = {"etcd": self._etcd_argv, "kube-apiserver": self._apiserver_argv, "relay": self._relay_argv,
                "echo": self._echo_argv}[kind](pod, ip)
        backup = self._backup_argv(pod, ip) if kind == "etcd" else []
        self._claim(ip)
        record = self._spawn(pod, argv)
        try:
            sidecar = self._spawn_sidecar(pod.metadata.namespace, pod.metadata.name, backup) if backup else None
        except StartError:
            terminate(record, STOP_GRACE_S)  # a pod starts whole or not at all
            raise
        return Running(pod.metadata.uid, pod.metadata.namespace, pod.metadata.name, kind, ip, record.to_dict(), now(),
                       argv=argv, sidecar=sidecar, sidecar_argv=backup)

    def _launch_druid(self, pod: Any) -> Running:
        """An etcd-druid pod: its sandbox on a pod address, then its etcd and backup-restore
        containers in it (harness.kube.druid_pods)."""
        ns, name = pod.metadata.namespace, pod.metadata.name
        brctl = self.args.etcd_backup_restore
        if not brctl or not Path(brctl).is_file():
            raise StartError(f"etcd-druid's pods need etcd-backup-restore, and {brctl!r} is not a file "
                             "(`python -m harness.kube.backup_restore` builds it)")
        ip = self._address(pod)
        if _answers(ip):
            raise NotYet(f"address {ip} is still in use on the subnet")
        pause = self._sandbox(pod, ip)
        try:
            etcd, backup = self._druid_pod(pod).commands(pause)
            record = self._spawn(pod, etcd)
            try:
                sidecar = self._spawn_container(ns, name, BACKUP_CONTAINER, backup)
            except StartError:
                terminate(record, STOP_GRACE_S)
                raise
        except (StartError, druid_pods.PodError, OSError) as e:
            sandbox.destroy(pause, ip)
            raise StartError(str(e)) from None
        except Exception:
            sandbox.destroy(pause, ip)  # the API unreachable: the next reconcile starts the pod again
            raise
        return Running(pod.metadata.uid, ns, name, DRUID, ip, record.to_dict(), now(), argv=etcd,
                       sidecar=sidecar, sidecar_argv=backup, pause=pause.to_dict())

    def _druid_pod(self, pod: Any) -> druid_pods.DruidPod:
        return druid_pods.DruidPod(self.core, pod, self._pod_dir(pod.metadata.namespace, pod.metadata.name, pod.metadata.uid),
                                   druid_pods.Programs(self.args.etcd, self.args.etcd_backup_restore),
                                   lambda claim: self._claimed_volume(pod.metadata.namespace, claim))

    def _pod_dir(self, namespace: str, name: str, uid: str) -> Path:
        """A sandboxed pod's files (its volumes written out, its /etc/hosts): one pod's, not its name's."""
        return self.workdir / "pods" / f"{namespace}_{name}_{uid[:8]}"

    def _sandbox(self, pod: Any, ip: str) -> ProcessRecord:
        try:
            pause = sandbox.create(pod.metadata.name, ip, self._log(pod.metadata.namespace, pod.metadata.name, "pause"),
                                   self.args.netns or self.node)
        except sandbox.SandboxError as e:
            raise StartError(str(e)) from None
        announce(ip)  # the node answers for it now (proxy ARP): tell the subnet at once
        return pause

    def _log(self, namespace: str, name: str, container: str | None = None) -> Path:
        return Path(self.args.logs) / f"{namespace}_{name}{f'_{container}' if container else ''}.log"

    def _spawn_container(self, namespace: str, name: str, container: str, argv: list[str],
                         env: dict[str, str] | None = None) -> dict[str, Any]:
        """A pod's second container, logged beside its first."""
        try:
            _, record = spawn(f"{name}/{container}", argv, self._log(namespace, name, container), env=env)
        except (HarnessError, OSError) as e:
            raise StartError(f"{container}: {e}") from None
        return record.to_dict()

    def _address(self, pod: Any) -> str:
        base = ip_base(pod)
        if base is not None:
            ordinal = int(pod.metadata.name.rsplit("-", 1)[1])
            return f"{self.subnets[self.args.zone]}.{base + ordinal}"
        taken = {r.ip for r in self.running.values()}
        free = [ip for ip in self.pool if ip not in taken]
        if not free:
            raise StartError(f"node {self.node} has no pod address left (pool {self.args.pool})")
        return free[0]

    def _claim(self, ip: str) -> None:
        """Add the pod's address to the node, once nobody else on the subnet answers for it."""
        if f" {ip}/" in subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", "eth0"], capture_output=True, text=True).stdout:
            return  # ours already (a restart on the same node)
        if _answers(ip):
            # Still held by a node that has not let go of the pod yet (frozen, or not yet told).
            raise NotYet(f"address {ip} is still in use on the subnet")
        added = subprocess.run(["ip", "addr", "add", f"{ip}/24", "dev", "eth0"], capture_output=True, text=True)
        if added.returncode != 0:
            raise StartError(f"cannot add the pod address {ip}: {added.stderr.strip()}")
        # A member's address may have lived on another node a moment ago: tell the subnet at
        # once, or its neighbours keep sending to the old node until their ARP entries expire.
        announce(ip)

    def _release(self, ip: str) -> None:
        subprocess.run(["ip", "addr", "del", f"{ip}/24", "dev", "eth0"], capture_output=True)

    def _spawn(self, pod: Any, argv: list[str]) -> ProcessRecord:
        try:
            _, record = spawn(pod.metadata.name, argv, self._log(pod.metadata.namespace, pod.metadata.name))
        except HarnessError as e:  # the binary cannot be executed
            raise StartError(str(e)) from None
        return record

    # -- what each kind runs ----------------------------------------------------------------------
    def _relay_argv(self, pod: Any, ip: str) -> list[str]:
        """A vantage pod (harness.kube.vantage): the CONNECT relay on the pod's address."""
        return [sys.executable, "-m", "harness.kube.egress_proxy", f"--listen={ip}:{RELAY_PORT}"]

    def _echo_argv(self, pod: Any, ip: str) -> list[str]:
        """A load balancer's backend (harness.kube.echo) on the pod's address and declared port."""
        return [sys.executable, "-m", "harness.kube.echo", f"--listen={ip}:{_echo_port(pod)}",
                f"--name={pod.metadata.name}"]

    def _etcd_argv(self, pod: Any, ip: str) -> list[str]:
        ns, name = pod.metadata.namespace, pod.metadata.name
        sts = name.rsplit("-", 1)[0]
        spec = self.apps.read_namespaced_stateful_set(sts, ns, _request_timeout=REQUEST_TIMEOUT).spec
        base = int(pod.metadata.annotations[IP_BASE_ANNOTATION])
        tls = self._serving_tls(pod)
        scheme = "https" if tls else "http"
        peers = []
        for k in range(spec.replicas):
            zone = self._zone_of(ns, f"{sts}-{k}")
            if zone is None:
                raise NotYet(f"member {sts}-{k} is not scheduled yet, so its address is not known")
            peers.append(f"{sts}-{k}={scheme}://{self.subnets[zone]}.{base + k}:2380")
        volume = self._volume(pod)
        argv = etcd_command(self.args.etcd, name, volume / name, f"{scheme}://{ip}:2379",
                            f"{scheme}://{ip}:2380", ",".join(peers), token=f"{ns}-{sts}",
                            metrics_url=f"http://{ip}:{ETCD_METRICS_PORT}", tls=tls)
        if (volume / name / "member").exists():
            return argv
        current = self._rejoin(pod, f"{scheme}://{ip}:2380", [p.split("=", 1)[1] for p in peers], volume)
        if current is None:
            return argv
        return [a for a in argv if not a.startswith(("--initial-cluster-state=", "--initial-cluster="))] + [
            "--initial-cluster-state=existing", f"--initial-cluster={current}"]

    def _rejoin(self, pod: Any, peer_url: str, peer_urls: list[str], volume: Path) -> str | None:
        """A member on an empty volume in a cluster that already knows it as started (its volume
        was lost): removed and added again through a member that answers, then started to join the
        cluster as it is now, as etcd-druid's backup sidecar does; the --initial-cluster to start
        with, or None to start as the initial cluster says (a first start, or no member answers).
        Kept in the volume: a restart before the member caught up joins again the same way."""
        from harness.etcd_gateway import EtcdClient, EtcdRequestError

        marker = volume / REJOIN_MARKER
        if marker.exists():
            return str(json.loads(marker.read_text())["initial_cluster"])
        ns, name = pod.metadata.namespace, pod.metadata.name
        sts = self.apps.read_namespaced_stateful_set(name.rsplit("-", 1)[0], ns, _request_timeout=REQUEST_TIMEOUT)
        cluster = (sts.metadata.annotations or {}).get(CLUSTER_ID_ANNOTATION)
        if cluster is None:
            return None  # its cluster never formed: a first start, as the initial cluster says
        client = None
        for url in (u.replace(":2380", ":2379") for u in peer_urls if u != peer_url):
            candidate = EtcdClient(url, None, 1.0, self._client_tls(pod))
            try:
                answer = candidate.call("/v3/cluster/member/list", {})
            except (EtcdRequestError, OSError):
                candidate.close()
                continue
            if str(answer.get("header", {}).get("cluster_id")) != cluster:
                candidate.close()  # a member of another cluster (an earlier deployment) on that address
                continue
            members, client = [{**m, "ID": int(m["ID"])} for m in answer.get("members") or []], candidate
            break
        if client is None:
            raise NotYet(f"its volume is empty and no member of its cluster {cluster} answers to add it back")
        try:
            mine = next((m for m in members if peer_url in m.get("peerURLs", [])), None)
            if mine is not None and not mine.get("name"):
                return None  # never started: it joins with the initial cluster
            try:  # refused without quorum (then only a restore brings the cluster back), and as an
                # "unhealthy cluster" for etcd's 5 s after the removal
                if mine is not None:
                    client.remove_member(mine["ID"])
                    self.log(f"{ns}/{name} is on an empty volume and the cluster knew it: removed member {mine['ID']:x}")
                added = client.add_member([peer_url])
            except EtcdRequestError as e:
                raise NotYet(f"its volume is empty and the cluster knows it: waiting to add it back ({e})") from None
            current = ",".join(f"{m.get('name') or name}={m['peerURLs'][0]}" for m in client.members())
        finally:
            client.close()
        marker.write_text(json.dumps({"initial_cluster": current, "added": added}))
        self.log(f"{ns}/{name} added back as member {added:x}; it joins {current}")
        return current

    def _record_cluster(self, pod: Any, r: Running) -> None:
        """Its cluster's id on its StatefulSet, from the ready member (a restore makes a new one)."""
        from harness.etcd_gateway import EtcdClient, EtcdRequestError

        scheme = "https" if r.argv and any(a.startswith("--listen-client-urls=https") for a in r.argv) else "http"
        client = EtcdClient(f"{scheme}://{r.ip}:2379", None, 1.0, self._client_tls(pod))
        try:
            cluster = str(client.call("/v3/maintenance/status", {})["header"]["cluster_id"])
            sts = r.name.rsplit("-", 1)[0]
            held = self.apps.read_namespaced_stateful_set(sts, r.namespace, _request_timeout=REQUEST_TIMEOUT)
            if (held.metadata.annotations or {}).get(CLUSTER_ID_ANNOTATION) != cluster:
                self.apps.patch_namespaced_stateful_set(sts, r.namespace, {"metadata": {"annotations": {
                    CLUSTER_ID_ANNOTATION: cluster}}}, _request_timeout=REQUEST_TIMEOUT)
        except (EtcdRequestError, OSError, KeyError) as e:
            self.log(f"{r.namespace}/{r.name}: its cluster's id not recorded yet: {e}")
            return
        finally:
            client.close()
        r.cluster_recorded = True
        self._save()

    def _client_tls(self, pod: Any) -> Any:
        """The member's client certificate (etcd-druid's, for its sidecar), or None for plain HTTP."""
        from harness.topology import EtcdTls

        files = self._mounted(pod, {etcd_tls.CLIENT_CA_VOLUME: etcd_tls.CA_SECRET,
                                    etcd_tls.CLIENT_TLS_VOLUME: etcd_tls.CLIENT_SECRET})
        if files is None:
            return None
        cert = files[etcd_tls.CLIENT_TLS_VOLUME]
        return EtcdTls(etcd_tls.ca_file(files[etcd_tls.CLIENT_CA_VOLUME], etcd_tls.CLIENT_CA_VOLUME), cert["tls.crt"],
                       cert["tls.key"], etcd_tls.service_name(pod.metadata.name.rsplit("-", 1)[0], pod.metadata.namespace))

    def _secrets_dir(self, namespace: str, name: str) -> Path:
        return self.workdir / "pods" / f"{namespace}_{name}.secrets"

    def _backup_argv(self, pod: Any, ip: str) -> list[str]:
        """etcd-main's backup sidecar (BACKUP_CONTAINER), as etcd-backup-restore runs beside a
        member: the member's client URL and certificate, the store of the mounted backup Secret,
        and the container's own arguments (the periods; `--store-prefix` names the store's prefix)."""
        from harness.backup.store import StoreSpec

        container = next((c for c in pod.spec.containers if c.name == BACKUP_CONTAINER), None)
        if container is None:
            return []
        if not self.args.etcdutl or not Path(self.args.etcdutl).is_file():
            raise StartError(f"the {BACKUP_CONTAINER} container needs etcdutl, and {self.args.etcdutl!r} is not a file")
        args = list(container.args or [])
        prefixes = [a.split("=", 1)[1] for a in args if a.startswith("--store-prefix=")]
        if len(prefixes) != 1:
            raise StartError(f"the {BACKUP_CONTAINER} container needs one --store-prefix=PREFIX among its args: {args}")
        stored = self._mounted(pod, {BACKUP_VOLUME: BACKUP_SECRET})
        if stored is None:
            raise StartError(f"the {BACKUP_CONTAINER} container needs the Secret volume {BACKUP_VOLUME!r}")
        try:
            store = StoreSpec.from_secret({k: p.read_text() for k, p in stored[BACKUP_VOLUME].items()}, prefixes[0])
        except HarnessError as e:
            raise StartError(str(e)) from None
        ns, name = pod.metadata.namespace, pod.metadata.name
        store_file = self._secrets_dir(ns, name) / "backup-store.json"
        store_file.write_text(json.dumps(store.public()))
        client = self._client_tls(pod)
        tls = [] if client is None else [f"--cacert={client.ca}", f"--cert={client.cert}", f"--key={client.key}",
                                         f"--server-name={client.server_name}"]
        return [sys.executable, "-m", "harness.backup.sidecar", f"--member={'https' if tls else 'http'}://{ip}:2379",
                f"--store={store_file}", f"--etcdutl={self.args.etcdutl}",
                f"--workdir={self.workdir / 'pods' / f'{ns}_{name}.backup'}", f"--listen={ip}:{BACKUP_PORT}",
                *tls, *(a for a in args if not a.startswith("--store-prefix="))]

    def _spawn_sidecar(self, namespace: str, name: str, argv: list[str]) -> dict[str, Any]:
        """The sidecar with the store's key pair from the mounted Secret in its environment only."""
        keys = self._secrets_dir(namespace, name) / BACKUP_VOLUME
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        try:
            env |= {"AWS_ACCESS_KEY_ID": (keys / "accessKeyID").read_text(),
                    "AWS_SECRET_ACCESS_KEY": (keys / "secretAccessKey").read_text()}
        except OSError as e:
            raise StartError(f"{BACKUP_CONTAINER}: {e}") from None
        return self._spawn_container(namespace, name, BACKUP_CONTAINER, argv, env)

    def _mounted(self, pod: Any, volumes: dict[str, str]) -> dict[str, dict[str, Path]] | None:
        """The pod's Secret volumes named in `volumes`, written out as a kubelet mounts them
        (volume -> key -> file); None when the pod mounts none of them."""
        by_volume = etcd_tls.mounted(pod.spec)
        wanted = [v for v in volumes if v in by_volume]
        if not wanted:
            return None
        if len(wanted) < len(volumes):
            raise StartError(f"the pod mounts {', '.join(wanted)} but not {', '.join(v for v in volumes if v not in wanted)}")
        base = self._secrets_dir(pod.metadata.namespace, pod.metadata.name)
        return {v: etcd_tls.write_secret(self.core, pod.metadata.namespace, by_volume[v], base / v, REQUEST_TIMEOUT)
                for v in wanted}

    def _serving_tls(self, pod: Any) -> EtcdServingTls | None:
        files = self._mounted(pod, {v: s for v, s in etcd_tls.MEMBER_VOLUMES.items() if v != etcd_tls.CLIENT_TLS_VOLUME})
        if files is None:
            return None
        server, peer = files[etcd_tls.SERVER_TLS_VOLUME], files[etcd_tls.PEER_TLS_VOLUME]
        return EtcdServingTls(etcd_tls.ca_file(files[etcd_tls.CLIENT_CA_VOLUME], etcd_tls.CLIENT_CA_VOLUME),
                              server["tls.crt"], server["tls.key"],
                              etcd_tls.ca_file(files[etcd_tls.PEER_CA_VOLUME], etcd_tls.PEER_CA_VOLUME),
                              peer["tls.crt"], peer["tls.key"])

    def _zone_of(self, namespace: str, pod_name: str) -> str | None:
        """A member's zone: its node's; for a member without a node, its volume's (the volume pins
        the zone it will run in); or the control plane's only zone (single-zone shoots)."""
        from kubernetes.client.exceptions import ApiException

        try:
            pod = self.core.read_namespaced_pod(pod_name, namespace, _request_timeout=REQUEST_TIMEOUT)
            if pod.spec.node_name:
                node = self.core.read_node(pod.spec.node_name, _request_timeout=REQUEST_TIMEOUT)
                return node.metadata.labels.get(ZONE_LABEL)
        except ApiException as e:
            if e.status != 404:
                raise
        zone = self._volume_zone(namespace, pod_name)
        if zone is not None:
            return zone
        zones = (self.core.read_namespace(namespace, _request_timeout=REQUEST_TIMEOUT).metadata.annotations or {}).get(
            "high-availability-config.resources.gardener.cloud/zones", "")
        return zones if zones and "," not in zones else None

    def _volume_zone(self, namespace: str, pod_name: str) -> str | None:
        """The zone in the node affinity of the volume bound to a member's claim (`<template>-<pod>`)."""
        claims = self.core.list_namespaced_persistent_volume_claim(namespace, _request_timeout=REQUEST_TIMEOUT).items
        for pvc in claims:
            if not pvc.metadata.name.endswith(f"-{pod_name}") or not pvc.spec.volume_name:
                continue
            pv = self.core.read_persistent_volume(pvc.spec.volume_name, _request_timeout=REQUEST_TIMEOUT)
            terms = pv.spec.node_affinity.required.node_selector_terms if pv.spec.node_affinity else []
            for term in terms:
                for e in term.match_expressions or []:
                    if e.key == ZONE_LABEL and e.operator == "In" and len(e.values or []) == 1:
                        return e.values[0]
        return None

    def _unschedulable(self, namespace: str, pod_name: str) -> bool:
        """Has the scheduler given up on the pod for now (PodScheduled False, Unschedulable)?"""
        from kubernetes.client.exceptions import ApiException

        try:
            pod = self.core.read_namespaced_pod(pod_name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return any(c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                   for c in pod.status.conditions or [])

    def _volume(self, pod: Any) -> Path:
        claims = [v.persistent_volume_claim.claim_name for v in pod.spec.volumes or [] if v.persistent_volume_claim]
        if not claims:
            raise StartError("an etcd member needs its persistent volume claim")
        return self._claimed_volume(pod.metadata.namespace, claims[0])

    def _claimed_volume(self, namespace: str, claim: str) -> Path:
        """The node's directory of the volume bound to the claim (NotYet while none is)."""
        pvc = self.core.read_namespaced_persistent_volume_claim(claim, namespace, _request_timeout=REQUEST_TIMEOUT)
        if not pvc.spec.volume_name:
            raise NotYet(f"claim {claim} is not bound to a volume yet")
        # Keyed by the volume's uid: a volume made anew under an old name starts empty.
        pv = self.core.read_persistent_volume(pvc.spec.volume_name, _request_timeout=REQUEST_TIMEOUT)
        path = volume_path(Path(self.args.volumes), pv.metadata.name, pv.metadata.uid)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _apiserver_argv(self, pod: Any, ip: str) -> list[str]:
        ns = pod.metadata.namespace
        pki = self.workdir / "pods" / f"{ns}_{pod.metadata.name}.pki"
        etcd_tls.write_secret(self.core, ns, PKI_SECRET, pki, REQUEST_TIMEOUT)
        mounted = self._mounted(pod, etcd_tls.APISERVER_VOLUMES)
        client = None
        if mounted is not None:
            ca, cert = mounted["etcd-ca"], mounted["etcd-client-tls"]
            client = EtcdClientTls(etcd_tls.ca_file(ca, "etcd-ca"), cert["tls.crt"], cert["tls.key"])
        # Every member's client URL, as etcd-main's client Service would reach them all: an
        # apiserver started with the members known so far keeps that list for its lifetime, and
        # loses etcd when those few are cut off while the others are fine.
        # A reference rendered to reproduce a misconfiguration names the zones whose members its
        # apiservers know (the rest are left out, as a list taken too early leaves them out).
        only = (pod.metadata.annotations or {}).get(ETCD_ZONES_ANNOTATION)
        zones = set(only.split(",")) if only else None
        main, events = self._client_members(ns, "etcd-main", zones), self._client_members(ns, "etcd-events", zones)
        if not main:
            raise NotYet("no etcd-main member is scheduled yet")
        argv = kube_apiserver_command(self.args.kube_apiserver, [m.url for m in main], ip, 443, pki_files(pki),
                                      pki / "certs", "10.0.0.0/24", events_servers=[m.url for m in events],
                                      etcd_tls=client)
        named = [(m.address, [m.name]) for m in main + events if m.name]
        if not named:
            return argv
        # etcd-druid's members are dialled by name, as their serving certificates name them (its
        # peer Service's pod names): the apiserver gets a mount namespace with an /etc/hosts of them
        # (cluster DNS's answers; their addresses are fixed, harness.kube.druid_pods.address_base).
        files = self._pod_dir(ns, pod.metadata.name, pod.metadata.uid)
        files.mkdir(parents=True, exist_ok=True)
        sandbox.write_hosts(files / "hosts", named)
        return sandbox.mount_argv(files, [sandbox.Bind(str(files / "hosts"), "/etc/hosts", True)],
                                  {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, argv)

    def _client_urls(self, namespace: str, sts: str, zones: set[str] | None = None) -> list[str]:
        return [m.url for m in self._client_members(namespace, sts, zones)]

    def _client_members(self, namespace: str, sts: str, zones: set[str] | None = None) -> list[ClientUrl]:
        """Client URLs of every member of a StatefulSet (only those in `zones`, when given); a member
        whose zone is not known yet is waited for, unless the scheduler has given up on it (a member
        that cannot be placed at all must not keep the apiservers down)."""
        from kubernetes.client.exceptions import ApiException

        try:
            spec = self.apps.read_namespaced_stateful_set(sts, namespace, _request_timeout=REQUEST_TIMEOUT).spec
        except ApiException as e:
            if e.status == 404:
                return []
            raise
        template = spec.template
        base = ip_base(template)
        if base is None:
            return []
        druid = druid_pods.is_druid_pod(template)
        scheme = "https" if etcd_tls.client_side_volumes(etcd_tls.mounted(template.spec)) else "http"
        urls: list[ClientUrl] = []
        for k in range(spec.replicas or 0):
            zone = self._zone_of(namespace, f"{sts}-{k}")
            if zone is not None:
                if zones is None or zone in zones:
                    address = f"{self.subnets[zone]}.{base + k}"
                    name = f"{sts}-{k}.{spec.service_name}.{namespace}.svc" if druid else None
                    urls.append(ClientUrl(f"{scheme}://{name or address}:2379", address, name))
            elif not self._unschedulable(namespace, f"{sts}-{k}"):
                raise NotYet(f"member {sts}-{k} is not scheduled yet, so its address is not known")
        return urls

    # -- health, restarts, status ---------------------------------------------------------------
    def _check(self, pod: Any, r: Running) -> None:
        if r.kind == DRUID and not self._sandbox_alive(pod, r):
            return
        if not r.record.alive():
            tail = log_tail(r.record.log, 5)
            if not r.was_ready:
                self.stop(r.uid)
                self._fail(pod, f"{r.kind} exited before it was ever ready; log {r.record.log} ends with:\n{tail}")
                return
            # A container that dies after running is restarted, as restartPolicy Always says
            # (also after the node itself was killed and its addresses went with it).
            self.log(f"{r.namespace}/{r.name} exited; restarting it")
            try:
                if r.kind != DRUID:  # a sandboxed pod's address is its sandbox's
                    self._claim(r.ip)
                r.process = self._spawn(pod, r.argv).to_dict()
            except NotYet as e:
                self.log(f"{r.namespace}/{r.name} waits: {e}")
                return
            except StartError as e:
                self.stop(r.uid)
                self._fail(pod, str(e))
                return
            r.restarts += 1
            r.ready = False
            self._save()
        sidecar = r.sidecar_record
        if sidecar is not None and not sidecar.alive():
            # Restarted like any container; what it had not uploaded died with it.
            self.log(f"{r.namespace}/{r.name}'s {BACKUP_CONTAINER} exited; restarting it")
            try:
                r.sidecar = (self._spawn_container(r.namespace, r.name, BACKUP_CONTAINER, r.sidecar_argv) if r.kind == DRUID
                             else self._spawn_sidecar(r.namespace, r.name, r.sidecar_argv))
                r.sidecar_restarts += 1
            except StartError as e:
                self.log(f"{r.namespace}/{r.name}'s {BACKUP_CONTAINER} cannot start: {e}")
            self._save()
        if r.kind == DRUID:
            druid = self._druid_pod(pod)
            url = druid.readiness_url(r.ip)
            r.ready = url is None or druid_pods.probe_ready(url)
            if time.monotonic() - r.hosts_refreshed > druid_pods.HOSTS_REFRESH_S:
                druid.refresh_hosts()
                r.hosts_refreshed = time.monotonic()
        else:
            r.ready = _healthy(r.kind, r.ip, _echo_port(pod) if r.kind == "echo" else RELAY_PORT)
        r.was_ready = r.was_ready or r.ready
        if r.kind == "etcd" and r.ready and not r.cluster_recorded:
            self._record_cluster(pod, r)
        self._report(r, pod)
        if not r.forwarded:
            self._forward(pod, r)

    def _sandbox_alive(self, pod: Any, r: Running) -> bool:
        """A sandboxed pod whose pause process is gone (its node was killed) lost its network: its
        containers are stopped and the pod started again in a new sandbox, as a kubelet recreates a
        pod sandbox. False while that cannot be done yet."""
        pause = r.pause_record
        if pause is not None and pause.alive():
            return True
        self.log(f"{r.namespace}/{r.name}'s sandbox is gone; starting the pod in a new one")
        for record in (r.record, r.sidecar_record):
            if record is not None:
                terminate(record, 0.0)
        sandbox.release_address(r.ip)  # the dead sandbox's veth outlives it until its namespace is freed
        try:
            new = self._sandbox(pod, r.ip)
            try:
                r.argv, r.sidecar_argv = self._druid_pod(pod).commands(new)
                r.process = self._spawn(pod, r.argv).to_dict()
                r.sidecar = self._spawn_container(r.namespace, r.name, BACKUP_CONTAINER, r.sidecar_argv)
            except Exception:
                sandbox.destroy(new, r.ip)
                raise
        except Exception as e:  # noqa: BLE001 (retried at the next check, whatever it was)
            self.log(f"{r.namespace}/{r.name} cannot be started in a new sandbox yet: {type(e).__name__}: {str(e)[:300]}")
            r.pause = None
            self._save()
            return False
        r.pause, r.restarts, r.ready = new.to_dict(), r.restarts + 1, False
        self._save()
        return True

    def _forward(self, pod: Any, r: Running) -> None:
        """Let the node's kubelet API (kwok's) port-forward to the pod's ports on its address, as a
        kubelet does for a container: a PortForward object of the pod's name, owned by the pod so
        that it goes with it. One left by an earlier pod of the same name is replaced."""
        from kubernetes import client as k8s
        from kubernetes.client.exceptions import ApiException

        ports = sorted({p.container_port for c in pod.spec.containers for p in (c.ports or [])}
                       | ({ETCD_METRICS_PORT} if r.kind == "etcd" else set()))
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
            "metadata": {"name": r.name, "namespace": r.namespace, "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": r.name, "uid": r.uid}]},
            "spec": {"forwards": [{"ports": [p], "target": {"address": r.ip, "port": p}} for p in ports]},
        }
        api = k8s.CustomObjectsApi(self.core.api_client)
        where = ("kwok.x-k8s.io", "v1alpha1", r.namespace, "portforwards")
        try:
            try:
                api.create_namespaced_custom_object(*where, body, _request_timeout=REQUEST_TIMEOUT)
            except ApiException as e:
                if e.status != 409:
                    raise
                api.delete_namespaced_custom_object(*where, r.name, _request_timeout=REQUEST_TIMEOUT)
                api.create_namespaced_custom_object(*where, body, _request_timeout=REQUEST_TIMEOUT)
        except Exception as e:  # no API now (a cut zone): the next check tries again
            self.log(f"port-forward to {r.namespace}/{r.name} not set up yet: {type(e).__name__}: {str(e)[:200]}")
            return
        r.forwarded = True
        self._save()

    def _report(self, r: Running, pod: Any = None) -> None:
        """Patch the pod's status when it differs from what was last reported or from what the API
        holds (`pod`, as listed): the node controller marks the pods of a NotReady node not Ready,
        and a kubelet back on the network reports them again."""
        key = json.dumps(["True" if r.ready else "False", r.ip, r.restarts + r.sidecar_restarts])
        if key != r.reported or (pod is not None and key != json.dumps(_held(pod))):
            self._patch(r.namespace, r.name, pod_status(r, self.args.host_ip))
            r.reported = key
            self._save()

    def _patch(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.patch_namespaced_pod_status(name, namespace, {"status": status}, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as e:
            if e.status != 404:
                raise

    def _fail(self, pod: Any, message: str) -> None:
        """A pod that cannot start ends Failed, with the reason in its status and an Event."""
        from kubernetes import client as k8s

        self.log(f"{pod.metadata.namespace}/{pod.metadata.name} failed: {message}")
        event = k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(generate_name=f"{pod.metadata.name}.", namespace=pod.metadata.namespace),
            involved_object=k8s.V1ObjectReference(kind="Pod", name=pod.metadata.name, namespace=pod.metadata.namespace,
                                                  uid=pod.metadata.uid),
            reason="FailedToStart", message=message[:1000], type="Warning",
            source=k8s.V1EventSource(component="ha-harness-agent", host=self.node),
            first_timestamp=dt.datetime.now(dt.timezone.utc), last_timestamp=dt.datetime.now(dt.timezone.utc), count=1,
        )
        # The Event first: whoever sees the pod Failed finds why among its events.
        self.core.create_namespaced_event(pod.metadata.namespace, event, _request_timeout=REQUEST_TIMEOUT)
        self._patch(pod.metadata.namespace, pod.metadata.name, {"phase": "Failed", "reason": "StartError",
                                                                "message": message[:1000]})

    # -- stopping -------------------------------------------------------------------------------
    def stop(self, uid: str) -> None:
        self.stop_all([uid])

    def stop_all(self, uids: list[str], grace_s: float = STOP_GRACE_S, forced: Collection[str] = ()) -> None:
        """Stop the pods' processes together (SIGTERM, SIGKILL after `grace_s`; FORCED_GRACE_S for
        those `forced`: gone from the API), then give their addresses back."""
        stopping = [(uid, r) for uid in uids if (r := self.running.pop(uid, None)) is not None]
        threads = [threading.Thread(target=terminate, args=(rec, min(grace_s, FORCED_GRACE_S) if uid in forced else grace_s))
                   for uid, r in stopping for rec in (r.record, r.sidecar_record) if rec is not None]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for _, r in stopping:  # a sandbox goes after its containers: its network with it
            if r.pause_record is not None:
                sandbox.destroy(r.pause_record, r.ip)
            # a sandboxed pod's files; a kube-apiserver's /etc/hosts for etcd-druid's members
            shutil.rmtree(self._pod_dir(r.namespace, r.name, r.uid), ignore_errors=True)
        for _, r in stopping:
            self._release(r.ip)
            self.log(f"stopped {r.namespace}/{r.name} and released {r.ip}")
        if stopping:
            self._save()

    def _confirm_deletion(self, pod: Any) -> None:
        """Once its process is gone, remove the pod for good, as a kubelet does."""
        from kubernetes import client as k8s
        from kubernetes.client.exceptions import ApiException

        try:
            self.core.delete_namespaced_pod(
                pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0,
                body=k8s.V1DeleteOptions(grace_period_seconds=0, preconditions=k8s.V1Preconditions(uid=pod.metadata.uid)),
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiException as e:
            if e.status not in (404, 409):
                raise

    def log(self, message: str) -> None:
        print(f"{now()} agent {self.node}: {message}", flush=True)


def volume_path(volumes: Path, name: str, uid: str) -> Path:
    """The directory backing a PersistentVolume on the local seed, keyed by its uid: a volume made
    anew under an old name starts empty."""
    return volumes / f"{name}-{uid}"


def pod_status(r: Running, host_ip: str) -> dict[str, Any]:
    """The status a kubelet reports: phase Running once the process started (the container
    started); Ready, the pod's condition and its container's `ready`, only while the process's
    health endpoint says it serves."""
    ready = "True" if r.ready else "False"
    return {
        "phase": "Running",
        "hostIP": host_ip,
        "podIP": r.ip,
        "podIPs": [{"ip": r.ip}],
        "startTime": r.started,
        "conditions": [{"type": t, "status": s, "lastTransitionTime": now()} for t, s in
                       (("Initialized", "True"), ("ContainersReady", ready), ("Ready", ready))],
        "containerStatuses": [{
            "name": "etcd" if r.kind in ("etcd", DRUID) else r.kind, "ready": r.ready, "started": True,
            "restartCount": r.restarts, "image": "harness.kube.etcd_wrapper" if r.kind == DRUID else r.kind, "imageID": "",
            "state": {"running": {"startedAt": r.started}},
        }] + ([{
            "name": BACKUP_CONTAINER, "ready": True, "started": True, "restartCount": r.sidecar_restarts,
            "image": "etcdbrctl" if r.kind == DRUID else "harness.backup.sidecar", "imageID": "", "state": {"running": {"startedAt": r.started}},
        }] if r.sidecar else []),
    }


def _held(pod: Any) -> list[Any]:
    """[Ready status, pod IP, restarts] as the API holds them for `pod` (the shape of Running.reported)."""
    status = pod.status
    ready = next((c.status for c in status.conditions or [] if c.type == "Ready"), "False")
    restarts = sum(c.restart_count or 0 for c in status.container_statuses or [])
    return [ready, status.pod_ip, restarts]


def announce(ip: str, iface: str = "eth0") -> None:
    """Gratuitous ARP for `ip` from this node's interface (what a CNI plugin sends for a new pod)."""
    link = subprocess.run(["ip", "-o", "link", "show", iface], capture_output=True, text=True).stdout.split()
    mac = bytes.fromhex(link[link.index("link/ether") + 1].replace(":", ""))
    addr = socket.inet_aton(ip)
    arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, addr, b"\x00" * 6, addr)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for _ in range(2):
            s.send(b"\xff" * 6 + mac + struct.pack("!H", 0x0806) + arp)


def _answers(ip: str, port: int = 2380) -> bool:
    """Does some host on the subnet hold `ip`? A refused or accepted connection says yes."""
    try:
        with socket.create_connection((ip, port), timeout=0.5):
            return True
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def _echo_port(pod: Any) -> int:
    return next((p.container_port for c in pod.spec.containers for p in (c.ports or [])), ECHO_PORT)


def _healthy(kind: str, ip: str, port: int = RELAY_PORT) -> bool:
    """The process's own health: etcd's /health, kube-apiserver's /readyz; a relay's or an echo's
    port accepting connections."""
    if kind in ("relay", "echo"):
        try:
            socket.create_connection((ip, port), timeout=0.5).close()
            return True
        except OSError:
            return False
    if kind == "etcd":
        url, context = f"http://{ip}:{ETCD_METRICS_PORT}/health", None  # plain HTTP also when clients need TLS
    else:
        url, context = f"https://{ip}:443/readyz", ssl._create_unverified_context()
    try:
        with urllib.request.urlopen(url, timeout=0.5, context=context) as resp:
            body = resp.read().decode(errors="replace")
    except OSError:
        return False
    return '"health":"true"' in body if kind == "etcd" else body.strip() == "ok"


def _connect(kubeconfig: str) -> Any:
    """A client that fails fast: from a cut-off zone every call times out, and the loop retries."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    configuration = k8s.Configuration()
    k8s_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
    configuration.retries = 0
    return k8s.ApiClient(configuration)


def main(argv: list[str] | None = None, connect: Callable[[str], Any] | None = None) -> int:
    p = argparse.ArgumentParser(prog="harness.kube.agent", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("node", "zone", "kubeconfig", "workdir", "logs", "volumes", "zone-subnets", "pool", "host-ip", "etcd",
                 "kube-apiserver"):
        p.add_argument(f"--{name}", required=True)
    p.add_argument("--etcdutl", help="etcdutl, for the backup sidecars of members whose pods have one")
    p.add_argument("--etcd-backup-restore", help="etcdbrctl, for etcd-druid's pods")
    p.add_argument("--netns", help="the node's network namespace, which its pods' sandboxes name (default: the node)")
    p.add_argument("--interval", type=float, default=0.5)
    args = p.parse_args(argv)
    api = (connect or _connect)(args.kubeconfig)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    Agent(args, api).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
