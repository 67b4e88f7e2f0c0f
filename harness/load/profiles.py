"""Named loads: GEP-20's appendix rows and a Kubernetes-like mix, resolved against a live etcd
(which member is the leader decides the hosts and the client's zone)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import ConfigError
from harness.load.runner import LoadSpec
from harness.providers.base import EtcdCluster

RANGE_PREFIX = "/load/range/"
RANGE_KEYS = 5000


@dataclass(frozen=True)
class Profile:
    locust: str  # the locustfile's --load-profile
    rate: float
    target: str  # leader | follower | all
    client: str = "same"  # same: a client in the target's zone; other: in another zone
    watch: str | None = None  # where a watcher connects (follower), None: no watcher
    preload: int = 0  # keys of 1 KiB written under RANGE_PREFIX first
    users: int = 10
    description: str = ""


PROFILES: dict[str, Profile | None] = {
    "idle": None,
    "gep-put-leader": Profile("put", 100, "leader", description="100 PUT/s of 1 KiB sequential keys to the leader"),
    "gep-put-follower": Profile("put", 100, "follower", description="the same to a follower"),
    "gep-put-follower-remote": Profile("put", 100, "follower", client="other",
                                       description="the same through a follower in another zone than the client"),
    "gep-watch-follower": Profile("put", 500, "leader", watch="follower", users=20,
                                  description="500 PUT/s to the leader, a watcher on a follower"),
    "gep-range": Profile("range", 5, "follower", preload=RANGE_KEYS, users=2,
                         description=f"range GETs of {RANGE_KEYS} keys of 1 KiB from a follower"),
    "mixed": Profile("mixed", 1500, "all", users=30,
                     description="put, get, range, delete, txn and lease, Kubernetes-like"),
}


def profile(name: str) -> Profile | None:
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown load profile {name!r}; accepted: {', '.join(PROFILES)}") from None


def resolve(name: str, etcd: EtcdCluster, processes: int = 1) -> tuple[LoadSpec, str | None] | None:
    """The load spec and the client namespace it runs from (None: the harness's own); None for `idle`."""
    p = profile(name)
    if p is None:
        return None
    leader_name = etcd.leader(etcd.wait_healthy())
    leader = etcd.member(leader_name)
    follower = next(m for m in etcd.members if m.name != leader_name)
    hosts = {"leader": [leader], "follower": [follower], "all": list(etcd.members)}[p.target]
    zone = hosts[0].zone if p.client == "same" else next(z for z in etcd.zones if z != hosts[0].zone)
    spec = LoadSpec(p.locust, p.rate, tuple(etcd.client_url(m.name, zone) for m in hosts), users=p.users,
                    processes=processes, watch_hosts=(etcd.client_url(follower.name, zone),) if p.watch == "follower" else (),
                    key_prefix=RANGE_PREFIX if p.preload else "/load/", tls=etcd.tls)
    if p.preload:
        _preload(etcd, follower.zone, p.preload)
    return spec, etcd.client_netns(zone)


def _preload(etcd: EtcdCluster, zone: str, keys: int) -> None:
    """Write the keys a range profile reads, through the JSON gateway from the client's zone."""
    client = etcd.client(etcd.members[0].name, zone, timeout=5.0)
    try:
        pad = "x" * 1000
        for i in range(keys):
            client.put(f"{RANGE_PREFIX}{i:06d}", f"preload-{i}-{pad}")
    finally:
        client.close()
