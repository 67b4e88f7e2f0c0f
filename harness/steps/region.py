"""Given-steps: which region, which target, which probes."""

from __future__ import annotations

from typing import Callable

from pytest_bdd import given, parsers

from harness.errors import ConfigError
from harness.probes.availability import AvailabilityProbe
from harness.providers.base import EtcdBackups, EtcdCluster, Environment
from harness.wait import wait_for
from harness.steps.holders import Probes


@given(parsers.parse("a healthy region with {members:d} etcd members spread over {zones:d} zones"), target_fixture="etcd")
def _(region_etcd: EtcdCluster, members: int, zones: int) -> EtcdCluster:
    """The session's region etcd (on an existing cluster, the control plane standing in for it)."""
    etcd = region_etcd
    spread = len({m.zone for m in etcd.members})
    if (len(etcd.members), len(etcd.zones), spread) != (members, zones, zones):
        raise ConfigError(
            f"the shared region has {len(etcd.members)} members in {spread} of its {len(etcd.zones)} zones; "
            f"this step needs {members} spread over {zones} — use 'a fresh region with ...' for other shapes"
        )
    etcd.wait_healthy()
    return etcd


@given(parsers.parse("a fresh region with {members:d} etcd members in the {layout} layout"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, layout: str) -> Environment:
    """A region of the scenario's own in a layout: multi-zone (GEP-20 case #2, one member per
    zone) or single-zone (case #1, the members on different nodes of one zone)."""
    return region_factory(members=members, layout=layout)


def zone_names(count: int) -> tuple[str, ...]:
    """`count` zones named as the default ones are (zone-a, zone-b, ...)."""
    if not 1 <= count <= 9:
        raise ConfigError(f"a region has 1 to 9 zones; got {count}")
    return tuple(f"zone-{letter}" for letter in "abcdefghi"[:count])


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int) -> Environment:
    """As many zones as asked for (zone-a, zone-b, ...), the members dealt over them in turn."""
    return _spread(region_factory(members=members, zones=zone_names(zones)), members, min(members, zones))


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones, pre-vote off"),
       target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int) -> Environment:
    """A member cut off from its leader then campaigns with a new term at once (etcd's default
    before 3.5): what pre-vote prevents."""
    return _spread(region_factory({"pre_vote": False}, members=members), members, zones)


def _spread(env: Environment, members: int, zones: int) -> Environment:
    if len({m.zone for m in env.members}) != zones:  # type: ignore[attr-defined]
        raise ConfigError(f"the region's zones ({', '.join(env.zones)}) do not give {members} members {zones} zones")  # type: ignore[attr-defined]
    return env


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones, clients and peers "
                     "speaking TLS"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int) -> Environment:
    """As etcd-druid runs etcd and GEP-20 measured it: TLS with certificate checks both ways."""
    return _spread(region_factory({"tls": True}, members=members), members, zones)


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones, each member's data on "
                     "a disk of {mib:d} MiB of its own"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int, mib: int) -> Environment:
    """Each data directory a filesystem of its own (tmpfs of `mib`), which a step can fill."""
    return _spread(region_factory(members=members, member_disk_mib=mib), members, zones)


