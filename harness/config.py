"""Configuration, built once (CLI flags, environment, TOML file) into frozen objects.

Only `load_config` reads the environment; everything below it takes values as arguments.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from harness.errors import ConfigError, see_docs

LAYOUTS = ("multi-zone", "single-zone")
DEFAULT_ZONES = ("zone-a", "zone-b", "zone-c")


@dataclass(frozen=True)
class Timeouts:
    """Every timeout of the harness, in seconds, in one typed place."""

    region_up: float = 30.0
    member_ready: float = 20.0
    # A fault whose inject hangs becomes an error and is healed: a guard on the harness's
    # own calls, not a verdict. An AWS zone outage is several API calls, which on a saturated
    # machine (the local cloud) or through AWS's retries took over 10 s.
    fault_apply: float = 30.0
    fault_effect: float = 10.0  # after a fault is applied, until its effect is observed in place
    heal: float = 30.0
    recovery: float = 30.0
    probe_request: float = 0.25
    status_request: float = 0.5
    # Opening a connection through a port-forward of the seed's API (the cluster provider's route to
    # a member): the harness's path, not the system's, and on a busy machine slower than a request.
    forward_open: float = 3.0
    command: float = 10.0
    deploy: float = 90.0  # reference control plane applied until every pod is placed or reported unschedulable
    # node-drain: how long evictions a PodDisruptionBudget refuses are retried. Past Kubernetes's own
    # DeletionTimeout (2 min): a StatefulSet pod evicted and made again under its name before the
    # disruption controller saw it terminating stays in the budget's disruptedPods, unhealthy, that long.
    drain: float = 150.0
    kube_request: float = 10.0
    # Every fault heals itself after this long, even when the harness is gone (its watchdog).
    fault_max_duration: float = 900.0


ETCD_LOG_LEVELS = ("debug", "info", "warn", "error", "panic", "fatal")


@dataclass(frozen=True)
class EtcdSettings:
    binary: str | None = None  # a binary of your own (e.g. Debian's 3.4: /usr/bin/etcd); None: `version`
    version: str | None = None  # a release built from the Go module proxy (harness.etcd_builds); None: pinned
    failpoints: bool = False  # built with etcd's gofail failpoints, served on each member's GOFAIL_HTTP
    snapshot_count: int | None = None  # --snapshot-count (None: etcd's default)
    # --backend-batch-interval: how often the backend commits (None: etcd's 100 ms). Shorter means
    # more commits landing in the middle of an apply, the window some crash bugs need.
    backend_batch_interval_ms: int | None = None
    quota_backend_mib: int | None = None  # --quota-backend-bytes in MiB (None: etcd's 2 GiB)
    # --unsafe-no-fsync: etcd acknowledges writes it never fsyncs. Only for showing what a power
    # loss (member-power-loss) then takes: the acknowledged writes with it.
    unsafe_no_fsync: bool = False
    etcdctl: str | None = None  # None: next to the etcd binary, else on PATH
    heartbeat_ms: int = 100
    election_ms: int = 1000
    pre_vote: bool = True
    # Clients and peers over TLS, each side checking the other's certificate (as GEP-20's figures
    # were measured and etcd-druid runs it); the region makes its own CA at `up`.
    tls: bool = False
    # --log-level (None: etcd's info). "debug" adds raft's own account of every rejected append,
    # which benchmarks/catch_up.py counts; it logs every applied entry too, so it costs CPU.
    log_level: str | None = None

    def __post_init__(self) -> None:
        if self.log_level is not None and self.log_level not in ETCD_LOG_LEVELS:
            raise ConfigError(f"[etcd] log_level is one of {', '.join(ETCD_LOG_LEVELS)} (etcd's --log-level), "
                              f"got {self.log_level!r}")
        q = self.quota_backend_mib
        if q is not None and (isinstance(q, bool) or not isinstance(q, int) or not 1 <= q <= 8192):
            raise ConfigError(f"[etcd] quota_backend_mib is the backend's quota in MiB, 1-8192 (etcd's default: 2048), "
                              f"got {q!r}")


MIN_MEMBER_DISK_MIB = 160  # etcd's write-ahead log: a 64 MiB segment, and the next one preallocated


@dataclass(frozen=True)
class RegionSpec:
    """Shape of the embedded local region."""

    name: str = "hh"
    zones: tuple[str, ...] = DEFAULT_ZONES
    nodes_per_zone: int | None = None  # None: 2, or as many as the layout needs in its busiest zone
    # Nodes in each zone, in zone order, where zones differ (the spread findings' 3/2/1 seed);
    # empty: nodes_per_zone in every zone.
    zone_nodes: tuple[int, ...] = ()
    hosts_per_zone: int | None = None  # None: hosts not modelled; else nodes share hosts round-robin (seed 004)
    members: int = 3
    layout: str = "multi-zone"
    subnet_prefix: str = "10.77"  # zone i gets <prefix>.<i+1>.0/24 inside the region's own namespaces
    # etcd's data on a real filesystem (paths.disk_data_dir) instead of tmpfs, where fsync costs
    # nothing and a killed process's unsynced writes survive in the page cache.
    data_on_disk: bool = False
    # > 0: each member's data directory is a filesystem of its own of this many MiB (tmpfs), which
    # the member-disk-full fault fills; 0: every member's data shares the region's filesystem.
    member_disk_mib: int = 0
    # True: each member's data directory is served by powerloss-fs, which holds every write until
    # it is fsynced; the member-power-loss fault drops what was not (a power cut, not a crash).
    power_loss_fs: bool = False
    # True: a backup sidecar beside each member takes full snapshots every full_snapshot_period_s
    # and delta snapshots every delta_snapshot_period_s into a bucket of the region's local cloud.
    backups: bool = False
    full_snapshot_period_s: float = 3600.0
    delta_snapshot_period_s: float = 5.0

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise ConfigError(f"unknown layout {self.layout!r}; accepted: {', '.join(LAYOUTS)}")
        if self.members not in (1, 3, 5):
            raise ConfigError(f"members must be 1, 3 or 5 (an odd etcd cluster size), got {self.members}")
        if not self.zones or len(set(self.zones)) != len(self.zones):
            raise ConfigError(f"zones must be a non-empty list of distinct names, got {list(self.zones)}")
        if len(self.zones) > 9:
            raise ConfigError(f"at most 9 zones are supported, got {len(self.zones)}")
        if self.member_disk_mib and not MIN_MEMBER_DISK_MIB <= self.member_disk_mib <= 4096:
            raise ConfigError(f"member_disk_mib must be 0 (no disk of its own) or {MIN_MEMBER_DISK_MIB}-4096 MiB (etcd "
                              f"preallocates its write-ahead log 64 MiB at a time, the next segment too), got "
                              f"{self.member_disk_mib}")
        if self.member_disk_mib and self.data_on_disk:
            raise ConfigError("member_disk_mib gives each member a tmpfs of its own; it cannot be combined with "
                              "data_on_disk (one real filesystem for all)")
        if self.power_loss_fs and self.member_disk_mib:
            raise ConfigError("power_loss_fs serves each member's data directory from a filesystem of its own already; "
                              "it cannot be combined with member_disk_mib (a tmpfs per member)")
        if not 0.1 <= self.delta_snapshot_period_s <= 3600:
            raise ConfigError(f"delta_snapshot_period_s must be 0.1-3600 seconds, got {self.delta_snapshot_period_s}")
        if not 1 <= self.full_snapshot_period_s <= 7 * 86400:
            raise ConfigError(f"full_snapshot_period_s must be 1 second to 7 days, got {self.full_snapshot_period_s}")
        for zone in self.zones:
            if not zone.replace("-", "").isalnum() or len(zone) > 10:
                raise ConfigError(f"zone name {zone!r} must be alphanumeric with dashes, at most 10 characters")
        if not self.name.isalnum() or len(self.name) > 4:
            raise ConfigError(f"region name {self.name!r} must be alphanumeric, at most 4 characters (it prefixes namespace names)")
        needed = self.member_zones()
        busiest = max(needed.count(z) for z in set(needed))
        if self.zone_nodes:
            object.__setattr__(self, "zone_nodes", tuple(self.zone_nodes))
            if len(self.zone_nodes) != len(self.zones) or not all(
                    isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 20 for n in self.zone_nodes):
                raise ConfigError(f"zone_nodes gives the nodes of each zone in zone order, 1-20 each, "
                                  f"{len(self.zones)} numbers for zones {list(self.zones)}; got {list(self.zone_nodes)}")
            short = [z for z, n in zip(self.zones, self.zone_nodes) if needed.count(z) > n]
            if short:
                raise ConfigError(f"{self.members} members in layout {self.layout} need "
                                  f"{', '.join(f'{needed.count(z)} node(s) in {z}' for z in short)}; zone_nodes is "
                                  f"{list(self.zone_nodes)}")
            object.__setattr__(self, "nodes_per_zone", max(self.zone_nodes))
        if self.nodes_per_zone is None:
            object.__setattr__(self, "nodes_per_zone", max(2, busiest))
        assert self.nodes_per_zone is not None
        if self.nodes_per_zone < 1 or self.nodes_per_zone > 20:
            raise ConfigError(f"nodes_per_zone must be between 1 and 20, got {self.nodes_per_zone}")
        if self.hosts_per_zone is not None and not 1 <= self.hosts_per_zone <= self.nodes_per_zone:
            raise ConfigError(
                f"hosts_per_zone must be between 1 and nodes_per_zone ({self.nodes_per_zone}), got {self.hosts_per_zone}"
            )
        if busiest > self.nodes_per_zone:
            raise ConfigError(
                f"{self.members} members in layout {self.layout} need {busiest} nodes in one zone, "
                f"but nodes_per_zone is {self.nodes_per_zone}; raise nodes_per_zone"
            )

    def member_zones(self) -> list[str]:
        """Zone of each etcd member, in member order (GEP-20 case #1 or #2)."""
        if self.layout == "single-zone":
            return [self.zones[0]] * self.members
        return [self.zones[i % len(self.zones)] for i in range(self.members)]

    def nodes_in(self, zone: str) -> int:
        """How many nodes the zone has."""
        assert self.nodes_per_zone is not None
        return self.zone_nodes[self.zones.index(zone)] if self.zone_nodes else self.nodes_per_zone


PROVIDER_NAMES = ("local", "cluster", "kind")


@dataclass(frozen=True)
class ProviderSettings:
    """Which environment to run against, and how to reach a cluster that already exists."""

    name: str = "local"
    # The kubeconfig the cluster provider reads, kind writes, and `harness up --kubernetes`
    # merges the local seed's context into. None: $KUBECONFIG's first file, then ~/.kube/config.
    kubeconfig: str | None = None
    context: str | None = None  # cluster: None means the kubeconfig's current context
    # StorageClass for etcd's zonal volumes; None: the cluster's default. A class without a
    # provisioner (kubernetes.io/no-provisioner) gets volumes made by the harness.
    storage_class: str | None = None
    kind_cluster: str = "ha-harness"
    kind_node_image: str = "kindest/node:v1.33.1"
    kind_workers_per_zone: int = 2

    def __post_init__(self) -> None:
        if self.name not in PROVIDER_NAMES:
            raise ConfigError(f"unknown provider {self.name!r}; accepted: {', '.join(PROVIDER_NAMES)}")
        if not 1 <= self.kind_workers_per_zone <= 10:
            raise ConfigError(f"kind_workers_per_zone must be between 1 and 10, got {self.kind_workers_per_zone}")


@dataclass(frozen=True)
class AwsSettings:
    """An AWS account and VPC for the AWS faults of a cluster reached by kubeconfig ([aws]).

    The local region needs none of this: it brings its own local cloud. Credentials come from
    boto3's chain or a named profile, never from this file; `machine_profile` is the profile of
    the machine controller's credentials (what revocation revokes and the machine probe uses).
    """

    region: str | None = None
    vpc_id: str | None = None
    zones: Mapping[str, str] = field(default_factory=dict)  # zone name -> availability zone
    profile: str | None = None
    endpoint_url: str | None = None
    machine_principal: str | None = None
    machine_profile: str | None = None
    image_id: str | None = None
    instance_type: str = "t3.micro"
    opted_in: tuple[str, ...] | None = None  # resource ids/names allowed besides the ha-harness/chaos tag

    def __post_init__(self) -> None:
        if (self.region is None) != (self.vpc_id is None):
            raise ConfigError("[aws] needs both region and vpc_id (or neither)")
        if self.opted_in is not None:
            object.__setattr__(self, "opted_in", tuple(self.opted_in))

    @property
    def configured(self) -> bool:
        return self.region is not None


@dataclass(frozen=True)
class Config:
    region: RegionSpec = field(default_factory=RegionSpec)
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    aws: AwsSettings = field(default_factory=AwsSettings)
    etcd: EtcdSettings = field(default_factory=EtcdSettings)
    timeouts: Timeouts = field(default_factory=Timeouts)
    state_dir: Path = Path("/tmp/ha-harness")
    data_dir: Path = Path("/tmp/ha-harness/data")
    disk_data_dir: Path = Path("/var/tmp/ha-harness/data")
    reports_dir: Path = Path("reports")


def _default_dirs(uid: int) -> tuple[Path, Path]:
    state = Path("/run/ha-harness") if uid == 0 else Path(f"/tmp/ha-harness-{uid}")
    # etcd fsyncs every write; tmpfs keeps the measured timings about the network, not the disk.
    shm = Path("/dev/shm")
    data = (shm / f"ha-harness-{uid}") if shm.is_dir() and os.access(shm, os.W_OK) else state / "data"
    return state, data


def _section(cls: type, raw: Mapping[str, Any], where: str) -> dict[str, Any]:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in [{where}]; accepted: {sorted(known)} "
                          f"({see_docs('reference/configuration.md')})")
    out = dict(raw)
    if cls is RegionSpec and "zones" in out:
        out["zones"] = tuple(out["zones"])
    return out


