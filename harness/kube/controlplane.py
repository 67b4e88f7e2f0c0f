"""A real local Kubernetes control plane whose nodes are kwok fakes, one kwok per node.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler are the real binaries;
nodes are Node objects each kept alive by its own kwok controller, the node's kubelet
stand-in. Beside the local region a node's kwok runs inside the node's network namespace
and reaches the API server through the region's router, so whatever cuts the node off
(a zone outage, a dead or frozen node, a link down) stops its heartbeats for real and the
node lifecycle controller reacts exactly as it would to a dead kubelet. Standalone (no
region), kwoks run beside the API server and a zone is silenced by stopping its kwoks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.command_lines import etcd_command, kube_apiserver_command
from harness.errors import ConfigError, EnvironmentStateError, HarnessError, WaitAbandoned, WaitTimeout
from harness.kube.apiclient import ApiClient, ApiError
from harness.kube.binaries import KubeBinaries, ensure_binaries, kwok_crd, kwok_stages, sources_from_env
from harness.kube.pki import (
    SERVICE_CLUSTER_IP_RANGE,
    Pki,
    generate_pki,
    write_kubeconfig,
)
from harness.processes import (
    ProcessRecord,
    log_tail,
    process_state,
    signal_group,
    spawn,
    terminate,
)
from harness.kube.timings import DEFAULT_TIMINGS, KubeTimings
from harness.wait import wait_for, wait_serving
from harness.files import replace_text

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Seed 004's host failure domain: the physical host a node (VM) runs on.
HOST_LABEL = "node.cluster.x-k8s.io/esxi-host"
# Nodes carry this label so kwok never touches a node it did not get from the harness.
KWOK_NODE_LABEL = ("type", "kwok")
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Where a node's kwok serves the kubelet API (port-forward), on the node's address.
KUBELET_PORT = 10250
# Pods with this label run as real processes under the node agent; kwok leaves them alone.
AGENT_LABEL = "ha-harness/run"
# Set by a node's agent on its Node: this node runs AGENT_LABEL pods for real (what the cluster
# provider, handed the local seed's kubeconfig, learns it from).
AGENT_NODE_ANNOTATION = "ha-harness/node-agent"
DEFAULT_ZONES = ("zone-a", "zone-b", "zone-c")
LIFECYCLE_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
STOP_WAIT_S = 5.0  # SIGSTOP reaching every kwok of a zone
STATE_FILE = "controlplane.json"
_STATE_VERSION = 1
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")

Progress = Callable[[str], None]


def _stderr_progress(message: str) -> None:
    print(f"[kube] {message}", file=sys.stderr, flush=True)


class ControlPlaneError(HarnessError):
    """The control plane could not be started or operated; the message carries the component's log tail."""


@dataclass(frozen=True)
class NodeSpec:
    name: str
    zone: str
    host: str | None = None  # labelled HOST_LABEL when given
    netns: str | None = None  # network namespace the node's kwok runs in (None: the harness's own)
    # The node's own address in its namespace: its kwok serves the kubelet API there (port-forward
    # to the pods its agent runs). None: a standalone node without a kubelet API.
    address: str | None = None


def default_nodes(zones: tuple[str, ...] = DEFAULT_ZONES, per_zone: int = 2) -> tuple[NodeSpec, ...]:
    return tuple(NodeSpec(f"{zone}-{i}", zone) for zone in zones for i in range(1, per_zone + 1))


