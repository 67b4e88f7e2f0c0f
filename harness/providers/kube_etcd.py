"""An etcd cluster of a control plane on a seed, reached the way a platform team reaches it on a
real seed: through the seed's Kubernetes API, a port-forward to each member's pod (the kubelet of
the member's node carries it), from the harness's own machine.

Every client, probe, load and metrics scrape sees the members through these forwards, so a member
whose node the API server cannot reach is unreachable here too, as it would be for an operator.
A client standing inside a zone needs a vantage point there, which this view does not have.
"""

from __future__ import annotations

import http.client
from typing import TYPE_CHECKING

from harness.errors import CapabilityMissing, EnvironmentStateError
from harness.etcd_gateway import EtcdClient
from harness.kube import cluster
from harness.kube.portforward import PortForward
from harness.probes import placement
from harness.providers.base import Member, Seed
from harness.providers.etcd_view import EtcdView, read_metrics

if TYPE_CHECKING:
    from harness.config import Config

CLIENT_PORT = 2379  # etcd serves /metrics on its client port too


class KubeEtcd(EtcdView):
    """etcd cluster `name` (etcd-main, etcd-events) of the control plane in `namespace` on `seed`.

    Its members are taken once, while every member runs; a member's forward follows its pod by
    name wherever the scheduler puts it later. close() stops the forwards."""

    def __init__(self, config: Config, seed: Seed, namespace: str, name: str, zones: tuple[str, ...],
                 provider: str = "cluster") -> None:
        self.config, self.seed, self.namespace, self.name, self.zones = config, seed, namespace, name, zones
        self.provider = provider
        pods = placement.of(placement.observe(cluster.connect(seed.kube), namespace), name)
        missing = [p.name for p in pods if not (p.ip and p.node and p.zone and p.phase == "Running")]
        if not pods or missing:
            raise EnvironmentStateError(f"{name} in {namespace} is not running everywhere yet: {missing or 'no pods'}")
        self.forwards = {p.name: PortForward(seed.kube, namespace, p.name, CLIENT_PORT) for p in pods}
        self.members = tuple(
            Member(p.name, p.node, p.zone, self.forwards[p.name].url, f"http://{p.ip}:2380")  # type: ignore[arg-type]
            for p in pods
        )

    def client_netns(self, zone: str | None) -> str | None:
        """Outside every zone (None) is the harness's own machine, the only vantage point here."""
        if zone is not None:
            self.zone(zone)
            raise CapabilityMissing(f"the {self.provider} provider has no client vantage point in zone {zone!r}: it "
                                    f"reaches {self.name} through the seed's API from the harness's own machine")
        return None

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> EtcdClient:
        """A client of one member through its forward; `via_zone` must be None (see client_netns)."""
        self.client_netns(via_zone)
        return EtcdClient(self.member(member).client_url, None, timeout or self.config.timeouts.status_request)

    def metrics(self, member: str) -> str:
        port = self.forwards[self.member(member).name].local_port
        return read_metrics(http.client.HTTPConnection("127.0.0.1", port, timeout=self.config.timeouts.status_request * 4))

    def wait_healthy(self, timeout: float | None = None, members: list[str] | None = None,
                     max_lag: int = 20) -> object:
        return self.wait_members(timeout, members, max_lag)

    def close(self) -> None:
        for forward in self.forwards.values():
            forward.close()