@given(parsers.parse("a fresh region with {members:d} etcd members spread over {zones:d} zones, a backend quota of "
                     "{mib:d} MiB"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, zones: int, mib: int) -> Environment:
    """etcd's --quota-backend-bytes: past it, the NOSPACE alarm and no more writes."""
    return _spread(region_factory({"quota_backend_mib": mib}, members=members), members, zones)


@given(parsers.re(r"a fresh region with (?P<members>\d+) etcd members? whose disks lose what was not fsynced when "
                  r"the power goes(?P<unsafe>, etcd acknowledging writes it never fsyncs)?"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: str, unsafe: str | None) -> Environment:
    """Each data directory served by powerloss-fs ([region] power_loss_fs); with the tail, etcd
    runs with --unsafe-no-fsync (what a power loss then takes, shown)."""
    return region_factory({"unsafe_no_fsync": bool(unsafe)}, members=int(members), power_loss_fs=True)


@given(parsers.parse("a fresh region with {members:d} etcd members at the etcd version under test with snapshot count "
                     "{count:d}"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, count: int) -> Environment:
    """The release of --etcd-version (default: the pinned one), snapshotting every `count` entries."""
    return region_factory({"snapshot_count": count}, members=members)


@given(parsers.parse("a fresh region with {members:d} etcd members at the etcd version under test with snapshot count "
                     "{count:d}, its data on disk committed every {ms:d} ms"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: int, count: int, ms: int) -> Environment:
    """As above, with the data on a real filesystem (fsync takes time there, as on a real control
    plane's disks, and a crash loses what was not synced; tmpfs hides both) and the backend
    committing every `ms` milliseconds (etcd's --backend-batch-interval; default 100)."""
    return region_factory({"snapshot_count": count, "backend_batch_interval_ms": ms}, members=members,
                          data_on_disk=True)


@given("a fresh region with 1 etcd member at the etcd version under test with failpoints", target_fixture="env")
def _(region_factory: Callable[..., Environment]) -> Environment:
    """One member, built with etcd's gofail failpoints (served on GOFAIL_HTTP)."""
    return region_factory({"failpoints": True}, members=1)


@given(parsers.re(r"a fresh region with (?P<members>\d+) etcd members? at the etcd version under test with failpoints, "
                  r"its backend committed every (?P<ms>\d+) ms"), target_fixture="env")
def _(region_factory: Callable[..., Environment], members: str, ms: str) -> Environment:
    """As above, the backend committing every `ms` milliseconds: what was applied but not yet
    committed there survives a crash only through the raft log."""
    return region_factory({"failpoints": True, "backend_batch_interval_ms": int(ms)}, members=int(members))


@given("the zone of the etcd leader is the target zone", target_fixture="target_zone")
def _(etcd: EtcdCluster) -> str:
    """The zone of the member that leads once the region is healthy: what the When-steps on "the
    target zone" take away."""
    leader = etcd.leader(etcd.wait_healthy())
    return etcd.member(leader).zone  # type: ignore[arg-type]


@given("a zone without the etcd leader is the target zone", target_fixture="target_zone")
def _(etcd: EtcdCluster) -> str:
    """The first zone whose member is a follower once the region is healthy."""
    leader = etcd.leader(etcd.wait_healthy())
    return next(z for z in etcd.zones if z != etcd.member(leader).zone)  # type: ignore[arg-type]


@given(parsers.parse('zone "{zone}" is the target zone'), target_fixture="target_zone")
def _(env: Environment, zone: str) -> str:
    """A zone named in the scenario, checked against the environment's zones."""
    return env.zone(zone)


@given(parsers.parse('the etcd leader is in zone "{zone}"'))
def _(etcd: EtcdCluster, zone: str) -> None:
    """Leadership handed to the zone's member if another one leads (etcd's MoveLeader). With
    backups, also to its sidecar: the one that led uploads what it held as it sees the move, and
    what follows must not see that hand-over as its own."""
    statuses = etcd.wait_healthy()
    leader = etcd.leader(statuses)
    members = [m for m in etcd.members if m.zone == etcd.zone(zone)]
    if not members:
        raise ConfigError(f"zone {zone!r} has no etcd member to lead")
    chosen = leader if leader in {m.name for m in members} else members[0].name
    if chosen != leader:
        client = etcd.client(leader)  # type: ignore[arg-type]
        try:
            client.move_leader(statuses[chosen].member_id)  # type: ignore[union-attr]
        finally:
            client.close()
        wait_for(lambda: etcd.leader(), lambda now: now == chosen, f"leadership to move to {chosen}",
                 etcd.config.timeouts.member_ready)
    if isinstance(etcd, EtcdBackups) and any(isinstance(s, dict) for s in etcd.backup_sidecars().values()):
        wait_for(lambda: sorted(n for n, s in etcd.backup_sidecars().items() if isinstance(s, dict) and s.get("leading")),
                 lambda leading: leading == [chosen], f"the backup sidecar of {chosen} to lead, alone",
                 etcd.config.timeouts.member_ready)


@given(parsers.parse("write and read probes run every {ms:d} ms from a client in another zone"), target_fixture="probe")
def _(probes: Probes, etcd: EtcdCluster, target_zone: str, ms: int) -> AvailabilityProbe:
    """As the probes from a named zone, from the first zone that is not the target zone: the
    client keeps its view of the cluster while the target goes."""
    via = next(z for z in etcd.zones if z != target_zone)
    return probes.start(etcd, via, ms / 1000)


@given(parsers.parse('write and read probes run every {ms:d} ms from a client in zone "{zone}"'), target_fixture="probe")
def _(probes: Probes, etcd: EtcdCluster, zone: str, ms: int) -> AvailabilityProbe:
    """A linearizable write (a new key) every interval, failing over between members (own zone
    first, as a client with every endpoint does), and a serializable read and a status request of
    each member, all from that zone's client namespace; the harness's own view asks each member
    its raft state too. Every Then-step about writes, leaders and catch-up reads these samples."""
    return probes.start(etcd, etcd.zone(zone), ms / 1000)


@given(parsers.parse('write and read probes run every {ms:d} ms from a client in zone "{zone}", each request given '
                     '{seconds:g} s'), target_fixture="probe")
def _(probes: Probes, etcd: EtcdCluster, zone: str, ms: int, seconds: float) -> AvailabilityProbe:
    """For faults that make etcd slower, not unavailable: a request slower than [timeouts]
    probe_request would count as failed, and the gap it opens would be the probe's."""
    return probes.start(etcd, etcd.zone(zone), ms / 1000, timeout=seconds)


@given(parsers.parse("each member's health is checked every {ms:d} ms, as its readiness probe does"))
def _(probe: AvailabilityProbe, ms: int) -> None:
    """Each member's /health asked every interval from its own zone (a leader, and a
    linearizable read served), as "health" samples beside the probe's."""
    probe.check_health(ms / 1000)


@given(parsers.parse('write probes of {kib:d} KiB values and read probes run every {ms:d} ms from a client in zone '
                     '"{zone}"'), target_fixture="probe")
def _(probes: Probes, etcd: EtcdCluster, kib: int, zone: str, ms: int) -> AvailabilityProbe:
    """As the probes from a zone, each write's value padded to the size: a write then spans many
    packets, which an MTU fault drops."""
    return probes.start(etcd, etcd.zone(zone), ms / 1000, kib * 1024)