@dataclass(frozen=True)
class ControlPlaneSpec:
    nodes: tuple[NodeSpec, ...] = field(default_factory=default_nodes)
    timings: KubeTimings = DEFAULT_TIMINGS
    # None: pick a free port. A given port that is taken is an error, not silently replaced.
    apiserver_port: int | None = None
    etcd_port: int | None = None
    # Directory holding the binaries (from config/CLI); see harness.kube.binaries for the order.
    binary_dir: Path | None = None
    # Use this etcd instead of starting one (e.g. a shared or deliberately broken one).
    external_etcd_url: str | None = None
    extra_apiserver_flags: tuple[str, ...] = ()
    # Address the API server listens on; nodes in network namespaces reach it through a route.
    bind_address: str = "127.0.0.1"
    # The network namespace the API server's connections to nodes, pods and services leave from
    # (harness.kube.egress_proxy there, for its egress selector); None: its own namespace.
    egress_netns: str | None = None

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ConfigError("the control plane needs at least one node")
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ConfigError(f"duplicate node names: {', '.join(dupes)}")
        for value in {*names, *(n.zone for n in self.nodes), *(n.host for n in self.nodes if n.host)}:
            if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
                raise ConfigError(f"node/zone name {value!r} is not a DNS label (lower-case letters, digits, '-')")
        for port in (self.apiserver_port, self.etcd_port):
            if port is not None and not 1 <= port <= 65535:
                raise ConfigError(f"port {port} is out of range 1-65535")

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.zone for n in self.nodes))


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the Go servers do: a port merely in TIME_WAIT is free, a listening one is not.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _fmt(seconds: float) -> str:
    return f"{seconds:.1f}s"


