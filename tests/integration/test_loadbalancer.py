"""The HAProxy load balancer in front of HTTPS backends in node namespaces, for real.

A topology of its own (namespaces prefixed `tlb-`): a router with one bridge per subnet,
two "node" namespaces in two zones each running a tiny HTTPS server on :443 that answers
`/readyz` with "ok" (and any other path with its node's name), and a client namespace.
"""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import json
import os
import signal
import ssl
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness import netns
from harness.errors import ConfigError, EnvironmentStateError, PrerequisiteError
from harness.kube import loadbalancer as lb
from harness.kube.loadbalancer import LoadBalancerSpec
from harness.processes import ProcessRecord
from harness.wait import wait_for

pytestmark = pytest.mark.region

PREFIX = "tlb-"
ROUTER = "tlb-r"
CLIENT = "tlb-c"
LB_NS = "tlb-lb"
LB_ADDRESS = "10.77.200.10"
INTERVAL_MS = 500
# bridge -> gateway/24; the load balancer gets a subnet of its own, as a cloud LB does.
BRIDGES = {"b-za": "10.77.1.1", "b-zb": "10.77.2.1", "b-cl": "10.77.3.1", "b-lb": "10.77.200.1"}


@dataclass(frozen=True)
class Host:
    ns: str
    veth: str  # its end in the router
    bridge: str
    address: str


NODES = {
    "node-a": Host("tlb-na", "v-na", "b-za", "10.77.1.10"),
    "node-b": Host("tlb-nb", "v-nb", "b-zb", "10.77.2.10"),
}
CLIENT_HOST = Host(CLIENT, "v-c", "b-cl", "10.77.3.10")

SERVER = textwrap.dedent(
    """
    import socketserver, ssl, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    address, name, cert, key = sys.argv[1:5]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = (b"ok" if self.path == "/readyz" else name.encode())
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        def server_bind(self):
            # HTTPServer's own looks up the address's FQDN: a 5 s DNS timeout in a namespace.
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = address, 443

    server = Server((address, 443), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()
    """
)


def sweep() -> None:
    """Remove this test's namespaces and their processes (also what a killed run left)."""
    for ns in netns.list_netns():
        if ns.startswith(PREFIX):
            for pid in netns.netns_pids(ns):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            netns.run(["ip", "netns", "del", ns], check=False)


