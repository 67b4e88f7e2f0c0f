"""An etcd cluster of a control plane on a seed, reached the way a platform team reaches it on a
real seed: through the seed's Kubernetes API, a port-forward to each member's pod (the kubelet of
the member's node carries it), from the harness's own machine.

Every client, probe, load and metrics scrape sees the members through these forwards, so a member
whose node the API server cannot reach is unreachable here too, as it would be for an operator.
A client standing in a zone goes through that zone's vantage point (harness.kube.vantage, a
relay pod created there on first use): its connections start in the zone and share its fate.
"""

from __future__ import annotations

import http.client
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.errors import EnvironmentStateError
from harness.etcd_gateway import EtcdClient
from harness.kube import cluster, etcd_tls, placement, vantage
from harness.kube.portforward import PortForward
from harness.netns import NsHTTPSConnection
from harness.topology import Member, Seed
from harness.providers.etcd_view import EtcdView, read_health, read_metrics

if TYPE_CHECKING:
    from harness.config import Config

CLIENT_PORT = 2379  # etcd serves /metrics on its client port too


class KubeEtcd(EtcdView):
    """etcd cluster `name` (etcd-main, etcd-events) of the control plane in `namespace` on `seed`.

    Its members are taken once, while every member runs; a member's forward follows its pod by
    name wherever the scheduler puts it later. close() stops the forwards (the vantage pods go
    with the control plane's namespace)."""

    def __init__(self, config: Config, seed: Seed, namespace: str, name: str, zones: tuple[str, ...],
                 provider: str = "cluster") -> None:
        self.config, self.seed, self.namespace, self.name, self.zones = config, seed, namespace, name, zones
        self.provider = provider
        pods = placement.of(placement.observe(cluster.connect(seed.kube), namespace), name)
        missing = [p.name for p in pods if not (p.ip and p.node and p.zone and p.phase == "Running")]
        if not pods or missing:
            raise EnvironmentStateError(f"{name} in {namespace} is not running everywhere yet: {missing or 'no pods'}")
        # The client certificate from the Secrets the members mount; private files, gone with this view.
        config.state_dir.mkdir(parents=True, exist_ok=True)
        self._tls_dir = tempfile.TemporaryDirectory(prefix=f"{namespace}-{name}-tls-", dir=config.state_dir)
        self.tls = etcd_tls.client_tls(cluster.connect(seed.kube), namespace, name, Path(self._tls_dir.name))
        self.scheme = "https" if self.tls else "http"
        self.forwards = {p.name: PortForward(seed.kube, namespace, p.name, CLIENT_PORT) for p in pods}
        self.members = tuple(
            Member(p.name, p.node, p.zone, self._url(self.forwards[p.name]), f"{self.scheme}://{p.ip}:2380")  # type: ignore[arg-type]
            for p in pods
        )
        self._lock = threading.Lock()
        self._via: dict[str, dict[str, PortForward]] = {}  # zone -> member -> forward through its vantage
        self._vantages: dict[str, str] = {}  # zone -> its relay pod
        self._reached: dict[tuple[str, str, int], PortForward] = {}  # (zone, host, port) -> forward

    def client_netns(self, zone: str | None) -> str | None:
        """Every client runs on the harness's own machine; one standing in a zone reaches the
        members through the zone's vantage point (client_url), made ready here."""
        if zone is not None:
            self._through(zone)
        return None

    def client_url(self, member: str, via_zone: str | None = None) -> str:
        """The URL a client standing in `via_zone` (None: outside every zone) uses for `member`."""
        m = self.member(member)
        return m.client_url if via_zone is None else self._url(self._through(via_zone)[m.name])

    def _url(self, forward: PortForward) -> str:
        return f"{self.scheme}://127.0.0.1:{forward.local_port}"

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> EtcdClient:
        """A client of one member, from `via_zone`'s vantage point or (None) from outside every zone."""
        return EtcdClient(self.client_url(member, via_zone), None, timeout or self.config.timeouts.status_request,
                          self.tls, connect_timeout=self.config.timeouts.forward_open)

    def reach(self, zone: str | None, host: str, port: int) -> tuple[str, int, str | None]:
        """Outside every zone: `host:port` itself; from a zone: a local forward through its vantage pod."""
        if zone is None:
            return host, port, None
        pod = self._vantage(zone)
        with self._lock:
            key = (zone, host, port)
            if key not in self._reached:
                self._reached[key] = PortForward(self.seed.kube, self.namespace, pod, vantage.RELAY_PORT,
                                                 connect_to=lambda: f"{host}:{port}")
            return "127.0.0.1", self._reached[key].local_port, None

    def _vantage(self, zone: str) -> str:
        self.zone(zone)
        with self._lock:
            if zone not in self._vantages:
                self._vantages[zone] = vantage.ensure(self.seed.kube, self.namespace, zone,
                                                      self.config.timeouts.member_ready)
            return self._vantages[zone]

    def _through(self, zone: str) -> dict[str, PortForward]:
        pod = self._vantage(zone)
        with self._lock:
            if zone not in self._via:
                self._via[zone] = {m.name: PortForward(self.seed.kube, self.namespace, pod, vantage.RELAY_PORT,
                                                       connect_to=self._target(m.name)) for m in self.members}
            return self._via[zone]

    def _target(self, member: str) -> Callable[[], str]:
        """The member's client address now (asked at each connection: a member that moved is found)."""
        def address() -> str:
            from kubernetes import client as k8s

            pod = k8s.CoreV1Api(cluster.connect(self.seed.kube)).read_namespaced_pod(member, self.namespace)
            return f"{pod.status.pod_ip}:{CLIENT_PORT}"

        return address

    def metrics(self, member: str) -> str:
        return read_metrics(self._client_listener(member))

    def member_health(self, member: str) -> tuple[bool, str]:
        return read_health(self._client_listener(member))

    def _client_listener(self, member: str) -> http.client.HTTPConnection:
        """The member's client port through its forward (etcd serves /metrics and /health there too)."""
        port, timeout = self.forwards[self.member(member).name].local_port, self.config.timeouts.status_request * 4
        if self.tls is None:
            return http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        return NsHTTPSConnection(self.tls.server_name or "127.0.0.1", port, timeout, None, self.tls.context(),
                                 dial=("127.0.0.1", port))

    def wait_healthy(self, timeout: float | None = None, members: list[str] | None = None,
                     max_lag: int = 20) -> object:
        return self.wait_members(timeout, members, max_lag)

    def close(self) -> None:
        for forward in [*self.forwards.values(), *(f for via in self._via.values() for f in via.values()),
                        *self._reached.values()]:
            forward.close()
        self._tls_dir.cleanup()
