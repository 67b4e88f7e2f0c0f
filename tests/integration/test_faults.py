"""Faults against the real region: effect, heal, rollback of a half-done inject, heal after a crash."""

from __future__ import annotations

import signal
import time
from typing import Any, ClassVar

import pytest

from harness import netns
from harness import faults as fault_registry
from harness.errors import ConfigError, FaultError, WaitTimeout
from harness.faults.base import Injection
from harness.faults.runner import FaultRunner, heal_everything
from harness.faults.zone import ZoneOutage
from harness.processes import ProcessRecord
from harness.providers.local.region import LocalEnvironment
from harness.timeline import Timeline
from tests.integration.conftest import cli, fault_tables, reachable


def test_zone_outage_cuts_the_zone_off_and_heals(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    active = runner.inject("zone-outage", "zone-a")
    assert fault_tables("it") == ["harness_outage_zone_a"]
    assert not reachable(region_env, "etcd-0", "zone-b")  # across the zone boundary: dropped
    assert reachable(region_env, "etcd-0", "zone-a")  # inside the subnet: NACLs do not apply
    assert reachable(region_env, "etcd-1", "zone-c")
    assert [f["id"] for f in region_env.state["faults"]] == [active.id]
    runner.heal()
    assert fault_tables("it") == [] and region_env.state["faults"] == []
    assert reachable(region_env, "etcd-0", "zone-b")
    assert active.event.end is not None and active.event.data["healed_at"] > active.event.start


@pytest.mark.parametrize("kind", ["node-kill", "node-freeze", "node-link-down", "member-kill"])
def test_node_and_member_faults_heal(region_env: LocalEnvironment, kind: str) -> None:
    runner = FaultRunner(region_env, Timeline())
    target = "etcd-1" if kind == "member-kill" else "zone-b-1"
    runner.inject(kind, target)
    assert not reachable(region_env, "etcd-1", "zone-a")
    if kind in ("node-kill", "member-kill"):
        assert not region_env.member_running("etcd-1")
    runner.heal()  # waits until every member is healthy and caught up
    assert reachable(region_env, "etcd-1", "zone-a") and region_env.member_running("etcd-1")


def test_member_pause_stops_the_member_for_its_time_and_heals(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    active = runner.inject("member-pause", "etcd-1", {"seconds": 30})
    assert active.event.data["effect"]["observed"] and region_env.member_paused("etcd-1")
    assert not reachable(region_env, "etcd-1", "zone-b")  # stopped: it answers nobody
    runner.heal()  # before its 30 s: heal continues it at once
    assert not region_env.member_paused("etcd-1") and reachable(region_env, "etcd-1", "zone-b")
    active = runner.inject("member-pause", "etcd-1", {"seconds": 0.5})
    time.sleep(1.0)
    assert not region_env.member_paused("etcd-1"), "the pause ends by itself after its time"
    runner.heal()


def test_peer_blackhole_cuts_only_peer_traffic_and_heals(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    active = runner.inject("peer-blackhole", "etcd-1")
    assert active.event.data["effect"]["router_dropped_packets"] > 0
    assert reachable(region_env, "etcd-1", "zone-a"), "its clients still reach it"
    assert fault_tables("it") == ["harness_peer_etcd_1"]
    runner.heal()
    assert fault_tables("it") == [] and region_env.state["faults"] == []


def test_sweep_removes_a_pause_and_a_peer_blackhole_the_ledger_lost(region_env: LocalEnvironment) -> None:
    region_env.pause_member("etcd-2")
    region_env.cut_peer_traffic("etcd-1")
    done = heal_everything(region_env)
    assert "removed nft table harness_peer_etcd_1" in done
    assert not region_env.member_paused("etcd-2") and fault_tables("it") == []
    region_env.wait_healthy(region_env.config.timeouts.recovery)


def test_a_member_that_keeps_the_region_unhealthy_is_named_with_the_end_of_its_log(region_env: LocalEnvironment) -> None:
    region_env.pause_member("etcd-2")  # it answers no status: never caught up
    try:
        with pytest.raises(WaitTimeout) as waited:
            region_env.wait_healthy(1.0)
    finally:
        region_env.resume_member("etcd-2")
    log = region_env.state["members"]["etcd-2"]["log"]
    assert f"(etcd-2's log {log} ends with: " in str(waited.value)
    assert "etcd-0's log" not in str(waited.value) and "etcd-1's log" not in str(waited.value)
    region_env.wait_healthy(region_env.config.timeouts.recovery)


def test_unknown_zone_is_a_clear_error_and_applies_nothing(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    with pytest.raises(ConfigError, match="unknown zone 'zone-x'; this environment has zones: zone-a, zone-b, zone-c"):
        runner.inject("zone-outage", "zone-x")
    assert fault_tables("it") == [] and region_env.state["faults"] == [] and runner.active == []
    proc = cli("--name", "it", "fault", "zone-outage", "zone-x")
    assert proc.returncode == 2 and "unknown zone 'zone-x'" in proc.stderr
    assert fault_tables("it") == []


class HalfwayFault(ZoneOutage):
    """Applies a real outage, then fails before finishing: the runner must undo it."""

    kind: ClassVar[str] = "halfway"

    def inject(self, env: LocalEnvironment, target: str, ctx: Injection) -> dict[str, Any]:
        super().inject(env, target, ctx)
        assert fault_tables(env.spec.name), "the first half was applied"
        raise ConfigError("second half failed")


class HangingFault(ZoneOutage):
    kind: ClassVar[str] = "hanging"

    def inject(self, env: LocalEnvironment, target: str, ctx: Injection) -> dict[str, Any]:
        super().inject(env, target, ctx)
        time.sleep(3)
        return {}


@pytest.mark.parametrize("kind", ["halfway", "hanging"])
def test_a_fault_that_fails_halfway_is_rolled_back(
    region_env: LocalEnvironment, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    cls = HalfwayFault if kind == "halfway" else HangingFault
    monkeypatch.setitem(fault_registry.FAULTS, kind, (f"{__name__}:{cls.__name__}", {}))
    monkeypatch.setattr(region_env, "config", region_env.config.__class__(
        **{**region_env.config.__dict__, "timeouts": region_env.config.timeouts.__class__(fault_apply=1.0)}))
    timeline = Timeline()
    runner = FaultRunner(region_env, timeline)
    with pytest.raises(FaultError, match="failed and was rolled back|did not finish within 1.0s"):
        runner.inject(kind, "zone-b")
    if kind == "hanging":
        time.sleep(2.5)  # the hung worker finishes its (late) inject; heal_everything must still undo it
        heal_everything(region_env)
    assert fault_tables("it") == [] and region_env.state["faults"] == [] and runner.active == []
    (event,) = timeline.find("fault")
    assert "error" in event.data and event.end is not None
    assert reachable(region_env, "etcd-1", "zone-a")


class LateFault(ZoneOutage):
    """Its change lands after the runner gave up on it, as a slow AWS association swap can."""

    kind: ClassVar[str] = "late"

    def inject(self, env: LocalEnvironment, target: str, ctx: Injection) -> dict[str, Any]:
        time.sleep(2.0)
        return super().inject(env, target, ctx)


def test_an_injection_that_overruns_its_bound_stays_tracked_until_it_ended_and_was_healed(
    region_env: LocalEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(fault_registry.FAULTS, "late", (f"{__name__}:LateFault", {}))
    monkeypatch.setattr(region_env, "config", region_env.config.__class__(
        **{**region_env.config.__dict__, "timeouts": region_env.config.timeouts.__class__(fault_apply=1.0)}))
    timeline = Timeline()
    with pytest.raises(FaultError, match="did not finish within 1.0s"):
        FaultRunner(region_env, timeline).inject("late", "zone-b", max_duration=60.0)
    # The injection still runs: its ledger entry and its watchdog stay.
    (entry,) = region_env.faults()
    dog = ProcessRecord.from_dict(entry["data"]["watchdog"]["process"])
    assert dog.alive()
    deadline = time.monotonic() + 10
    while (region_env.faults() or fault_tables("it") or dog.alive()) and time.monotonic() < deadline:
        time.sleep(0.1)
    # It ended, applied its cut late, and was healed then: nothing is left, nothing untracked.
    assert fault_tables("it") == [] and region_env.faults() == [] and not dog.alive()
    (event,) = timeline.find("fault")
    assert event.data["overran"] is True and "late_healed_at" in event.data
    assert reachable(region_env, "etcd-1", "zone-a")


def test_harness_heal_after_a_crash_undoes_everything(region_env: LocalEnvironment) -> None:
    # `harness fault` leaves its fault applied, as a crashed run would.
    for kind, target in (("zone-outage", "zone-a"), ("node-freeze", "zone-b-1"), ("node-link-down", "zone-c-1")):
        cli("--name", "it", "fault", kind, target, check=True)
    assert fault_tables("it") == ["harness_outage_zone_a"]
    assert not reachable(region_env, "etcd-1", "zone-b")  # frozen: even its own zone gets no answer
    # And an effect the ledger does not know about (the process died before writing it).
    netns.run(["ip", "-n", "it-zone-a-2", "link", "set", "eth0", "down"])
    region_env.signal_member("etcd-0", signal.SIGKILL)
    healed = cli("--name", "it", "heal", check=True)
    assert "healed zone-outage:zone-a" in healed.stdout and "link up on zone-a-2" in healed.stdout
    assert "restarted etcd-0" in healed.stdout and "environment healthy" in healed.stdout
    assert fault_tables("it") == []
    fresh = region_env.__class__(region_env.config, region_env.state | {"faults": []})
    assert all(reachable(fresh, m.name, "zone-a") for m in fresh.members)
    assert "no fault was applied" in cli("--name", "it", "heal", check=True).stdout


def test_host_outage_takes_every_node_of_the_host_and_heals() -> None:
    from harness.config import with_region
    from harness.providers.local.region import LocalRegion
    from tests.integration.conftest import config_for

    region = LocalRegion(with_region(config_for("ih"), nodes_per_zone=3, hosts_per_zone=2))
    region.down()
    env = region.up()
    try:
        assert {h: [n.name for n in nodes] for h, nodes in env.hosts().items() if h.startswith("zone-b")} == {
            "zone-b-h1": ["zone-b-1", "zone-b-3"], "zone-b-h2": ["zone-b-2"]}
        runner = FaultRunner(env, Timeline())
        with pytest.raises(ConfigError, match="unknown host 'zone-b-h9'; hosts: zone-a-h1, zone-a-h2"):
            runner.inject("host-outage", "zone-b-h9")
        active = runner.inject("host-outage", "zone-b-h1")
        assert set(active.data["nodes"]) == {"zone-b-1", "zone-b-3"}
        assert not env.member_running("etcd-1") and not reachable(env, "etcd-1", "zone-a")
        assert netns.netns_pids("ih-zone-b-1") == []
        runner.heal()  # waits until every member is healthy and caught up
        assert env.member_running("etcd-1") and reachable(env, "etcd-1", "zone-a")
    finally:
        region.down()


def test_faults_an_environment_lacks_say_why(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    with pytest.raises(FaultError, match="host-outage is not available here: this environment models no hosts"):
        runner.inject("host-outage", "zone-a-h1")
    with pytest.raises(FaultError, match="node-drain is not available here: the local environment has no Kubernetes"):
        runner.inject("node-drain", "zone-a-1")
    assert region_env.state["faults"] == []