class ControlPlane:
    """A running (or stopped) embedded control plane. Build it with start_control_plane()."""

    def __init__(
        self,
        workdir: Path,
        ports: dict[str, int],
        nodes: tuple[NodeSpec, ...],
        timings: KubeTimings,
        pki: Pki,
        kubeconfig: Path,
        progress: Progress = _stderr_progress,
        address: str = "127.0.0.1",
    ) -> None:
        self.workdir = workdir
        self.address = address
        self.ports = ports
        self.nodes = nodes
        self.timings = timings
        self.pki = pki
        self.kubeconfig = kubeconfig
        self.progress = progress
        self.records: dict[str, ProcessRecord] = {}
        self._popens: dict[str, subprocess.Popen[bytes]] = {}
        self.silenced: set[str] = set()
        self.stopped = False

    # --- identity -------------------------------------------------------------------------

    @property
    def apiserver_url(self) -> str:
        return f"https://{self.address}:{self.ports['apiserver']}"

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n.zone for n in self.nodes))

    def nodes_in(self, zone: str) -> list[str]:
        names = [n.name for n in self.nodes if n.zone == zone]
        if not names:
            raise ConfigError(f"unknown zone {zone!r}; zones are {', '.join(self.zones)}")
        return names

    def client(self) -> ApiClient:
        return ApiClient(self.apiserver_url, self.pki.ca_cert, self.pki.admin_cert, self.pki.admin_key)

    @property
    def state_path(self) -> Path:
        return self.workdir / STATE_FILE

    def to_state(self) -> dict[str, Any]:
        return {
            "version": _STATE_VERSION,
            "workdir": str(self.workdir),
            "kubeconfig": str(self.kubeconfig),
            "apiserver_url": self.apiserver_url,
            "address": self.address,
            "ports": dict(self.ports),
            "nodes": [{"name": n.name, "zone": n.zone, "host": n.host, "netns": n.netns} for n in self.nodes],
            "timings": {k: getattr(self.timings, k) for k in self.timings.__dataclass_fields__},
            "pki": {k: str(getattr(self.pki, k)) for k in self.pki.__dataclass_fields__},
            "processes": [r.to_dict() for r in self.records.values()],
            "silenced_zones": sorted(self.silenced),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], progress: Progress = _stderr_progress) -> ControlPlane:
        if state.get("version") != _STATE_VERSION:
            raise EnvironmentStateError(f"control plane state has version {state.get('version')!r}, expected {_STATE_VERSION}")
        try:
            cp = cls(
                workdir=Path(state["workdir"]),
                ports={k: int(v) for k, v in state["ports"].items()},
                nodes=tuple(NodeSpec(n["name"], n["zone"], n.get("host"), n.get("netns")) for n in state["nodes"]),
                timings=KubeTimings(**state["timings"]),
                pki=Pki(**{k: Path(v) for k, v in state["pki"].items()}),
                kubeconfig=Path(state["kubeconfig"]),
                progress=progress,
                address=state.get("address", "127.0.0.1"),
            )
            for d in state["processes"]:
                record = ProcessRecord.from_dict(d)
                cp.records[record.name] = record
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvironmentStateError(f"control plane state is malformed ({exc!r}); remove it and stop leftovers by hand") from exc
        cp.silenced = set(state.get("silenced_zones", ()))
        return cp

    def _save_state(self) -> None:
        replace_text(self.state_path, json.dumps(self.to_state(), indent=2), 0o644)

    # --- processes ------------------------------------------------------------------------

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        proc, record = spawn(name, argv, self.workdir / "logs" / f"{name}.log", env)
        self._popens[name] = proc
        self.records[name] = record
        # Saved after every start, so a crash mid-startup still leaves what to clean up.
        self._save_state()

    def _exited(self, name: str) -> int | None:
        popen = self._popens.get(name)
        if popen is not None:
            return popen.poll()
        return None if self.records[name].alive() else -1

    def _fail(self, name: str, what: str) -> ControlPlaneError:
        record = self.records.get(name)
        log = record.log if record else "(not started)"
        tail = log_tail(log) if record else ""
        return ControlPlaneError(f"{name} {what}; log {log} ends with:\n{tail}")

    def _wait(self, name: str, description: str, check: Callable[[], str | None], timeout: float) -> None:
        """Poll check() (None = ready, else what was seen) while `name` keeps running."""
        self.progress(f"waiting up to {timeout:.0f}s for {description}")
        started = time.monotonic()

        def gone() -> str | None:
            code = self._exited(name)
            return None if code is None else f"exited with code {code}"

        try:
            wait_serving(check, gone, description, timeout, interval=0.25, say=self.progress)
        except WaitAbandoned as e:
            raise self._fail(name, str(e)) from None
        except WaitTimeout as e:
            raise self._fail(name, f"did not get ready: timed out after {timeout:.0f}s waiting for {description} "
                                   f"(last: {e.last})") from None
        self.progress(f"{description}: ok after {_fmt(time.monotonic() - started)}")

    def stop(self) -> None:
        """Stop the components in three waves, each wave's at once and each given its grace period
        (a node agent stops its pods first: one after the other, they took 5-7 s each): the
        clients of the API, then kube-apiserver, then etcd. Stopped together, kube-apiserver's
        lease cleanup waited on an etcd that had stopped taking connections while etcd waited out
        its 7 s request timeout for kube-apiserver's watch streams (`harness down` of a region with
        its seed took 11.5 s; in waves 2.9 s). Safe to call repeatedly and after a crash."""
        last = ("kube-apiserver", "etcd")
        for wave in ([n for n in reversed(list(self.records)) if n not in last], *([n] for n in last)):
            threads = [threading.Thread(target=terminate, args=(self.records[name], self.timings.stop_grace_s,
                                                                self._popens.get(name)), name=f"stop-{name}")
                       for name in wave if name in self.records]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.stopped = True
        self.silenced.clear()
        self.state_path.unlink(missing_ok=True)

    def running(self) -> list[str]:
        return [name for name, r in self.records.items() if r.alive()]

    # --- zones ----------------------------------------------------------------------------

    def _kwoks(self, zone: str) -> list[ProcessRecord]:
        names = self.nodes_in(zone)
        records = [self.records.get(f"kwok-{n}") for n in names]
        if self.stopped or any(r is None for r in records):
            raise EnvironmentStateError(f"zone {zone}'s kwok controllers are not running (control plane stopped?)")
        return [r for r in records if r is not None]

    def _signal_zone(self, zone: str, sig: int) -> list[ProcessRecord]:
        records = self._kwoks(zone)
        dead = [r for r in records if not signal_group(r, sig)]
        if dead:
            raise EnvironmentStateError(
                f"zone {zone}'s kwok(s) {', '.join(f'{r.name} (pid {r.pid})' for r in dead)} no longer run; logs "
                + ", ".join(r.log for r in dead)
            )
        return records

    def silence_zone(self, zone: str) -> None:
        """Freeze the zone's kwoks (SIGSTOP): its nodes stop renewing leases, as with dead kubelets."""
        records = self._signal_zone(zone, signal.SIGSTOP)
        # A signal is delivered asynchronously: a kwok running on another core stops a moment later.
        wait_for(lambda: [r.name for r in records if process_state(r.pid) not in ("T", "t")], lambda left: not left,
                 f"zone {zone}'s kwoks stopped", STOP_WAIT_S, interval=0.01)
        self.silenced.add(zone)
        self._save_state()
        self.progress(f"zone {zone} silenced ({len(records)} kwok(s) stopped): nodes {', '.join(self.nodes_in(zone))}")

    def restore_zone(self, zone: str) -> None:
        """Resume the zone's kwoks (SIGCONT); its nodes turn Ready again once leases renew."""
        self._signal_zone(zone, signal.SIGCONT)
        self.silenced.discard(zone)
        self._save_state()
        self.progress(f"zone {zone} restored (kwoks continued)")

    def start_component(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        """Start one more component (a node agent, a controller) that stops with the control plane."""
        self._start(name, argv, env)

    def restart_node(self, node: str) -> list[str]:
        """Start the node's components (kwok, agent, kube-proxy once started) again with their
        recorded commands if they died with the node; returns the names restarted."""
        done = []
        for name in (f"kwok-{node}", f"agent-{node}", f"kube-proxy-{node}"):
            record = self.records.get(name)
            if record is None or self.stopped or record.alive():
                continue
            self._start(name, list(record.argv), env=_kwok_env(self.workdir / "kwok" / node, self.timings) if name.startswith("kwok") else None)
            done.append(name)
        return done

    # --- nodes ----------------------------------------------------------------------------

    def node_readiness(self) -> dict[str, str]:
        """Node name -> status of its Ready condition ("True", "False", "Unknown", "missing").

        "True" also needs the node lifecycle controller to have lifted its not-ready/unreachable
        taints: a node reports Ready a moment before it can take pods without tolerations.
        """
        selector = f"{KWOK_NODE_LABEL[0]}%3D{KWOK_NODE_LABEL[1]}"
        items = self.client().get_json(f"/api/v1/nodes?labelSelector={selector}")["items"]
        out = {n.name: "missing" for n in self.nodes}
        for item in items:
            conds = {c["type"]: c["status"] for c in item.get("status", {}).get("conditions", [])}
            ready = conds.get("Ready", "missing")
            taints = [t["key"] for t in item.get("spec", {}).get("taints") or [] if t["key"] in LIFECYCLE_TAINTS]
            out[item["metadata"]["name"]] = f"True, tainted {','.join(taints)}" if ready == "True" and taints else ready
        return out

    def wait_nodes_ready(self, names: list[str] | None = None, timeout: float | None = None) -> None:
        wanted = names or [n.name for n in self.nodes]
        timeout = self.timings.nodes_ready_timeout_s if timeout is None else timeout

        def check() -> str | None:
            try:
                ready = self.node_readiness()
            except ApiError as exc:
                return str(exc)
            pending = {n: ready.get(n, "missing") for n in wanted if ready.get(n) != "True"}
            return None if not pending else f"not Ready: {pending}"

        self._wait("kube-apiserver", f"{len(wanted)} node(s) Ready", check, timeout)

    def _create_nodes(self) -> None:
        client = self.client()
        for node in self.nodes:
            body = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node.name,
                    "labels": {
                        ZONE_LABEL: node.zone,
                        HOSTNAME_LABEL: node.name,
                        **({HOST_LABEL: node.host} if node.host else {}),
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        KWOK_NODE_LABEL[0]: KWOK_NODE_LABEL[1],
                    },
                    "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1]},
                },
                # No taints: workloads must schedule onto these nodes without tolerations.
                "spec": {},
            }
            try:
                client.post_json("/api/v1/nodes", body)
            except ApiError as exc:
                if exc.status != 409:
                    raise ControlPlaneError(f"cannot create node {node.name}: {exc}") from exc


