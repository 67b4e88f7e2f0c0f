"""What every provider hands to faults, probes and steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from harness.errors import ConfigError


@dataclass(frozen=True)
class Node:
    name: str
    zone: str
    address: str


@dataclass(frozen=True)
class Member:
    """An etcd member and the node it runs on."""

    name: str
    node: str
    zone: str
    client_url: str
    peer_url: str


class Environment(Protocol):
    zones: tuple[str, ...]
    nodes: tuple[Node, ...]
    members: tuple[Member, ...]

    def zone(self, name: str) -> str: ...
    def node(self, name: str) -> Node: ...
    def member(self, name: str) -> Member: ...


class Provider(Protocol):
    def up(self) -> Environment: ...
    def down(self) -> None: ...


class Topology:
    """Lookup helpers shared by environments; unknown names are clear errors."""

    zones: tuple[str, ...]
    nodes: tuple[Node, ...]
    members: tuple[Member, ...]

    def zone(self, name: str) -> str:
        if name not in self.zones:
            raise ConfigError(f"unknown zone {name!r}; this environment has zones: {', '.join(self.zones)}")
        return name

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise ConfigError(f"unknown node {name!r}; nodes: {', '.join(n.name for n in self.nodes)}")

    def member(self, name: str) -> Member:
        for member in self.members:
            if member.name == name:
                return member
        raise ConfigError(f"unknown etcd member {name!r}; members: {', '.join(m.name for m in self.members)}")

    def members_in(self, zone: str) -> list[Member]:
        self.zone(zone)
        return [m for m in self.members if m.zone == zone]

    def nodes_in(self, zone: str) -> list[Node]:
        self.zone(zone)
        return [n for n in self.nodes if n.zone == zone]

    def member_on(self, node: str) -> Member | None:
        self.node(node)
        return next((m for m in self.members if m.node == node), None)