def self_signed(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tlb-backend")])
    now = datetime.datetime.now(datetime.timezone.utc)
    sans = [x509.IPAddress(ipaddress.ip_address(h.address)) for h in NODES.values()]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Router, bridges with gateways, node and client namespaces; yields a work directory."""
    sweep()
    work = tmp_path_factory.mktemp("tlb")
    try:
        netns.run(["ip", "netns", "add", ROUTER])
        netns.ns_run(ROUTER, ["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        cmds = ["link set lo up"]
        for bridge, gateway in BRIDGES.items():
            cmds += [f"link add {bridge} type bridge", f"addr add {gateway}/24 dev {bridge}", f"link set {bridge} up"]
        hosts = [*NODES.values(), CLIENT_HOST]
        for h in hosts:
            netns.run(["ip", "netns", "add", h.ns])
            cmds += [
                f"link add {h.veth} type veth peer name eth0 netns {h.ns}",
                f"link set {h.veth} master {h.bridge}",
                f"link set {h.veth} up",
            ]
        netns.run(["ip", "-n", ROUTER, "-batch", "-"], stdin="\n".join(cmds) + "\n")
        for h in hosts:
            inside = ["link set lo up", f"addr add {h.address}/24 dev eth0", "link set eth0 up",
                      f"route add default via {BRIDGES[h.bridge]}"]
            netns.run(["ip", "-n", h.ns, "-batch", "-"], stdin="\n".join(inside) + "\n")
        (work / "server.py").write_text(SERVER)
        self_signed(work)
        yield work
    finally:
        sweep()
    assert not [ns for ns in netns.list_netns() if ns.startswith(PREFIX)]


def listening(pid: int, address: str, port: int) -> bool:
    return lb._listening(pid, address, port)


class Servers:
    """The nodes' HTTPS servers: stop and start them one at a time."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, node: str) -> None:
        h = NODES[node]
        argv = ["ip", "netns", "exec", h.ns, sys.executable, str(self.work / "server.py"), h.address, node,
                str(self.work / "tls.crt"), str(self.work / "tls.key")]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs[node] = proc
        wait_for(lambda: proc.poll() is None and listening(proc.pid, h.address, 443), bool,
                 f"{node}'s HTTPS server listening", 10)

    def stop(self, node: str) -> None:
        proc = self.procs.pop(node)
        proc.kill()
        proc.wait(5)

    def stop_all(self) -> None:
        for node in list(self.procs):
            self.stop(node)


@pytest.fixture
def servers(topology: Path) -> Iterator[Servers]:
    s = Servers(topology)
    try:
        for node in NODES:
            s.start(node)
        yield s
    finally:
        s.stop_all()


def lb_spec(work: Path, **changes: Any) -> LoadBalancerSpec:
    fields: dict[str, Any] = {
        "netns": LB_NS, "router_ns": ROUTER, "bridge": "b-lb", "address": LB_ADDRESS, "prefix_len": 24,
        "gateway": BRIDGES["b-lb"], "port": 443, "backends": tuple(h.address for h in NODES.values()),
        "workdir": work / "lb", "check_interval_ms": INTERVAL_MS, **changes,
    }
    return LoadBalancerSpec(**fields)


@pytest.fixture
def balancer(topology: Path, servers: Servers) -> Iterator[dict[str, Any]]:
    record = lb.start(lb_spec(topology))
    try:
        wait_for(lambda: checked(record), lambda s: s == {"L7OK"}, "both backends' first checks passed", 10)
        yield record
    finally:
        lb.stop(record)


def checked(record: dict[str, Any]) -> set[str]:
    return {row["check_status"] for row in lb.stats(record) if row["pxname"] == lb.BACKEND and row["svname"] != "BACKEND"}


def get(path: str = "/", timeout: float = 5.0) -> str:
    """One HTTPS request from the client namespace to the load balancer, on a new connection."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with netns.entered(CLIENT):
        conn = http.client.HTTPSConnection(LB_ADDRESS, 443, timeout=timeout, context=context)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.status == 200, response.status
            return response.read().decode()
        finally:
            conn.close()


def address_of(node: str) -> str:
    return NODES[node].address


def until_state(record: dict[str, Any], node: str, state: str, timeout: float,
                since: float | None = None) -> tuple[float, list[str]]:
    """Seconds (from `since`, default now) until node's backend shows state, polled every 20 ms
    while another thread sends requests one at a time; their answers (or the error's name)."""
    started = time.monotonic() if since is None else since
    answers: list[str] = []
    done = threading.Event()

    def client() -> None:
        while not done.is_set():
            try:
                answers.append(get())
            except (OSError, AssertionError) as e:
                answers.append(type(e).__name__)
            time.sleep(0.02)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    try:
        while lb.backend_states(record)[address_of(node)] != state:
            if time.monotonic() - started > timeout:
                raise AssertionError(f"{node} not {state} after {timeout}s: {lb.backend_states(record)}")
            time.sleep(0.02)
        return time.monotonic() - started, answers
    finally:
        done.set()
        thread.join(10)


def test_requests_reach_both_backends_round_robin(balancer: dict[str, Any]) -> None:
    assert lb.backend_states(balancer) == {address_of("node-a"): "UP", address_of("node-b"): "UP"}
    assert get("/readyz") == "ok"
    answers = [get() for _ in range(10)]
    assert Counter(answers) == {"node-a": 5, "node-b": 5}, answers
    assert all(a != b for a, b in zip(answers, answers[1:])), f"not round robin: {answers}"


def test_stopped_backend_is_marked_down_and_requests_go_to_the_other(
    balancer: dict[str, Any], servers: Servers
) -> None:
    servers.stop("node-a")
    took, during = until_state(balancer, "node-a", "DOWN", timeout=5)
    print(f"\nstopped backend marked DOWN after {took:.2f}s ({INTERVAL_MS} ms checks, fall 2); "
          f"{len(during)} requests meanwhile: {Counter(during)}")
    assert took <= 2 * INTERVAL_MS / 1000 + 1.0, f"marked DOWN only after {took:.2f}s"
    # Before and after the mark, a refused connection is redispatched: no request fails.
    assert set(during) <= {"node-b"}, during
    after = [get() for _ in range(10)]
    assert after == ["node-b"] * 10
    assert lb.backend_states(balancer) == {address_of("node-a"): "DOWN", address_of("node-b"): "UP"}

    restarted = time.monotonic()
    servers.start("node-a")
    took, _ = until_state(balancer, "node-a", "UP", timeout=5, since=restarted)
    print(f"restarted backend UP again {took:.2f}s after its server was started (rise 1)")
    assert took <= INTERVAL_MS / 1000 + 1.0
    assert Counter(get() for _ in range(10)) == {"node-a": 5, "node-b": 5}


def test_blackholed_backend_is_marked_down(balancer: dict[str, Any]) -> None:
    """A zone outage drops packets instead of refusing them: the checks time out."""
    veth = NODES["node-a"].veth
    netns.ns_run(ROUTER, ["ip", "link", "set", veth, "down"])
    try:
        took, during = until_state(balancer, "node-a", "DOWN", timeout=10)
        print(f"\nblackholed backend marked DOWN after {took:.2f}s; {len(during)} requests meanwhile: {Counter(during)}")
        assert took <= 2 * INTERVAL_MS / 1000 + 2.5, f"marked DOWN only after {took:.2f}s"
        # Until the mark, connections sent to node-a wait out `timeout connect` (1 s) and are
        # redispatched to node-b; the one still connecting when node-a is marked DOWN is cut
        # by `on-marked-down shutdown-sessions` (the price of cutting dead established ones).
        failed = [a for a in during if a != "node-b"]
        assert len(failed) <= 1 and "node-a" not in during, during
        assert [get() for _ in range(6)] == ["node-b"] * 6
    finally:
        lifted = time.monotonic()
        netns.ns_run(ROUTER, ["ip", "link", "set", veth, "up"])
    took, _ = until_state(balancer, "node-a", "UP", timeout=10, since=lifted)
    print(f"blackhole lifted: UP again after {took:.2f}s")


def test_stop_removes_namespace_and_process(topology: Path, servers: Servers) -> None:
    record = lb.start(lb_spec(topology))
    assert json.loads(json.dumps(record)) == record
    assert {"pid", "start_ticks", "boot_id", "log", "config", "netns"} <= set(record)
    proc = ProcessRecord.from_dict(record)
    assert proc.alive()
    assert LB_NS in netns.list_netns()
    assert Path(record["config"]).is_file() and Path(record["log"]).is_file()

    # From another process, with nothing but the JSON record (as `harness down` would).
    subprocess.run([sys.executable, "-c", "import json, sys; from harness.kube import loadbalancer as lb; "
                    "lb.stop(json.loads(sys.argv[1]))", json.dumps(record)], check=True, timeout=30)
    assert not proc.alive()
    assert LB_NS not in netns.list_netns()
    router_links = netns.run(["ip", "-n", ROUTER, "-o", "link", "show"])
    assert record["veth"] not in router_links
    with pytest.raises(EnvironmentStateError, match="stats socket"):
        lb.backend_states(record)
    lb.stop(record)  # idempotent (and reaps the child here)
    lb.stop(record)


def test_bad_input(topology: Path) -> None:
    with pytest.raises(ConfigError, match="at least one backend"):
        lb_spec(topology, backends=())
    with pytest.raises(ConfigError, match="'10.77.1.999' is not an IPv4 address"):
        lb_spec(topology, backends=("10.77.1.10", "10.77.1.999"))
    with pytest.raises(ConfigError, match="load balancer address 'lb.example'"):
        lb_spec(topology, address="lb.example")
    with pytest.raises(ConfigError, match="not in the gateway's subnet"):
        lb_spec(topology, address="10.77.1.200")
    with pytest.raises(PrerequisiteError, match="apt-get install haproxy"):
        lb.start(lb_spec(topology), haproxy="/nonexistent/haproxy")
    # What the caller must provide is checked before anything is created.
    with pytest.raises(EnvironmentStateError, match="bridge b-nope does not exist in tlb-r"):
        lb.start(lb_spec(topology, bridge="b-nope"))
    with pytest.raises(EnvironmentStateError, match="router namespace tlb-nope does not exist"):
        lb.start(lb_spec(topology, router_ns="tlb-nope"))
    assert LB_NS not in netns.list_netns()
    netns.run(["ip", "netns", "add", LB_NS])
    try:
        with pytest.raises(EnvironmentStateError, match="exists already"):
            lb.start(lb_spec(topology))
        assert LB_NS in netns.list_netns(), "a namespace start() did not make must survive its failure"
    finally:
        netns.run(["ip", "netns", "del", LB_NS])
