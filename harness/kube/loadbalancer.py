"""A real load balancer (HAProxy) in front of the shoot's kube-apiservers.

As a cloud load balancer does, it forwards TCP to every candidate address and lets its own
health checks decide which take traffic: an HTTPS `GET /readyz` per backend every
`check_interval_ms`, expecting "ok"; two failures mark a backend DOWN, one success UP again.

What the caller provides (start() creates nothing in the router but one veth end):

- `router_ns`: an existing network namespace that routes (net.ipv4.ip_forward=1) between
  the load balancer's subnet and the backends' and clients' subnets;
- `bridge`: an existing, up bridge in `router_ns` carrying `gateway`/`prefix_len`
  (e.g. `10.77.200.1/24` on `b-lb`); the load balancer's `address` must lie in that subnet;
- `backends`: addresses reachable from that subnet through the router (the kube-apiserver
  pods' addresses, all candidates: the health checks pick the live ones).

start() creates `netns` with one veth into the router (attached to `bridge`), the address and
a default route via `gateway`, and runs haproxy inside it in its own session. stop() takes
both away again. The returned record is plain JSON, so another process (`harness down`)
can stop it later without signalling a recycled pid.
"""

from __future__ import annotations

import csv
import hashlib
import ipaddress
import io
import os
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, EnvironmentStateError, HarnessError, PrerequisiteError
from harness.processes import ProcessRecord, log_tail, spawn, terminate
from harness.wait import wait_serving

FRONTEND = "apiserver"
BACKEND = "apiservers"
# Long-running API requests (watches) are idle for long stretches; a cloud LB's idle
# timeout is minutes, not seconds (AWS NLB: 350 s).
IDLE_TIMEOUT = "10m"
START_TIMEOUT_S = 10.0
STOP_GRACE_S = 5.0
# A unix socket path must fit in sockaddr_un.sun_path (108 bytes with the NUL).
_MAX_SOCKET_PATH = 107

# Popen objects of the haproxies this process started, so stop() can reap them.
_children: dict[int, subprocess.Popen[bytes]] = {}


def _ipv4(value: str, what: str) -> ipaddress.IPv4Address:
    try:
        return ipaddress.IPv4Address(str(value))
    except ipaddress.AddressValueError:
        raise ConfigError(f"{what} {value!r} is not an IPv4 address (e.g. 10.77.1.10)") from None


