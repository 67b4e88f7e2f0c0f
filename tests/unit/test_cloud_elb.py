"""An ELB's HAProxy (harness.providers.local.cloud.elb): its shape read from moto's description, its
configuration accepted by the real haproxy, and registration through the runtime API of a real
haproxy on the loopback: a deregistered server's sessions are closed at once."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.kube import loadbalancer
from harness.providers.local.cloud import elb as cloud_elb
from harness.wait import wait_for

DESCRIPTION = {
    "LoadBalancerName": "a1b2",
    "ListenerDescriptions": [{"Listener": {"Protocol": "TCP", "LoadBalancerPort": 80, "InstanceProtocol": "TCP",
                                           "InstancePort": 30080}}],
    "HealthCheck": {"Target": "TCP:30080", "Interval": 5, "Timeout": 2, "UnhealthyThreshold": 2, "HealthyThreshold": 3},
    "Instances": [{"InstanceId": "i-1"}],
}


def test_the_shape_is_the_listeners_and_the_health_check() -> None:
    shape = cloud_elb.ElbShape.of(DESCRIPTION)
    assert shape == cloud_elb.ElbShape(((80, 30080),), "TCP", 30080, "/", 5, 2, 2, 3)
    http = cloud_elb.ElbShape.of({**DESCRIPTION, "HealthCheck": {**DESCRIPTION["HealthCheck"],
                                                                 "Target": "HTTP:10256/healthz"}})
    assert (http.check_protocol, http.check_port, http.check_path) == ("HTTP", 10256, "/healthz")


def test_haproxy_accepts_the_configuration(tmp_path: Path) -> None:
    haproxy = loadbalancer.find_haproxy()
    for target in ("TCP:30080", "HTTP:10256/healthz", "SSL:30443"):
        shape = cloud_elb.ElbShape.of({**DESCRIPTION, "HealthCheck": {**DESCRIPTION["HealthCheck"], "Target": target}})
        path = tmp_path / "haproxy.cfg"
        text = cloud_elb.config(shape, "127.0.0.1", {"zone-a-1": "10.0.1.11", "zone-b-1": "10.0.2.11"},
                                tmp_path / "s.sock")
        path.write_text(text)
        loadbalancer.check_config(haproxy, path)  # raises with haproxy's alerts
        assert "server zone-a-1 10.0.1.11:30080 check port" in text and " disabled" in text


def _echo_server() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(1024), b"")],
                             daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def test_deregistering_closes_the_sessions_at_once(tmp_path: Path) -> None:
    server, port = _echo_server()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        front = probe.getsockname()[1]
    description = {**DESCRIPTION, "ListenerDescriptions": [{"Listener": {"LoadBalancerPort": front, "InstancePort": port}}],
                   "HealthCheck": {**DESCRIPTION["HealthCheck"], "Target": f"TCP:{port}", "Interval": 1}}
    shape = cloud_elb.ElbShape.of(description)
    sock_path = tmp_path / "s.sock"
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(cloud_elb.config(shape, "127.0.0.1", {"node-1": "127.0.0.1"}, sock_path))
    proc = subprocess.Popen([loadbalancer.find_haproxy(), "-db", "-f", str(cfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    record = {"socket": str(sock_path)}
    try:
        wait_for(lambda: sock_path.exists(), bool, "haproxy's stats socket", 10)
        assert cloud_elb.server_states(record) == {"node-1": "MAINT"}  # not registered: no traffic
        cloud_elb.set_registered(record, shape, ["node-1"], [])
        wait_for(lambda: cloud_elb.server_states(record), lambda s: s == {"node-1": "UP"}, "node-1 up", 10)
        client = socket.create_connection(("127.0.0.1", front), 5)
        client.settimeout(5)
        client.sendall(b"hello\n")
        assert client.recv(100) == b"hello\n"
        cloud_elb.set_registered(record, shape, [], ["node-1"])
        started = time.monotonic()
        try:
            ended = client.recv(100)
        except ConnectionResetError:
            ended = b""
        assert ended == b"" and time.monotonic() - started < 2  # closed by the load balancer, not timed out
        assert cloud_elb.server_states(record) == {"node-1": "MAINT"}
        with pytest.raises(RuntimeError, match="refused"):
            cloud_elb.set_registered(record, shape, ["no-such-node"], [])
    finally:
        proc.terminate()
        proc.wait(10)
        server.close()
