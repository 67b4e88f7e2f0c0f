"""The local region as every module of its provider reads it: the names of its namespaces,
interfaces and addresses, where its nodes and members go, its state file, and its etcd reached
from the zones' client namespaces (the view a shoot's etcd shares)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import netns
from harness.config import Config, RegionSpec
from harness.etcd_gateway import EtcdClient
from harness.providers.etcd_view import EtcdView, read_health, read_metrics
from harness.providers.state import StateBacked, state_path
from harness.topology import EtcdTls, KubeAccess, Member, Node


class Names:
    """Namespace, interface and address naming for one region (short enough for IFNAMSIZ)."""

    def __init__(self, spec: RegionSpec) -> None:
        self.spec = spec
        self.prefix = spec.name

    @property
    def router(self) -> str:
        return f"{self.prefix}-router"

    def node_ns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def client_ns(self, zone: str) -> str:
        return f"{self.prefix}-client-{zone}"

    def bridge(self, zone: str) -> str:
        return f"b-{zone}"

    def subnet(self, zone: str) -> str:
        return f"{self.spec.subnet_prefix}.{self.spec.zones.index(zone) + 1}.0/24"

    def gateway(self, zone: str) -> str:
        return f"{self.spec.subnet_prefix}.{self.spec.zones.index(zone) + 1}.1"

    def node_address(self, zone: str, index: int) -> str:
        return f"{self.spec.subnet_prefix}.{self.spec.zones.index(zone) + 1}.{11 + index}"

    def client_address(self, zone: str) -> str:
        return f"{self.spec.subnet_prefix}.{self.spec.zones.index(zone) + 1}.250"

    def host(self, zone: str, index: int) -> str | None:
        """The physical host of the zone's node `index` (round-robin), when hosts are modelled."""
        if self.spec.hosts_per_zone is None:
            return None
        return f"{zone}-h{index % self.spec.hosts_per_zone + 1}"

    @property
    def uplink(self) -> str:
        """The veth end in the harness's own namespace that reaches the router (the seed's side)."""
        return f"{self.prefix}-up"

    def owns(self, ns: str) -> bool:
        return ns.startswith(f"{self.prefix}-")


def plan(spec: RegionSpec, tls: bool = False) -> tuple[tuple[Node, ...], tuple[Member, ...]]:
    names = Names(spec)
    scheme = "https" if tls else "http"
    nodes = tuple(
        Node(name=f"{zone}-{i + 1}", zone=zone, address=names.node_address(zone, i), host=names.host(zone, i))
        for zone in spec.zones
        for i in range(spec.nodes_in(zone))
    )
    used: dict[str, int] = {}
    members = []
    for i, zone in enumerate(spec.member_zones()):
        node = next(n for n in nodes if n.zone == zone and n.name == f"{zone}-{used.get(zone, 0) + 1}")
        used[zone] = used.get(zone, 0) + 1
        members.append(
            Member(
                name=f"etcd-{i}",
                node=node.name,
                zone=zone,
                client_url=f"{scheme}://{node.address}:2379",
                peer_url=f"{scheme}://{node.address}:2380",
            )
        )
    return nodes, tuple(members)


def region_tls(directory: Path) -> EtcdTls:
    """The harness's client TLS to the region's members, from the certificates made at `up`."""
    from harness.kube.pki import etcd_pki_files

    files = etcd_pki_files(directory)
    return EtcdTls(files.ca, files.client_cert, files.client_key)


class EtcdMembers(EtcdView):
    """An etcd cluster whose members sit in the region's zones, reached from its client namespaces:
    the region's own members, or those of a shoot control plane the seed's scheduler placed.
    Probes, checks and validators work the same on both."""

    config: Config
    names: Names

    def client_netns(self, zone: str | None) -> str | None:
        """A zone's client namespace; outside every zone, the harness's own (None)."""
        return self.names.client_ns(self.zone(zone)) if zone is not None else None

    def reach(self, zone: str | None, host: str, port: int) -> tuple[str, int, str | None]:
        return host, port, self.client_netns(zone)

    def client_url(self, member: str, via_zone: str | None = None) -> str:
        """The member's own URL: a zone's client namespace (client_netns) reaches it as it is."""
        return self.member(member).client_url

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> EtcdClient:
        """A client for one member, opened from the client namespace of `via_zone`
        (default: the member's own zone, like a sidecar next to it)."""
        m = self.member(member)
        zone = self.zone(via_zone) if via_zone else m.zone
        return EtcdClient(m.client_url, self.names.client_ns(zone), timeout or self.config.timeouts.status_request, self.tls)

    def metrics(self, member: str) -> str:
        """The member's /metrics (its metrics listener, port 2381), read from its own zone."""
        return read_metrics(self._metrics_listener(member))

    def member_health(self, member: str) -> tuple[bool, str]:
        return read_health(self._metrics_listener(member))

    def _metrics_listener(self, member: str) -> netns.NsHTTPConnection:
        m = self.member(member)
        host = m.client_url.split("//")[1].split(":")[0]
        return netns.NsHTTPConnection(host, 2381, self.config.timeouts.status_request * 4, self.names.client_ns(m.zone))


class RegionRecord(StateBacked, EtcdMembers):
    """A local region as recorded in its state file: its configuration, plan, names and TLS."""

    provider = "local"

    def __init__(self, config: Config, state: dict[str, Any]) -> None:
        self.config = config
        self.state = state
        self.spec = RegionSpec(**{**state["spec"], "zones": tuple(state["spec"]["zones"])})
        self.names = Names(self.spec)
        self.tls = region_tls(Path(state["tls"])) if state.get("tls") else None
        self.nodes, self.members = plan(self.spec, self.tls is not None)
        self.zones = self.spec.zones
        self.path = state_path(config.state_dir, self.spec.name)

    @property
    def etcdctl(self) -> str:
        return str(self.state["etcd"]["etcdctl"])

    def kube(self) -> KubeAccess | None:
        record = self.state.get("kubernetes")
        return KubeAccess(Path(record["kubeconfig"])) if record else None
