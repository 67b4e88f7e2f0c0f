"""The harness's vocabulary for a control plane's place in the world: nodes, etcd members, how to
reach etcd and Kubernetes, the seed, and lookups over them. Value types only: every layer may use them,
and they import nothing of the harness but its errors."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError, see_docs

# What each environment's zones, nodes and members are called (the table of environments).
NAMES_PAGE = see_docs("guides/scenarios.md")


@dataclass(frozen=True)
class Node:
    name: str
    zone: str
    address: str
    host: str | None = None  # the physical host the node runs on (seed 004), when modelled


@dataclass(frozen=True)
class Member:
    """An etcd member and the node it runs on."""

    name: str
    node: str
    zone: str
    client_url: str
    peer_url: str


@dataclass(frozen=True)
class EtcdTls:
    """What a client of an etcd serving over TLS, and checking its clients' certificates, needs:
    the CA of the serving certificates and a client certificate signed by a CA the members trust.
    `server_name`: the name checked in the serving certificate where the address dialled is not
    in it (a port-forward on the harness's machine); None checks the address itself."""

    ca: Path
    cert: Path
    key: Path
    server_name: str | None = None

    def context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


@dataclass(frozen=True)
class KubeAccess:
    """How to reach a Kubernetes cluster: a kubeconfig file and a context in it (None: its current one)."""

    kubeconfig: Path
    context: str | None = None


@dataclass(frozen=True)
class Seed:
    """The cluster that hosts control planes, as the reference deployment needs it."""

    kube: KubeAccess
    storage_class: str | None  # None: the cluster's default StorageClass
    # True when no provisioner exists and the harness must create zonal volumes itself.
    static_volumes: bool = False
    # The local seed's node agents run etcd and kube-apiserver pods as real processes; the
    # shoot API is then reached through this load balancer address (from a client zone).
    shoot_api: str | None = None
    # Its nodes run the reference's etcd and kube-apiserver pods for real: the local seed's node
    # agents, whether the seed is handed over by the local provider or as a kubeconfig.
    real_pods: bool = False


class Topology:
    """Lookup helpers shared by environments; unknown names are clear errors."""

    zones: tuple[str, ...]
    nodes: tuple[Node, ...]
    members: tuple[Member, ...]

    def zone(self, name: str) -> str:
        if name not in self.zones:
            raise ConfigError(f"unknown zone {name!r}; this environment has zones: {', '.join(self.zones)} "
                              f"({NAMES_PAGE})")
        return name

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ConfigError(f"unknown node {name!r}; nodes: {', '.join(n.name for n in self.nodes)} ({NAMES_PAGE})")

    def member(self, name: str) -> Member:
        for member in self.members:
            if member.name == name:
                return member
        raise ConfigError(f"unknown etcd member {name!r}; members: {', '.join(m.name for m in self.members) or 'none'} "
                          f"({NAMES_PAGE})")

    def hosts(self) -> dict[str, list[Node]]:
        """Nodes per physical host (only nodes whose host is known)."""
        out: dict[str, list[Node]] = {}
        for n in self.nodes:
            if n.host:
                out.setdefault(n.host, []).append(n)
        return out

    def host(self, name: str) -> list[Node]:
        hosts = self.hosts()
        if name not in hosts:
            raise ConfigError(f"unknown host {name!r}; hosts: {', '.join(hosts) or 'none (this environment models no hosts)'} "
                              f"({NAMES_PAGE})")
        return hosts[name]

    def members_in(self, zone: str) -> list[Member]:
        self.zone(zone)
        return [m for m in self.members if m.zone == zone]

    def nodes_in(self, zone: str) -> list[Node]:
        self.zone(zone)
        return [n for n in self.nodes if n.zone == zone]

    def member_on(self, node: str) -> Member | None:
        self.node(node)
        return next((m for m in self.members if m.node == node), None)