# --- start ----------------------------------------------------------------------------------


def _http_check(client: ApiClient, path: str, expect: str = "ok") -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            _, body = client.request("GET", path, timeout=5)
        except ApiError as exc:
            return str(exc)[:300]
        return None if expect in body else body[:300]

    return check


def _claim_ports(spec: ControlPlaneSpec) -> dict[str, int]:
    for label, port in (("apiserver_port", spec.apiserver_port), ("etcd_port", spec.etcd_port)):
        if port is not None and not _port_free(port):
            raise EnvironmentStateError(
                f"{label} {port} on 127.0.0.1 is already in use by another process; "
                "stop that process, choose another port, or leave the port unset to get a free one"
            )
    free = iter(free_ports(5))
    ports = {
        "etcd": spec.etcd_port or next(free),
        "etcd_peer": next(free),
        "apiserver": spec.apiserver_port or next(free),
        "controller_manager": next(free),
        "scheduler": next(free),
    }
    if len(set(ports.values())) != len(ports):
        # A given port may coincide with a picked free one; pick again rather than collide.
        return _claim_ports(spec)
    return ports


def _live_previous(workdir: Path) -> list[str]:
    path = workdir / STATE_FILE
    if not path.exists():
        return []
    try:
        state = json.loads(path.read_text())
        return [f"{d['name']} (pid {d['pid']})" for d in state.get("processes", []) if ProcessRecord.from_dict(d).alive()]
    except (ValueError, KeyError, TypeError):
        return []


