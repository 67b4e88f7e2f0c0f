"""What every provider hands to faults, probes and steps: an Environment, and what it can do.

Faults, the fault runner, probes and `harness heal` talk to these protocols only; each
provider (local, cluster, kind) implements the capabilities it has, and a fault that
needs one the environment lacks says so through `available()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harness.errors import CapabilityMissing, ConfigError
from harness.topology import EtcdTls, KubeAccess, Member, Node, Seed

if TYPE_CHECKING:
    from harness.aws.access import AwsAccess
    from harness.config import Config
    from harness.etcd_gateway import EtcdClient, Status


class FaultLedger(Protocol):
    """The faults in force, each recorded before it is applied so that heal finds it.

    `durable`: the ledger outlives this process (a state file), so a fault gets a watchdog of its
    own and `harness heal` after a crash can undo it. A ledger in memory (the shoot's etcd seen
    inside the seed's region) is healed by its owner, in this process, and nothing else.
    """

    durable: bool

    def faults(self) -> list[dict[str, Any]]: ...
    def record_fault(self, entry: dict[str, Any]) -> None: ...
    def update_fault(self, fault_id: str, data: dict[str, Any]) -> None: ...
    def forget_fault(self, fault_id: str) -> None: ...


class Environment(FaultLedger, Protocol):
    """A running environment: its topology, its fault ledger and its health."""

    provider: str
    config: Config
    zones: tuple[str, ...]
    nodes: tuple[Node, ...]
    members: tuple[Member, ...]

    def zone(self, name: str) -> str: ...
    def node(self, name: str) -> Node: ...
    def member(self, name: str) -> Member: ...
    def kube(self) -> KubeAccess | None: ...

    def describe(self) -> dict[str, Any]:
        """What `harness status` shows: provider, zones, nodes, members, faults (JSON-able)."""

    def health(self) -> dict[str, Any]:
        """A JSON-able snapshot of what health means here (for the timeline)."""

    def wait_healthy(self, timeout: float | None = None) -> object: ...

    def sweep(self) -> list[str]:
        """Undo any fault effect left behind without a ledger entry (after a crash); says what it did."""


@runtime_checkable
class Vantages(Protocol):
    """Where a client of the harness stands: in a zone (on the local region, that zone's client
    network namespace), or outside every zone (None: the harness's own machine)."""

    def client_netns(self, zone: str | None) -> str | None:
        """The network namespace a client standing in `zone` runs in; None: the harness's own."""

    def reach(self, zone: str | None, host: str, port: int) -> tuple[str, int, str | None]:
        """Where a client standing in `zone` connects to reach `host:port`: an address, a port and
        the network namespace to connect from (None: the harness's own). Locally that is the target
        itself from the zone's namespace; on a seed, a local forward through the zone's vantage pod."""


def reach(env: object, zone: str | None, host: str, port: int) -> tuple[str, int, str | None]:
    """Where a client standing in `zone` of `env` connects to reach `host:port` (Vantages.reach)."""
    if not isinstance(env, Vantages):
        client_netns(env, zone)  # outside every zone is fine; a zone is a capability this env lacks
        return host, port, None
    return env.reach(zone, host, port)


def client_netns(env: object, zone: str | None) -> str | None:
    """Where a client standing in `zone` runs in `env`. Outside every zone (None) is the harness's
    own machine; a zone needs an environment with a vantage point there."""
    if zone is not None and not isinstance(env, Vantages):
        raise CapabilityMissing(f"this environment has no client vantage point in zone {zone!r}: its clients run "
                                "on the harness's own machine")
    return env.client_netns(zone) if isinstance(env, Vantages) else None


@runtime_checkable
class EtcdCluster(Vantages, Protocol):
    """An etcd cluster as observers see it: members placed in zones, each reached from a vantage
    point, their status and the leader they agree on, their metrics. The region's own etcd and a
    shoot control plane's etcd-main and etcd-events are each one; probes, steps and validators
    take this, never a provider's class."""

    config: Config
    zones: tuple[str, ...]
    members: tuple[Member, ...]
    tls: EtcdTls | None  # None: plain HTTP; else every client (probes, load, HashKV) uses it

    def zone(self, name: str) -> str: ...
    def member(self, name: str) -> Member: ...

    def client_url(self, member: str, via_zone: str | None = None) -> str:
        """The URL a client standing in `via_zone` (client_netns) uses for `member`: the member's
        own, or a local forward that opens each connection from that zone."""

    def client(self, member: str, via_zone: str | None = None, timeout: float | None = None) -> EtcdClient:
        """A client of one member, standing in `via_zone` (default: the member's own zone, or
        outside every zone where no process runs beside the member)."""

    def status(self, via_zone: str | None = None) -> dict[str, Status | str]:
        """Each member's status, or why it could not be read."""

    def leader(self, statuses: dict[str, Status | str] | None = None) -> str | None: ...

    def wait_healthy(self, timeout: float | None = None, members: list[str] | None = None,
                     max_lag: int = 20) -> dict[str, Status | str]: ...

    def metrics(self, member: str) -> str:
        """The member's Prometheus metrics text, read from its own zone; raises HarnessError when
        they cannot be read."""

    def member_health(self, member: str) -> tuple[bool, str]:
        """etcd's own verdict on the member: GET /health, read as `metrics` is (a kubelet's probe
        stands there too). (True, body) when it says healthy; (False, body or why it did not answer)."""


def zone_pair(src: str, dst: str) -> str:
    """How traffic from one zone to another is named, on the wire and in the metrics."""
    return f"{src}->{dst}"


@runtime_checkable
class ZoneTrafficCounters(Protocol):
    """Environments that count the bytes forwarded between each ordered pair of zones on the wire
    (the local region's router); a probe reads them, the environment keeps them."""

    def zone_pair_bytes(self) -> dict[str, int]:
        """Bytes forwarded so far per pair, keyed "zone-a->zone-b"."""


@runtime_checkable
class ShootEtcds(Protocol):
    """Environments whose seed runs control planes whose etcd clusters the harness can observe."""

    def shoot_etcd(self, seed: Seed, namespace: str, name: str) -> EtcdCluster:
        """The etcd cluster `name` (etcd-main, etcd-events) of the control plane in `namespace`."""


def shoot_etcd(env: object, seed: Seed, namespace: str, name: str) -> EtcdCluster:
    """The etcd cluster `name` of the control plane in `namespace`, as `env` reaches it."""
    if not isinstance(env, ShootEtcds):
        raise CapabilityMissing(f"the {getattr(env, 'provider', '')} environment cannot reach the etcd members of the "
                                f"control plane in {namespace}")
    return env.shoot_etcd(seed, namespace, name)


@runtime_checkable
class LoadBalancerTargets(Protocol):
    """Environments that can say how the shoot API's load balancer sees its targets (the local
    seed's HAProxy; on a cloud, the target group's health)."""

    def load_balancer_targets(self) -> dict[str, str]:
        """Target address -> its state as the load balancer's own health checks see it ("UP",
        "DOWN", ...); raises HarnessError when it cannot be read."""


@runtime_checkable
class ZoneNetwork(Protocol):
    """Environments that can cut a whole zone off the network and restore it."""

    def cut_zone(self, zone: str) -> dict[str, Any]: ...
    def restore_zone(self, zone: str, data: dict[str, Any]) -> None: ...

    def zone_cut_effect(self, zone: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence that the cut is in place (e.g. packets the router dropped), None while none is seen."""


@runtime_checkable
class NodeFailures(Protocol):
    """Environments that can fail single nodes; `node_failure_modes` says how (kill, freeze, link-down)."""

    node_failure_modes: tuple[str, ...]

    def fail_node(self, node: str, mode: str) -> dict[str, Any]: ...
    def restore_node(self, node: str, data: dict[str, Any]) -> None: ...

    def node_failure_effect(self, node: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence that the node failed as `data` says (its processes gone or stopped, its link
        down), None while that is not seen yet."""


@runtime_checkable
class MemberProcesses(Protocol):
    """Environments whose etcd members are processes the harness can kill and start."""

    def kill_member(self, member: str) -> int | None:
        """SIGKILL the member's process; returns its pid once it is seen gone (None: none ran)."""

    def member_running(self, member: str) -> bool: ...

    def start_member(self, member: str) -> int: ...


@runtime_checkable
class MemberSignals(Protocol):
    """Environments that can stop a member's process in place and let it go on (SIGSTOP/SIGCONT)."""

    def pause_member(self, member: str) -> int | None: ...
    def resume_member(self, member: str) -> None: ...
    def member_paused(self, member: str) -> bool: ...


@runtime_checkable
class MemberDisks(Protocol):
    """Environments whose members' data directories are filesystems of their own the harness can fill."""

    def fill_member_disk(self, member: str, leave_bytes: int) -> dict[str, Any]:
        """Take all but `leave_bytes` of the member's filesystem; the record heal gets back."""

    def free_member_disk(self, member: str, data: dict[str, Any]) -> None: ...

    def member_disk_free(self, member: str) -> int:
        """Bytes free on the member's filesystem now."""


@runtime_checkable
class MemberPower(Protocol):
    """Environments whose members' disks keep unsynced writes in memory, lost when the power goes."""

    def power_off_member(self, member: str) -> dict[str, Any]:
        """Kill the member and drop what its disk had not fsynced: {"pid", "dropped_bytes", "dropped_files"}.
        Starting the member again (MemberProcesses.start_member) powers its disk on first."""


@runtime_checkable
class MemberVolumes(Protocol):
    """Environments that can destroy or damage a member's volume, and bring the member back on an
    empty one."""

    def lose_member_data(self, member: str) -> dict[str, Any]:
        """Kill the member and its backup sidecar, delete its data: {"pid", "data_dir", "removed_bytes"}."""

    def corrupt_member_data(self, member: str) -> dict[str, Any]:
        """Stop the member and damage its backend database so that it cannot open it again."""

    def alter_member_value(self, member: str, value: bytes, altered: bytes) -> dict[str, Any]:
        """Stop the member and rewrite every stored copy of `value` in its backend database as
        `altered` (of the same length), so that it serves the altered value once started again:
        {"pid", "copies"} (0 copies: nothing changed)."""

    def replace_member(self, member: str) -> dict[str, Any]:
        """The member back on an empty volume as a new member of the cluster (removed and added
        again through a member that is up), catching up from the leader."""


@runtime_checkable
class VolumeBackings(Protocol):
    """Environments that destroy what backs a cluster's PersistentVolume (a cloud disk, the local
    seed's directory) once the volume is deleted: volume-loss on NAMESPACE/POD.
    `volume` is harness.kube.volumes.ClaimedVolume.to_dict()."""

    def volume_backing_refused(self, volume: dict[str, Any]) -> str | None:
        """Why its backing may not be destroyed (an EBS volume that did not opt in), or None."""

    def destroy_volume_backing(self, volume: dict[str, Any], run_id: str,
                               record: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Destroy it for good; what was done (JSON-able)."""


@runtime_checkable
class EtcdBackups(Protocol):
    """Environments whose etcd is backed up to an object store (seed 003): full and delta
    snapshots from a sidecar beside each member, and a restore of the whole cluster from them."""

    def backup_store(self) -> Any:
        """The cluster's store (harness.backup.store.BackupStore)."""

    def backup_sidecars(self) -> dict[str, dict[str, Any] | str]:
        """Each member's sidecar status (leading, last full and delta snapshots, failures), or why unreadable."""

    def take_snapshot(self, kind: str) -> dict[str, Any]:
        """An on-demand "full" or "delta" snapshot from the leading sidecar: {"snapshot", "revision"}."""

    def compact_backups(self) -> dict[str, Any]:
        """The store's newest full snapshot and the deltas after it made into a new full snapshot,
        uploaded: {"snapshot", "revision", "full", "deltas", "events"}."""

    def restore_from_backups(self, progress: Callable[[str], None] | None = None, deltas: bool = True) -> dict[str, Any]:
        """Every member's data made again from the store (full + deltas; `deltas=False`: the newest
        full snapshot alone), then started: what etcd-druid does after a permanent quorum loss.
        Returns figures: "revision" restored, "store_revision" (the newest the store held), seconds."""


@runtime_checkable
class CloudLoadBalancers(Protocol):
    """Environments whose cloud makes the load balancers of their seed's Services, through a cloud
    controller manager (KEP-3458's service controller)."""

    def start_cloud_controller(self, version: str | None = None) -> dict[str, Any]:
        """The controller of that release running (None: the current one), started on first use
        or in place of one of another release; its record says its "version" and whether it keeps
        NotReady nodes ("stable_node_set", KEP-3458)."""

    def load_balancer_nodes(self, namespace: str, service: str) -> list[str] | None:
        """The nodes the Service's load balancer holds, as the cloud API says; None while it has none."""

    def load_balancer_endpoint(self, namespace: str, service: str) -> tuple[str, int, str | None] | None:
        """Where a client on the internet reaches the Service's load balancer: (address, port, the
        network namespace to connect from, None for here); None while it has none."""

    def load_balancer_health(self, namespace: str, service: str) -> dict[str, str]:
        """Each registered node's state in the load balancer's own health checks: InService or
        OutOfService (DescribeInstanceHealth)."""


@runtime_checkable
class MachineControllers(Protocol):
    """Environments whose seed's nodes can be Machines of gardener's machine-controller-manager,
    each backed by an instance in the environment's cloud (GEP-20's machines in its tables)."""

    def start_machine_controllers(self, health_timeout_s: float, drain_timeout_s: float) -> str:
        """Every node a Machine, MCM running and every Machine Running; returns their namespace.
        `health_timeout_s`: how long a machine may be unhealthy before it is declared failed."""

    def stop_machine_controllers(self) -> list[str]:
        """Stop MCM and remove its Machines and the instances it made; what was done."""

    def machines(self) -> list[dict[str, Any]]:
        """Each Machine: {"name", "zone", "phase" (status.currentStatus.phase), "node", "deleting"}."""


@runtime_checkable
class SeedResourceManager(Protocol):
    """Environments whose seed can run Gardener's own gardener-resource-manager, so that its
    high-availability-config webhook decides the workloads of the reference's gardener form."""

    def start_resource_manager(self) -> bool:
        """Running on the seed with its webhooks registered; False when it already was."""

    def stop_resource_manager(self) -> list[str]:
        """Its webhook configurations removed (their failurePolicy is Fail), then the process
        stopped; what was done."""

    def kill_resource_manager(self) -> list[str]:
        """The process stopped with its webhook configurations left registered, as when its pods
        are gone from a seed: every call the seed's API server makes to its webhooks fails."""

    def resource_manager_state(self) -> dict[str, bool]:
        """{"running": the process runs, "registered": the seed calls its high-availability-config
        webhook}."""


@runtime_checkable
class SeedEtcdDruid(Protocol):
    """Environments whose seed can run Gardener's etcd-druid, so that the reference's etcds are
    gardenlet's Etcd resources and druid makes their StatefulSets."""

    def start_etcd_druid(self) -> bool:
        """Running on the seed with its CRDs registered; False when it already was."""

    def stop_etcd_druid(self) -> list[str]:
        """The process stopped; what was done."""

    def etcd_druid_running(self) -> bool:
        """Whether its process runs on the seed now."""


@runtime_checkable
class CloudRequestLog(Protocol):
    """Environments whose cloud API says what was asked of it (as CloudTrail does): which actions,
    signed with which key, when."""

    def cloud_requests(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The requests answered at or after `since` (unix time), oldest first: {"t", "service",
        "action", "key", "status"}."""


@runtime_checkable
class SeedBackupStore(Protocol):
    """Environments whose cloud holds the object store the seed's etcds back up to (Gardener's
    BackupBucket): a bucket, and the key pair of a user allowed that bucket and nothing else."""

    def seed_backup_store(self) -> Any:
        """The store (harness.backup.store.StoreSpec, its prefix empty: each etcd takes its own)."""


@dataclass(frozen=True)
class TaskEndpoint:
    """Where an etcd's operator tasks (seed 003) are created: the seed, the namespace, the etcd's
    name in spec.etcdName, and the executor's metrics (None: not known)."""

    kube: KubeAccess
    namespace: str
    etcd_name: str
    metrics_url: str | None = None


@runtime_checkable
class OperatorTasks(Protocol):
    """Environments whose seed runs DEP-05's EtcdOperatorTask resources for their etcd."""

    def task_endpoint(self) -> TaskEndpoint:
        """The task resource installed and an executor running (started on first use)."""


@runtime_checkable
class BackupStoreNetwork(Protocol):
    """Environments that can cut zones off from their etcd's backup store."""

    def cut_backup_store(self, zones: list[str], run_id: str) -> dict[str, Any]:
        """The store unreachable from `zones`; returns what restore_backup_store needs."""

    def backup_store_cut_effect(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence that the store is unreachable from every zone cut, or None."""

    def restore_backup_store(self, data: dict[str, Any]) -> None:
        """Reachable again; idempotent, and works from the fault's run id alone."""


@runtime_checkable
class MemberCpuWaits(Protocol):
    """Environments whose members run as processes on the harness's own machine, where the kernel
    counts how long they waited for a CPU: a latency the machine made long is told from etcd's own."""

    def members_cpu_waited(self) -> float | None:
        """Seconds so far in which at least one of the members' threads was ready to run but waited
        for a CPU; None where the machine keeps no such count."""


@runtime_checkable
class MemberFailpoints(Protocol):
    """Environments whose members were built with etcd's gofail failpoints and serve them."""

    def set_failpoint(self, member: str, name: str, action: str) -> None: ...
    def clear_failpoint(self, member: str, name: str) -> None: ...

    def failpoints(self, member: str) -> dict[str, str]:
        """The member's failpoints that are set (name -> action); raises HarnessError when unreachable."""


@runtime_checkable
class PeerNetwork(Protocol):
    """Environments that can cut one member's peer traffic (raft, snapshots) and leave its clients alone."""

    def cut_peer_traffic(self, member: str) -> dict[str, Any]: ...
    def restore_peer_traffic(self, member: str, data: dict[str, Any]) -> None: ...

    def peer_cut_effect(self, member: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence the member's peer traffic is being dropped, None while none is seen."""


PORTS = {"all": (), "peer": (2380,), "client": (2379,)}  # what a link impairment may be narrowed to


@dataclass(frozen=True)
class LinkImpairment:
    """What happens to packets on a path from one zone to another: all dropped (a cut), a share of
    them dropped at random, those larger than a size dropped (MTU trouble), those beyond a rate
    dropped (a policer: TCP backs off to it), or each held for a delay (± a uniform jitter);
    `port`: only etcd's peer or client traffic (not for a delay)."""

    loss_percent: float | None = None
    larger_than: int | None = None
    rate_kbytes: int | None = None
    port: str = "all"
    delay_ms: float | None = None
    jitter_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.port not in PORTS:
            raise ConfigError(f"unknown port {self.port!r}; accepted: {', '.join(PORTS)}")
        if self.loss_percent is not None and not 0 < self.loss_percent <= 100:
            raise ConfigError(f"a loss is a percentage above 0 and up to 100, got {self.loss_percent}")
        if self.larger_than is not None and not 28 <= self.larger_than < 65535:
            raise ConfigError(f"a packet size is 28 to 65534 bytes (an IP header and up), got {self.larger_than}")
        if self.rate_kbytes is not None and self.rate_kbytes < 1:
            raise ConfigError(f"a rate limit is at least 1 KiB/s, got {self.rate_kbytes}")
        if self.delay_ms is not None and not (0 < self.delay_ms <= 10_000 and 0 <= self.jitter_ms <= self.delay_ms):
            raise ConfigError(f"a delay is 0 to 10000 ms and its jitter 0 up to the delay; got {self.delay_ms} ms "
                              f"± {self.jitter_ms} ms")
        if self.delay_ms is not None and self.port != "all":
            raise ConfigError("a delay holds every packet of its paths; --port does not apply to it")
        if sum(x is not None for x in (self.loss_percent, self.larger_than, self.rate_kbytes, self.delay_ms)) > 1:
            raise ConfigError("one impairment per fault: a loss, a size, a rate or a delay (compose faults for more)")


@runtime_checkable
class ZoneLinks(Protocol):
    """Environments that can impair the paths between zones one ordered pair at a time (a
    router between them): one-way cuts, partial partitions, loss, MTU trouble, rate limits."""

    def impair_links(self, paths: Sequence[tuple[str, str]], impairment: LinkImpairment,
                     run_id: str) -> dict[str, Any]: ...
    def restore_links(self, data: dict[str, Any]) -> None: ...

    def links_effect(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence packets on the paths are being dropped (per path), None while none is seen."""


@runtime_checkable
class Cloud(Protocol):
    """Environments that live in an AWS account (real, or the local region's local cloud)."""

    def aws(self) -> AwsAccess | None:
        """How to reach the account, or None when this environment has no cloud configured."""


@runtime_checkable
class RoutedCloud(Protocol):
    """A cloud whose network ACLs a router of the environment enforces (the local region's local
    cloud), so that an ACL's effect can be seen on the wire, not only in the API."""

    def acl_effect(self, zone: str, acl_ids: Collection[str]) -> dict[str, Any] | None:
        """Evidence that the zone's traffic is judged by one of `acl_ids` and was dropped; None before."""


@runtime_checkable
class NodeInstances(Protocol):
    """A cloud where nothing else would give a node whose instance was terminated a new one (the
    local cloud; on AWS that is the machine controller's job, not the harness's)."""

    def replace_terminated_instance(self, instance_id: str) -> str | None:
        """The node that stood on `instance_id`, terminated, on a new instance and running again;
        the new instance's id, None when `instance_id` is no node's or was not terminated."""


class Provider(Protocol):
    name: str

    def up(self) -> Environment: ...
    def attach(self) -> Environment: ...

    def left_to_heal(self) -> Environment | None:
        """The environment whose faults and deployed references the caller heals and removes
        before `down` (harness.teardown): None when there is none (never brought up, a kind cluster
        deleted outside the harness) or when `down` takes every fault effect with it (the local
        region: its namespaces, processes and cloud go)."""

    def down(self) -> list[str]:
        """Remove the environment, or on a cluster the harness did not create only its record.
        Call harness.teardown.take_down, which heals and undeploys first."""

    def seed(self, env: Environment) -> Seed:
        """The seed cluster of `env`, started first where the provider starts it (local)."""


# What a provider may also do; the plugin and the CLI check with isinstance, never by provider name.

@runtime_checkable
class Reclaimable(Protocol):
    """A provider whose environment a run that died may have left behind under the same name (the
    local region): the next run removes it first, unless a live process still owns it."""

    def reclaim(self) -> list[str]:
        """Remove what a dead owner left and say what was there ([] when nothing); raise
        EnvironmentStateError, removing nothing, when a live process owns it."""


@runtime_checkable
class Replaceable(Protocol):
    """A provider that can give a fresh environment in place of one a scenario left unsound."""

    def replace(self) -> Environment:
        """Take the environment down and bring a fresh one up."""


@runtime_checkable
class FreshEnvironments(Protocol):
    """A provider that gives a scenario environments of its own, of any shape (the local region)."""

    def fresh(self, name: str, etcd: dict[str, Any] | None = None, **shape: Any) -> Provider:
        """A provider of a new environment named `name`, shaped as this one but for `shape` (e.g.
        members=5, layout="single-zone") and the `etcd` settings; not up yet."""


@runtime_checkable
class CloudStarter(Protocol):
    """A provider that starts the environment's cloud itself, on first use (the local cloud)."""

    def cloud(self, env: Environment) -> AwsAccess:
        """The environment's AWS account, started if it is not running yet."""


@runtime_checkable
class RunFacts(Protocol):
    """An environment that can say, as a run's JUnit properties and report, what its verdicts are
    about: its etcd release and binary, the medium etcd's data is on, the Kubernetes it pins."""

    def run_facts(self) -> dict[str, str]: ...