def _port(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ConfigError(f"{what} {value!r} is out of range 1-65535")


def haproxy_config(
    listen: str,
    port: int,
    backends: Sequence[str],
    backend_port: int = 443,
    check_interval_ms: int = 500,
    stats_socket: Path | None = None,
) -> str:
    """HAProxy configuration: TCP from listen:port to every backend, HTTPS health checks.

    Servers are named b0, b1, ... in the order of `backends`. Notes on the choices:
    - `option redispatch 1` + `retries 2`: a connection refused by a backend not yet marked
      DOWN is retried on another one, so clients do not see the detection window;
    - `on-marked-down shutdown-sessions`: connections to a backend marked DOWN are closed, so
      clients of a blackholed kube-apiserver reconnect instead of hanging on a dead watch
      (as an AWS NLB terminates connections to unhealthy targets). The price: a connection
      still waiting out `timeout connect` to that backend when it is marked is cut too,
      instead of being redispatched;
    - HAProxy considers servers UP when it starts; the first checks settle that within
      `fall` intervals;
    - no `daemon`: the harness supervises the process; logs go to stderr.
    """
    _ipv4(listen, "listen address")
    _port(port, "listen port")
    _port(backend_port, "backend port")
    if isinstance(backends, str):
        raise ConfigError(f"backends must be a list of addresses, not the string {backends!r}")
    if not backends:
        raise ConfigError("the load balancer needs at least one backend address")
    addresses = [_ipv4(b, "backend address") for b in backends]
    dupes = sorted({str(a) for a in addresses if addresses.count(a) > 1})
    if dupes:
        raise ConfigError(f"duplicate backend address(es): {', '.join(dupes)}")
    if isinstance(check_interval_ms, bool) or not isinstance(check_interval_ms, int) or check_interval_ms < 100:
        raise ConfigError(f"check interval {check_interval_ms!r} ms must be an integer of at least 100")
    lines = [
        "global",
        "    log stderr format raw local0 info",
        "    maxconn 4096",
    ]
    if stats_socket is not None:
        if len(str(stats_socket)) > _MAX_SOCKET_PATH:
            raise ConfigError(f"stats socket path {stats_socket} is longer than {_MAX_SOCKET_PATH} bytes; use a shorter workdir")
        lines.append(f"    stats socket {stats_socket} mode 600 level admin")
    check_timeout = max(1000, check_interval_ms)
    lines += [
        "",
        "defaults",
        "    mode tcp",
        "    log global",
        "    option tcplog",
        "    option redispatch 1",
        "    retries 2",
        "    timeout connect 1s",
        f"    timeout client {IDLE_TIMEOUT}",
        f"    timeout server {IDLE_TIMEOUT}",
        # With `timeout check`, a check connects within min(connect, inter) and then reads for this long.
        f"    timeout check {check_timeout}ms",
        "",
        f"frontend {FRONTEND}",
        f"    bind {listen}:{port}",
        f"    default_backend {BACKEND}",
        "",
        f"backend {BACKEND}",
        "    balance roundrobin",
        "    option httpchk GET /readyz",
        "    http-check expect string ok",
        f"    default-server check check-ssl verify none inter {check_interval_ms} fall 2 rise 1"
        " on-marked-down shutdown-sessions",
    ]
    lines += [f"    server b{i} {a}:{backend_port}" for i, a in enumerate(addresses)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LoadBalancerSpec:
    netns: str  # created by start(); must not exist yet
    router_ns: str  # exists, forwards
    bridge: str  # exists in router_ns, carries gateway/prefix_len
    address: str  # the load balancer's address, e.g. "10.77.200.10"
    prefix_len: int
    gateway: str  # the bridge's address in router_ns
    port: int
    backends: tuple[str, ...]
    workdir: Path
    backend_port: int = 443
    check_interval_ms: int = 500

    def __post_init__(self) -> None:
        if not self.netns or "/" in self.netns or len(self.netns) > 200:
            raise ConfigError(f"network namespace name {self.netns!r} is not a valid name")
        if not 1 <= self.prefix_len <= 30:
            raise ConfigError(f"prefix length {self.prefix_len} must be within 1-30")
        address = _ipv4(self.address, "load balancer address")
        gateway = _ipv4(self.gateway, "gateway")
        subnet = ipaddress.IPv4Network(f"{gateway}/{self.prefix_len}", strict=False)
        if address not in subnet:
            raise ConfigError(f"load balancer address {address} is not in the gateway's subnet {subnet}")
        if address == gateway or address in (subnet.network_address, subnet.broadcast_address):
            raise ConfigError(f"load balancer address {address} cannot be the gateway, network or broadcast address of {subnet}")
        # Validates port, backends and interval with the same messages as the config itself.
        haproxy_config(self.address, self.port, self.backends, self.backend_port, self.check_interval_ms)

    @property
    def veth(self) -> str:
        """The veth end in the router: at most 15 characters, stable for a given netns name."""
        return "lb" + hashlib.sha1(self.netns.encode()).hexdigest()[:10]

    @property
    def config_path(self) -> Path:
        return self.workdir / "haproxy.cfg"

    @property
    def socket_path(self) -> Path:
        return self.workdir / "haproxy.sock"


def find_haproxy(haproxy: str = "haproxy") -> str:
    """Path of the haproxy binary (also /usr/sbin, which a non-root PATH may lack)."""
    found = shutil.which(haproxy)
    if found is None and os.sep not in haproxy:
        found = shutil.which(haproxy, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise PrerequisiteError(
            f"haproxy not found ({haproxy}); the load balancer needs it: apt-get install haproxy "
            "(Debian/Ubuntu), or `make run`, which installs it when run as root"
        )
    return found


def _run(argv: Sequence[str], stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=10, check=False)
    except FileNotFoundError:
        raise PrerequisiteError(f"command not found: {argv[0]} (Debian: apt-get install iproute2)") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"`{' '.join(argv)}` timed out after 10s") from None
    if check and proc.returncode != 0:
        raise HarnessError(f"`{' '.join(argv)}` failed with exit code {proc.returncode}: {(proc.stderr + proc.stdout).strip()[-800:]}")
    return proc


def _namespaces() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def check_config(haproxy: str, config: Path) -> None:
    """`haproxy -c`: a config HAProxy rejects is a ConfigError carrying its message."""
    proc = _run([haproxy, "-c", "-f", str(config)], check=False)
    if proc.returncode != 0:
        out = (proc.stderr + proc.stdout).strip()
        alerts = [line for line in out.splitlines() if "[ALERT]" in line] or [out]
        raise ConfigError(f"haproxy rejects {config}: " + "\n".join(alerts)[-800:])


def _check_network(spec: LoadBalancerSpec) -> None:
    """What the caller must provide is there, and nothing of ours is yet (no side effects)."""
    present = _namespaces()
    if spec.router_ns not in present:
        raise EnvironmentStateError(f"router namespace {spec.router_ns} does not exist; the caller creates it")
    if spec.netns in present:
        raise EnvironmentStateError(
            f"network namespace {spec.netns} exists already (a load balancer left running?); stop it first"
        )
    if _run(["ip", "-n", spec.router_ns, "link", "show", "dev", spec.bridge], check=False).returncode != 0:
        raise EnvironmentStateError(
            f"bridge {spec.bridge} does not exist in {spec.router_ns}; the caller creates it with {spec.gateway}/{spec.prefix_len}"
        )


def _build_network(spec: LoadBalancerSpec) -> None:
    _run(["ip", "netns", "add", spec.netns])
    _run(["ip", "-n", spec.netns, "link", "set", "lo", "up"])
    router = [
        f"link add {spec.veth} type veth peer name eth0 netns {spec.netns}",
        f"link set {spec.veth} master {spec.bridge}",
        f"link set {spec.veth} up",
    ]
    _run(["ip", "-n", spec.router_ns, "-batch", "-"], stdin="\n".join(router) + "\n")
    inside = [
        f"addr add {spec.address}/{spec.prefix_len} dev eth0",
        "link set eth0 up",
        f"route add default via {spec.gateway}",
    ]
    _run(["ip", "-n", spec.netns, "-batch", "-"], stdin="\n".join(inside) + "\n")


def _listening(pid: int, address: str, port: int) -> bool:
    """Whether pid's network namespace has a TCP listener on address:port (/proc/PID/net/tcp)."""
    want = f"{int(ipaddress.IPv4Address(address)).to_bytes(4, 'big')[::-1].hex().upper()}:{port:04X}"
    try:
        table = Path(f"/proc/{pid}/net/tcp").read_text()
    except OSError:
        return False
    return any(line.split()[1] == want and line.split()[3] == "0A" for line in table.splitlines()[1:])


def start(spec: LoadBalancerSpec, haproxy: str = "haproxy", config: str | None = None) -> dict[str, Any]:
    """Create the load balancer's namespace and veth, start haproxy in it and wait until it listens.

    `config` replaces haproxy_config's (a load balancer of another shape, e.g. the local cloud's
    ELBs); it must listen on spec.address:spec.port and open the stats socket at spec.socket_path.
    Returns a JSON-able record for stop() and backend_states(), also from another process.
    """
    binary = find_haproxy(haproxy)
    spec.workdir.mkdir(parents=True, exist_ok=True)
    if config is None:
        config = haproxy_config(
            spec.address, spec.port, spec.backends, spec.backend_port, spec.check_interval_ms, spec.socket_path
        )
    spec.config_path.write_text(config)
    check_config(binary, spec.config_path)
    spec.socket_path.unlink(missing_ok=True)
    _check_network(spec)
    record: dict[str, Any] = {"netns": spec.netns, "router_ns": spec.router_ns, "veth": spec.veth}
    try:
        _build_network(spec)
        argv = ["ip", "netns", "exec", spec.netns, binary, "-db", "-f", str(spec.config_path)]
        popen, proc = spawn(f"haproxy-{spec.netns}", argv, spec.workdir / "haproxy.log")
        _children[proc.pid] = popen
        record.update(proc.to_dict())
        record.update(
            config=str(spec.config_path),
            socket=str(spec.socket_path),
            address=spec.address,
            port=spec.port,
            backends=list(spec.backends),
            backend_port=spec.backend_port,
        )
        try:
            wait_serving(lambda: None if _listening(proc.pid, spec.address, spec.port) and spec.socket_path.exists()
                         else "not listening yet",
                         lambda: None if popen.poll() is None else f"exited with code {popen.returncode}",
                         f"haproxy in {spec.netns} listening on {spec.address}:{spec.port}", START_TIMEOUT_S, 0.05)
        except HarnessError as e:  # exited, or timed out
            raise HarnessError(f"{e}:\n{log_tail(proc.log)}") from None
        return record
    except BaseException:
        stop(record)
        raise


def stop(record: dict[str, Any]) -> None:
    """Stop haproxy and delete its namespace (the veth pair goes with it). Idempotent."""
    if "pid" in record:
        proc = ProcessRecord.from_dict(record)
        terminate(proc, STOP_GRACE_S, _children.pop(proc.pid, None))
    ns = record.get("netns")
    if ns and ns in _namespaces():
        _run(["ip", "netns", "del", ns], check=False)
    router, veth = record.get("router_ns"), record.get("veth")
    if router and veth and router in _namespaces():
        # Gone with the namespace's eth0 normally; a half-made pair may not have been.
        _run(["ip", "-n", router, "link", "del", veth], check=False)
    sock = record.get("socket")
    if sock:
        Path(sock).unlink(missing_ok=True)


def command(record: dict[str, Any], line: str, timeout: float = 2.0) -> str:
    """One command on haproxy's runtime API (its stats socket, level admin); its answer."""
    path = record.get("socket")
    if not path:
        raise ConfigError("the load balancer record has no stats socket")
    chunks = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            s.sendall(line.encode() + b"\n")
            while chunk := s.recv(65536):
                chunks.append(chunk)
    except OSError as e:
        raise EnvironmentStateError(f"cannot use the load balancer's stats socket {path} (not running?): {e}") from None
    return b"".join(chunks).decode(errors="replace")


def stats(record: dict[str, Any], timeout: float = 2.0) -> list[dict[str, str]]:
    """`show stat` from haproxy's stats socket, one dict per proxy/server row."""
    text = command(record, "show stat", timeout).lstrip("# ")
    return list(csv.DictReader(io.StringIO(text)))


def backend_states(record: dict[str, Any]) -> dict[str, str]:
    """Backend address -> its health as HAProxy sees it: "UP", "DOWN" (or "MAINT", "NOLB", ...).

    A transition in progress ("UP 1/2": one failed check) is reported as the current state.
    """
    names = {f"b{i}": address for i, address in enumerate(record.get("backends", []))}
    states: dict[str, str] = {}
    for row in stats(record):
        if row.get("pxname") == BACKEND and row.get("svname") in names:
            states[names[row["svname"]]] = (row.get("status") or "").split(" ")[0]
    return states