# Command-line options that set configuration, by their names in the CLI and in the pytest plugin:
# both read them through this one table (option_overrides), each passing the options it has.
OPTION_KEYS: dict[str, str] = {
    "name": "region.name", "region_name": "region.name",
    "provider": "provider.name", "kubeconfig": "provider.kubeconfig",
    "context": "provider.context", "kube_context": "provider.context",
    "storage_class": "provider.storage_class",
    "etcd_bin": "etcd.binary", "etcd_version": "etcd.version",
    "zones": "region.zones", "members": "region.members", "layout": "region.layout",
    "nodes_per_zone": "region.nodes_per_zone", "hosts_per_zone": "region.hosts_per_zone",
    "data_on_disk": "region.data_on_disk", "member_disk_mib": "region.member_disk_mib",
    "power_loss_fs": "region.power_loss_fs", "backups": "region.backups",
    "full_period": "region.full_snapshot_period_s", "delta_period": "region.delta_snapshot_period_s",
}


def option_overrides(options: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration overrides (load_config's) of command-line options by name; an option that
    is None or empty was not given. Zones may be given comma-separated."""
    out: dict[str, Any] = {}
    for name, value in options.items():
        if value is None or value == "":
            continue
        key = OPTION_KEYS[name]
        out[key] = zone_list(value) if key == "region.zones" and isinstance(value, str) else value
    return out


def zone_list(text: str) -> list[str]:
    """Zones given comma-separated."""
    return [z.strip() for z in text.split(",") if z.strip()]


def load_config(
    path: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Build the configuration: defaults < TOML file < environment < explicit overrides.

    Overrides use dotted keys: {"region.members": 5, "etcd.binary": "/opt/etcd"}.
    Environment: ETCD_BIN, HARNESS_CONFIG (file path), HARNESS_STATE_DIR, HARNESS_OUTER_UID (set by rootless).
    """
    env = os.environ if environ is None else environ
    raw: dict[str, dict[str, Any]] = {"region": {}, "provider": {}, "aws": {}, "etcd": {}, "timeouts": {}, "paths": {}}
    path = path or (Path(env["HARNESS_CONFIG"]) if env.get("HARNESS_CONFIG") else None)
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
        unknown = sorted(set(data) - set(raw))
        if unknown:
            raise ConfigError(f"unknown section(s) {unknown} in {path}; accepted: {sorted(raw)} "
                              f"({see_docs('reference/configuration.md')})")
        for key, value in data.items():
            if not isinstance(value, dict):
                raise ConfigError(f"[{key}] in {path} must be a table")
            raw[key].update(value)
    if env.get("ETCD_BIN"):
        raw["etcd"]["binary"] = env["ETCD_BIN"]
    if env.get("HARNESS_STATE_DIR"):
        raw["paths"]["state_dir"] = env["HARNESS_STATE_DIR"]
    if env.get("HARNESS_PROVIDER"):
        raw["provider"]["name"] = env["HARNESS_PROVIDER"]
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        if section not in raw or not key:
            raise ConfigError(f"unknown setting {dotted!r}; use region.*, provider.*, aws.*, etcd.*, timeouts.* or paths.*")
        raw[section][key] = value

    # Inside the rootless namespaces we are uid 0; paths belong to the user who ran us.
    uid = int(env.get("HARNESS_OUTER_UID", os.getuid()))
    state_dir, data_dir = _default_dirs(uid)
    paths = raw["paths"]
    known_paths = ["data_dir", "disk_data_dir", "reports_dir", "state_dir"]
    unknown = sorted(set(paths) - set(known_paths))
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in [paths]; accepted: {known_paths} "
                          f"({see_docs('reference/configuration.md')})")
    try:
        return Config(
            region=RegionSpec(**_section(RegionSpec, raw["region"], "region")),
            provider=_provider(ProviderSettings(**_section(ProviderSettings, raw["provider"], "provider")), env),
            aws=AwsSettings(**_section(AwsSettings, raw["aws"], "aws")),
            etcd=EtcdSettings(**_section(EtcdSettings, raw["etcd"], "etcd")),
            timeouts=Timeouts(**_section(Timeouts, raw["timeouts"], "timeouts")),
            state_dir=Path(paths.get("state_dir", state_dir)),
            data_dir=Path(paths.get("data_dir", data_dir)),
            disk_data_dir=Path(paths.get("disk_data_dir", Path("/var/tmp") / f"ha-harness-{uid}")),
            reports_dir=Path(paths.get("reports_dir", "reports")),
        )
    except TypeError as e:
        raise ConfigError(f"malformed configuration: {e}") from None


def _provider(settings: ProviderSettings, env: Mapping[str, str]) -> ProviderSettings:
    """Resolve the kubeconfig as kubectl and kind do: $KUBECONFIG's first file, else
    ~/.kube/config (of the user who ran us, also inside the rootless namespaces)."""
    default = env.get("KUBECONFIG", "").split(os.pathsep)[0] or str(Path(env.get("HOME", "~")).expanduser() / ".kube" / "config")
    return replace(settings, kubeconfig=settings.kubeconfig or default)


def to_dict(config: Config) -> dict[str, Any]:
    """The configuration as JSON-able data, for a process that must act on it later (a watchdog)."""
    return {"region": asdict(config.region), "provider": asdict(config.provider), "aws": asdict(config.aws),
            "etcd": asdict(config.etcd), "timeouts": asdict(config.timeouts),
            "paths": {"state_dir": str(config.state_dir), "data_dir": str(config.data_dir),
                      "disk_data_dir": str(config.disk_data_dir), "reports_dir": str(config.reports_dir)}}


def from_dict(data: Mapping[str, Any]) -> Config:
    """The inverse of `to_dict`."""
    region = dict(data["region"], zones=tuple(data["region"]["zones"]),
                  zone_nodes=tuple(data["region"].get("zone_nodes", ())))
    paths = data["paths"]
    return Config(RegionSpec(**region), ProviderSettings(**data["provider"]), AwsSettings(**data["aws"]),
                  EtcdSettings(**data["etcd"]), Timeouts(**data["timeouts"]), Path(paths["state_dir"]),
                  Path(paths["data_dir"]), Path(paths["reports_dir"]))


def with_region(config: Config, etcd: Mapping[str, Any] | None = None, **changes: Any) -> Config:
    """A copy of the configuration with a different region shape (validated), and other etcd
    settings when given; nodes per zone are sized for the new shape unless given."""
    return replace(config, region=replace(config.region, **({"nodes_per_zone": None, "zone_nodes": ()} | changes)),
                   etcd=replace(config.etcd, **(etcd or {})))