def start_control_plane(
    spec: ControlPlaneSpec,
    workdir: Path,
    binaries: KubeBinaries | None = None,
    progress: Progress = _stderr_progress,
) -> ControlPlane:
    """Start etcd, the API server, controller manager, scheduler and one kwok per node; wait for Ready nodes.

    On any failure everything already started is stopped before the error propagates.
    """
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    leftovers = _live_previous(workdir)
    if leftovers:
        raise EnvironmentStateError(
            f"a control plane from an earlier run is still running in {workdir}: {', '.join(leftovers)}; "
            "stop it first (stop_from_state / `harness down`)"
        )
    if binaries is None:
        binaries = ensure_binaries(sources_from_env(spec.binary_dir), progress=progress)
    ports = _claim_ports(spec)
    # Every start is a fresh cluster: data from an earlier, stopped run would bring back its objects.
    shutil.rmtree(workdir / "etcd-data", ignore_errors=True)
    pki = generate_pki(workdir / "pki", extra_ips=(spec.bind_address,))
    server = f"https://{spec.bind_address}:{ports['apiserver']}"
    kubeconfig = write_kubeconfig(workdir / "kubeconfig", server, pki)
    cp = ControlPlane(workdir, ports, spec.nodes, spec.timings, pki, kubeconfig, progress, spec.bind_address)
    started = time.monotonic()
    try:
        _start_all(cp, spec, binaries)
    except BaseException as exc:
        progress(f"startup failed; stopping the {len(cp.running())} component(s) already running")
        cp.stop()
        if isinstance(exc, HarnessError) or not isinstance(exc, Exception):
            raise
        raise ControlPlaneError(f"control plane startup failed: {exc!r}") from exc
    progress(f"control plane up in {_fmt(time.monotonic() - started)}; kubeconfig {kubeconfig}")
    return cp


def _start_egress_proxy(cp: ControlPlane, netns: str, timeout: float) -> list[str]:
    """The proxy in `netns` and the API server flag that sends its egress "cluster" through it."""
    socket = cp.workdir / "egress.sock"
    socket.unlink(missing_ok=True)
    cp._start("egress-proxy", ["ip", "netns", "exec", netns, sys.executable, "-m", "harness.kube.egress_proxy",
                               f"--socket={socket}"])
    cp._wait("egress-proxy", f"the egress proxy's socket {socket}", lambda: None if socket.exists() else "no socket yet",
             timeout)
    config = cp.workdir / "egress-selector.yaml"
    config.write_text(json.dumps({
        "apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
        "egressSelections": [{"name": "cluster", "connection": {
            "proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": str(socket)}}}}]}))
    return [f"--egress-selector-config-file={config}"]


