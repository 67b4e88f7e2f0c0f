"""The local cloud's classic load balancers made real: one HAProxy per ELB (moto's API holds what the
cloud controller asked for; this makes it carry traffic), run by the cloud's reconciler.

Each ELB gets a network namespace of its own on the region's load-balancer subnet (the bridge the
seed's own load balancer sits on), an address there (its DNS name, resolved: status.address), and
an HAProxy whose
- frontends are the ELB's listeners (TCP, LoadBalancerPort);
- servers are every node of the region, at its address and the listener's InstancePort, each
  started in maintenance: registering an instance makes its node's server ready, deregistering it
  puts the server back in maintenance and closes its sessions at once, as an ELB without
  connection draining does (the cloud controller turns draining on only when a Service asks);
- health checks are the ELB's HealthCheck: its target's protocol and port (TCP connect, or HTTP
  GET of its path expecting 200), Interval, Timeout, UnhealthyThreshold and HealthyThreshold. A
  server that fails them takes no new connection; its established ones are left alone, as a
  classic ELB leaves them.

A change of listeners or health check restarts the ELB's HAProxy (its connections go with it, and
the status counts the restart); a change of instances goes through HAProxy's runtime API and
touches only the servers it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.kube import loadbalancer

FIRST_HOST = 20  # ELB k's address: <prefix>.<LB_SUBNET>.<FIRST_HOST + k>


@dataclass(frozen=True)
class ElbShape:
    """What of an ELB's description its HAProxy's configuration is made from."""

    listeners: tuple[tuple[int, int], ...]  # (load balancer port, instance port)
    check_protocol: str  # TCP, HTTP, HTTPS, SSL
    check_port: int
    check_path: str
    interval_s: int
    timeout_s: int
    unhealthy: int
    healthy: int

    @classmethod
    def of(cls, description: dict[str, Any]) -> ElbShape:
        listeners = tuple(sorted((int(d["Listener"]["LoadBalancerPort"]), int(d["Listener"]["InstancePort"]))
                                 for d in description.get("ListenerDescriptions") or ()))
        check = description.get("HealthCheck") or {}
        target = str(check.get("Target") or (f"TCP:{listeners[0][1]}" if listeners else "TCP:80"))
        protocol, _, rest = target.partition(":")
        port, slash, path = rest.partition("/")
        return cls(listeners, protocol.upper(), int(port), (slash + path) if slash else "/",
                   int(check.get("Interval") or 30), int(check.get("Timeout") or 5),
                   int(check.get("UnhealthyThreshold") or 2), int(check.get("HealthyThreshold") or 10))


def config(shape: ElbShape, address: str, servers: dict[str, str], stats_socket: Path) -> str:
    """HAProxy's configuration for one ELB: a frontend and a backend per listener, a server per
    node (named after it), all in maintenance until registered."""
    lines = ["global", "    log stderr format raw local0 info", "    maxconn 4096",
             f"    stats socket {stats_socket} mode 600 level admin", "",
             "defaults", "    mode tcp", "    log global", "    option tcplog",
             # An ELB's idle timeout (60 s by default) would end the harness's quiet connections;
             # the harness's connections speak every half second, so a minute is plenty.
             "    timeout client 60s", "    timeout server 60s", f"    timeout check {shape.timeout_s}s", ""]
    check = f"check port {shape.check_port} inter {shape.interval_s}s fall {shape.unhealthy} rise {shape.healthy}"
    if shape.check_protocol in ("HTTPS", "SSL"):
        check += " check-ssl verify none"
    for lb_port, instance_port in shape.listeners:
        # The check's connect timeout is min(timeout connect, inter): the ELB's Timeout bounds it.
        lines += [f"frontend l{lb_port}", f"    bind {address}:{lb_port}", f"    default_backend p{lb_port}", "",
                  f"backend p{lb_port}", "    balance roundrobin", f"    timeout connect {shape.timeout_s}s"]
        if shape.check_protocol in ("HTTP", "HTTPS"):
            lines += [f"    option httpchk GET {shape.check_path}", "    http-check expect status 200"]
        lines += [f"    server {node} {ip}:{instance_port} {check} disabled" for node, ip in sorted(servers.items())]
        lines.append("")
    return "\n".join(lines)


def backends(shape: ElbShape) -> list[str]:
    return [f"p{lb_port}" for lb_port, _ in shape.listeners]


def set_registered(record: dict[str, Any], shape: ElbShape, added: list[str], removed: list[str]) -> None:
    """Registered nodes' servers ready (health checks decide from there); deregistered ones in
    maintenance with their sessions shut, at once."""
    for backend in backends(shape):
        for node in added:
            _answer(record, f"set server {backend}/{node} state ready")
        for node in removed:
            _answer(record, f"set server {backend}/{node} state maint")
            _answer(record, f"shutdown sessions server {backend}/{node}")


def _answer(record: dict[str, Any], line: str) -> None:
    answer = loadbalancer.command(record, line).strip()
    if answer:  # HAProxy answers these with nothing when they succeed
        raise RuntimeError(f"haproxy refused `{line}`: {answer}")


def server_states(record: dict[str, Any]) -> dict[str, str]:
    """Node -> its server's state in the ELB's first backend: UP, DOWN, MAINT (not registered), or
    a transition ("UP 1/2" is reported UP)."""
    rows = [r for r in loadbalancer.stats(record) if r.get("svname") not in ("FRONTEND", "BACKEND")]
    first = min((r["pxname"] for r in rows), default=None)
    return {r["svname"]: (r.get("status") or "").split(" ")[0] for r in rows if r["pxname"] == first}


def start(index: int, address: str, shape: ElbShape, servers: dict[str, str], netns: str, router: str, bridge: str,
          gateway: str, workdir: Path) -> dict[str, Any]:
    """The ELB's namespace and HAProxy, listening on every listener; its record."""
    spec = loadbalancer.LoadBalancerSpec(
        netns=netns, router_ns=router, bridge=bridge, address=address, prefix_len=24, gateway=gateway,
        port=shape.listeners[0][0], backends=tuple(servers.values()), workdir=workdir,
        backend_port=shape.listeners[0][1])
    return loadbalancer.start(spec, config=config(shape, address, servers, spec.socket_path))
