"""A shoot control plane running for real on the local seed, as probes and checks see it: its
etcd clusters are EtcdMembers like the region's own, and its API is behind the load balancer."""

from __future__ import annotations

from typing import Any

from harness.errors import EnvironmentStateError
from harness.kube import cluster
from harness.probes import placement
from harness.providers.base import Member, Seed
from harness.providers.local.region import EtcdMembers, LocalEnvironment


class ShootEtcd(EtcdMembers):
    """One of the shoot's etcd clusters (etcd-main, etcd-events), its members where the scheduler
    put them. The member set is taken once, while every member runs; a member that moves keeps its
    address (its volume keeps it in its zone), so the view stays true across outages."""

    provider = "local"

    def __init__(self, env: LocalEnvironment, seed: Seed, namespace: str, name: str = "etcd-main") -> None:
        self.config = env.config
        self.names = env.names
        self.zones = env.zones
        self.nodes = env.nodes
        self.etcdctl = env.etcdctl
        self.name = name
        pods = placement.of(placement.observe(cluster.connect(seed.kube), namespace), name)
        missing = [p.name for p in pods if not (p.ip and p.node and p.zone and p.phase == "Running")]
        if not pods or missing:
            raise EnvironmentStateError(f"{name} in {namespace} is not running everywhere yet: {missing or 'no pods'}")
        self.members = tuple(
            Member(p.name, p.node, p.zone, f"http://{p.ip}:2379", f"http://{p.ip}:2380")  # type: ignore[arg-type]
            for p in pods
        )

    def wait_healthy(self, timeout: float | None = None, members: list[str] | None = None,
                     max_lag: int = 20) -> Any:
        return self.wait_members(timeout, members, max_lag)