def _start_all(cp: ControlPlane, spec: ControlPlaneSpec, bins: KubeBinaries) -> None:
    t = spec.timings
    wd = cp.workdir
    ports = cp.ports
    kubeconfig = str(cp.kubeconfig)

    if spec.external_etcd_url:
        etcd_url = spec.external_etcd_url
    else:
        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['etcd_peer']}"
        cp._start("etcd", etcd_command(str(bins.etcd), "default", wd / "etcd-data", etcd_url, peer_url, f"default={peer_url}"))
        cp._wait("etcd", f"etcd health on {etcd_url}", _http_check(ApiClient(etcd_url, None, None, None), "/health", '"health":"true"'), t.etcd_ready_timeout_s)

    egress = _start_egress_proxy(cp, spec.egress_netns, t.etcd_ready_timeout_s) if spec.egress_netns else []
    cp._start("kube-apiserver", kube_apiserver_command(
        str(bins.kube_apiserver), [etcd_url], spec.bind_address, ports["apiserver"], cp.pki, wd / "certs" / "apiserver",
        SERVICE_CLUSTER_IP_RANGE, extra=["--allow-privileged=true", *egress, *t.apiserver_flags(),
                                         # a node's name resolves nowhere; its kubelet API is on its address
                                         "--kubelet-preferred-address-types=InternalIP", *spec.extra_apiserver_flags]))
    cp._wait("kube-apiserver", f"kube-apiserver /readyz on {cp.apiserver_url}", _http_check(cp.client(), "/readyz"), t.apiserver_ready_timeout_s)

    common = [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        # One instance each: leader election only delays startup and restarts.
        "--leader-elect=false",
        "--profiling=false",
    ]
    cp._start(
        "kube-controller-manager",
        [
            str(bins.kube_controller_manager),
            *common,
            f"--secure-port={ports['controller_manager']}",
            f"--cert-dir={wd / 'certs' / 'controller-manager'}",
            f"--root-ca-file={cp.pki.ca_cert}",
            f"--service-account-private-key-file={cp.pki.sa_private_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--v=2",
            *t.controller_manager_flags(),
        ],
    )
    cp._start(
        "kube-scheduler",
        [str(bins.kube_scheduler), *common, f"--secure-port={ports['scheduler']}", f"--cert-dir={wd / 'certs' / 'scheduler'}"],
    )
    for name, key in (("kube-controller-manager", "controller_manager"), ("kube-scheduler", "scheduler")):
        probe = ApiClient(f"https://127.0.0.1:{ports[key]}", None, None, None)
        cp._wait(name, f"{name} /healthz", _http_check(probe, "/healthz"), t.components_ready_timeout_s)

    cp._create_nodes()
    serving = [n for n in cp.nodes if n.address]
    if serving:  # port-forwards to agent-run pods go to PortForward objects their agents keep
        _install_crd(cp, kwok_crd(bins.kwok, "portforwards"), t.apiserver_ready_timeout_s)
    stages = keep_node_addresses(leave_agent_pods_alone(kwok_stages(bins.kwok) + POD_READY_AGAIN))
    for index, node in enumerate(cp.nodes):
        home = wd / "kwok" / node.name
        home.mkdir(parents=True, exist_ok=True)
        config = home / "kwok.yaml"
        config.write_text(stages)
        argv = [
            str(bins.kwok),
            f"--config={config}",
            f"--kubeconfig={kubeconfig}",
            f"--manage-single-node={node.name}",
            # Distinct pod IP ranges per node, so simulated pod IPs are unique cluster-wide.
            f"--cidr=10.244.{index}.0/24",
            *([f"--node-ip={node.address}", f"--node-port={KUBELET_PORT}", "--enable-crds=PortForward"]
              if node.address else [f"--node-ip=10.250.{index}.1"]),
            *t.kwok_flags(),
        ]
        # Inside the node's namespace its heartbeats share the node's fate on the network.
        cp._start(f"kwok-{node.name}", ["ip", "netns", "exec", node.netns, *argv] if node.netns else argv, env=_kwok_env(home, t))
    names = [n.name for n in cp.nodes]

    def nodes_check() -> str | None:
        for node in cp.nodes:
            code = cp._exited(f"kwok-{node.name}")
            if code is not None:
                raise cp._fail(f"kwok-{node.name}", f"exited with code {code} while waiting for nodes")
        try:
            ready = cp.node_readiness()
        except ApiError as exc:
            return str(exc)
        pending = {n: ready.get(n) for n in names if ready.get(n) != "True"}
        return None if not pending else f"not Ready: {pending}"

    cp._wait("kube-apiserver", f"{len(names)} nodes in {len(cp.zones)} zones Ready", nodes_check, t.nodes_ready_timeout_s)
    cp._save_state()


def _install_crd(cp: ControlPlane, text: str, timeout: float) -> None:
    """Create a CustomResourceDefinition and wait until the API serves it."""
    import yaml

    crd = yaml.safe_load(text)
    client = cp.client()
    try:
        client.post_json("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    except ApiError as exc:
        if exc.status != 409:
            raise ControlPlaneError(f"cannot create CRD {crd['metadata']['name']}: {exc}") from exc
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"

    def established() -> str | None:
        try:
            conditions = client.get_json(path).get("status", {}).get("conditions", [])
        except ApiError as exc:
            return str(exc)[:300]
        return None if any(c["type"] == "Established" and c["status"] == "True" for c in conditions) else "not established yet"

    cp._wait("kube-apiserver", f"CRD {crd['metadata']['name']} established", established, timeout)


# When a node goes NotReady, the node lifecycle controller marks its pods not ready; a kubelet
# that comes back reports them ready again, kwok's own stages only make Pending pods ready. Without
# this, a pod on a node that blinked (killed and restored) stays Running-but-not-ready for good.
POD_READY_AGAIN = """---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values:
      - 'False'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
"""


def leave_agent_pods_alone(stages: str) -> str:
    """kwok's stages with every Pod stage limited to pods without AGENT_LABEL and to pods not of
    etcd-druid's: those run for real under the node agent, which reports their status and
    confirms their deletion."""
    import yaml

    from harness.kube.druid_pods import MANAGED_BY

    docs = [d for d in yaml.safe_load_all(stages) if d]
    for doc in docs:
        if doc.get("kind") == "Stage" and doc["spec"]["resourceRef"]["kind"] == "Pod":
            selector = doc["spec"].setdefault("selector", {})
            selector.setdefault("matchExpressions", []).extend([
                {"key": f'.metadata.labels["{AGENT_LABEL}"]', "operator": "DoesNotExist"},
                {"key": f'.metadata.labels["{MANAGED_BY[0]}"]', "operator": "NotIn", "values": [MANAGED_BY[1]]}])
    return yaml.safe_dump_all(docs, sort_keys=False)


def keep_node_addresses(stages: str) -> str:
    """kwok's stages with node-initialize no longer wiping a node's addresses. The stage runs again
    whenever a node is not Ready (a zone that was cut comes back); a node with an InternalIP but no
    Hostname address then gets an `addresses:` key with no entry, which clears them, and the API
    server can no longer reach the node's kubelet API (port-forward). Here the key is written only
    for a node that has no InternalIP yet."""
    import yaml

    docs = [d for d in yaml.safe_load_all(stages) if d]
    for doc in docs:
        if doc.get("kind") == "Stage" and doc["metadata"]["name"] == "node-initialize":
            template = doc["spec"]["next"]["statusTemplate"]
            for old, new in (("{{ if or (not $hasInternalIP) (not $hasHostname) }}", "{{ if not $hasInternalIP }}"),
                             ("{{ if not $hasHostname }}", "{{ if and (not $hasHostname) (not $hasInternalIP) }}")):
                if old not in template:
                    raise ControlPlaneError(f"kwok's node-initialize stage changed: {old!r} not found; review "
                                            "keep_node_addresses against the pinned kwok")
                template = template.replace(old, new)
            doc["spec"]["next"]["statusTemplate"] = template
    return yaml.safe_dump_all(docs, sort_keys=False)


def _kwok_env(home: Path, timings: KubeTimings) -> dict[str, str]:
    # kwok also reads ~/.kwok/kwok.yaml; a private HOME keeps the user's config out.
    return {**os.environ, "HOME": str(home), **timings.kwok_env()}


# --- cleanup of an earlier run ----------------------------------------------------------------


def load_state(workdir: Path) -> dict[str, Any] | None:
    path = workdir / STATE_FILE
    if not path.exists():
        return None
    try:
        state: dict[str, Any] = json.loads(path.read_text())
    except ValueError as exc:
        raise EnvironmentStateError(f"{path} is not valid JSON ({exc}); remove it and stop leftovers by hand") from exc
    return state


def stop_from_state(state: dict[str, Any], progress: Progress = _stderr_progress) -> None:
    """Stop what an earlier (possibly crashed) run started, from its to_state() dict."""
    cp = ControlPlane.from_state(state, progress)
    alive = cp.running()
    if alive:
        progress(f"stopping leftover control plane components: {', '.join(alive)}")
    cp.stop()
