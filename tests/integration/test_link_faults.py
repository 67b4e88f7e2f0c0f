"""Grey network faults between zones on the real router: one direction only, a share of the
packets, only large packets, only etcd's peer port; each seen in the router's counters, each
shown on datagrams sent across the path while it is applied, and gone after heal."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from typing import Any, Callable, Iterator

import pytest

from harness import netns
from harness.errors import ConfigError
from harness.faults.runner import FaultRunner, heal_everything
from harness.processes import ProcessRecord
from harness.providers.local.region import LocalEnvironment
from harness.timeline import Timeline
from tests.integration.conftest import cli, fault_tables, reachable


def _delivered(env: LocalEnvironment, src: str, dst: str, count: int = 200, size: int = 100) -> int:
    """Datagrams of `size` bytes sent from `src`'s client namespace that reach `dst`'s."""
    with netns.entered(env.names.client_ns(dst)):
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with netns.entered(env.names.client_ns(src)):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with rx, tx:
        # Room for every datagram: a loss here is the fault's, not a full receive buffer's.
        rx.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 8 << 20)
        rx.bind((env.names.client_address(dst), 0))
        rx.settimeout(0.3)
        for _ in range(count):
            tx.sendto(bytes(size), rx.getsockname())
        got = 0
        try:
            while True:
                rx.recv(65535)
                got += 1
        except socket.timeout:
            return got


@pytest.fixture
def runner(region_env: LocalEnvironment) -> Iterator[FaultRunner]:
    runner = FaultRunner(region_env, Timeline())
    yield runner
    heal_everything(region_env)


def test_a_one_way_cut_drops_one_direction_only(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    active = runner.inject("zone-link-cut", "zone-a>zone-b")
    assert active.event.data["effect"]["router_dropped_packets"]["zone-a>zone-b"] > 0
    assert _delivered(env, "zone-a", "zone-b") == 0
    assert _delivered(env, "zone-b", "zone-a") == 200
    assert _delivered(env, "zone-a", "zone-c") == 200  # the other paths are untouched
    runner.heal()
    assert fault_tables("it") == [] and _delivered(env, "zone-a", "zone-b") == 200


def test_a_bridge_cuts_two_zones_off_each_other_while_both_see_the_third(
        region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    active = runner.inject("zone-link-cut", "zone-a<>zone-b")
    assert set(active.event.data["effect"]["router_dropped_packets"]) == {"zone-a>zone-b", "zone-b>zone-a"}
    assert _delivered(env, "zone-a", "zone-b") == 0 and _delivered(env, "zone-b", "zone-a") == 0
    assert reachable(env, "etcd-2", "zone-a") and reachable(env, "etcd-2", "zone-b")
    runner.heal()


def test_a_loss_drops_about_its_share(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    runner.inject("zone-link-loss", "zone-a>*", {"loss_percent": 50})
    got = [_delivered(region_env, "zone-a", z, 400) for z in ("zone-b", "zone-c")]
    assert all(120 < g < 280 for g in got), got  # binomial(400, 0.5): 200 ± 80 is beyond 8 sigma
    assert _delivered(region_env, "zone-b", "zone-a", 400) == 400
    runner.heal()
    assert _delivered(region_env, "zone-a", "zone-b", 400) == 400


def test_mtu_trouble_drops_only_large_packets(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    stop = threading.Event()

    def large() -> None:  # the effect shows once a large packet crossed each path: send some meanwhile
        while not stop.is_set():
            _delivered(env, "zone-b", "zone-c", 5, 1400)
            _delivered(env, "zone-c", "zone-b", 5, 1400)

    sender = threading.Thread(target=large, daemon=True)
    sender.start()
    try:
        runner.inject("zone-link-mtu", "zone-b<>zone-c", {"larger_than": 1200})
    finally:
        stop.set()
        sender.join()
    assert _delivered(env, "zone-b", "zone-c", 100, 1400) == 0 and _delivered(env, "zone-c", "zone-b", 100, 1400) == 0
    assert _delivered(env, "zone-b", "zone-c", 100, 1000) == 100  # small ones pass: "healthy but broken"
    runner.heal()
    assert _delivered(env, "zone-b", "zone-c", 100, 1400) == 100


def test_a_cut_of_the_peer_port_leaves_the_clients_alone(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    active = runner.inject("zone-link-cut", "zone-a<>*", {"port": "peer"})
    assert active.event.data["effect"]["router_dropped_packets"]
    assert reachable(env, "etcd-0", "zone-b")  # a client in zone-b still reaches zone-a's member
    assert _delivered(env, "zone-a", "zone-b") == 200  # and everything but TCP 2380 passes
    runner.heal()


@pytest.mark.parametrize("kind, target, options, says", [
    ("zone-link-cut", "zone-a", {}, "accepted: ZONE>ZONE"),
    ("zone-link-cut", "zone-a>zone-x", {}, "zone-x"),
    ("zone-link-cut", "zone-a>zone-a", {}, "no path"),
    ("zone-link-delay", "zone-a>zone-b", {"delay_ms": 10, "port": "peer"}, "does not apply"),
    ("zone-link-loss", "zone-a>zone-b", {}, "needs loss_percent"),
    ("zone-link-loss", "zone-a>zone-b", {"loss_percent": 150}, "up to 100"),
    ("zone-link-cut", "zone-a>zone-b", {"port": "dns"}, "accepted: all, peer, client"),
])
def test_bad_link_faults_are_refused_and_change_nothing(region_env: LocalEnvironment, runner: FaultRunner, kind: str,
                                                        target: str, options: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        runner.inject(kind, target, options)
    assert fault_tables("it") == [] and region_env.state["faults"] == []


def test_the_cli_plans_applies_and_heals_a_link_fault(region_env: LocalEnvironment) -> None:
    plan = cli("--name", "it", "fault", "zone-link-loss", "zone-a>*", "--loss-percent", "30", "--port", "peer",
               "--dry-run", check=True).stdout
    assert "Drop 30 % of the packets of etcd's peer traffic" in plan and "zone-a>zone-b, zone-a>zone-c" in plan
    assert fault_tables("it") == []
    refused = cli("--name", "it", "fault", "zone-link-loss", "zone-a>zone-b")
    assert refused.returncode != 0 and "--loss-percent" in refused.stderr and fault_tables("it") == []
    cli("--name", "it", "fault", "zone-link-cut", "zone-a>zone-b", check=True)
    assert _delivered(region_env, "zone-a", "zone-b") == 0
    assert "healed zone-link-cut:zone-a>zone-b" in cli("--name", "it", "heal", check=True).stdout
    assert fault_tables("it") == [] and _delivered(region_env, "zone-a", "zone-b") == 200


def _transitions(sample: Callable[[], bool], seconds: float) -> int:
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.append(sample())
        time.sleep(0.05)
    return sum(1 for x, y in zip(seen, seen[1:]) if x != y)


def test_a_flapping_link_goes_down_and_up_until_healed(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    active = runner.inject("zone-link-flap", "zone-a>zone-b", {"down_s": 0.6, "up_min_s": 0.6, "seed": 7})
    assert active.event.data["effect"]["router_dropped_packets"]["zone-a>zone-b"] > 0
    assert _transitions(lambda: _delivered(env, "zone-a", "zone-b", 20) > 0, 4.0) >= 3
    flapper = ProcessRecord.from_dict(active.data["flapper"])
    runner.heal()
    assert not flapper.alive() and fault_tables("it") == []
    assert _delivered(env, "zone-a", "zone-b") == 200


def test_a_flapping_node_is_killed_again_each_time_it_is_back(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    active = runner.inject("node-flap", "zone-b-1", {"down_s": 1.0, "up_min_s": 1.0, "up_max_s": 1.5, "seed": 3})
    assert not env.member_running("etcd-1")
    # The flapping process restarts the member: its pid is in the state file, not in this copy.
    assert _transitions(lambda: bool(env.refresh()) and env.member_running("etcd-1"), 6.0) >= 3
    runner.heal()  # waits until every member is healthy and caught up again
    assert env.member_running("etcd-1") and not ProcessRecord.from_dict(active.data["flapper"]).alive()


def test_harness_heal_stops_a_flapping_fault_the_cli_left_running(region_env: LocalEnvironment) -> None:
    cli("--name", "it", "fault", "zone-link-flap", "zone-b<>zone-c", "--down-s", "0.5", "--up-min-s", "0.5", check=True)
    flapper = ProcessRecord.from_dict(region_env.refresh()["faults"][0]["data"]["flapper"])
    assert flapper.alive()  # flapping after the command returned
    assert "healed zone-link-flap:zone-b<>zone-c" in cli("--name", "it", "heal", check=True).stdout
    assert not flapper.alive() and fault_tables("it") == []
    assert _delivered(region_env, "zone-b", "zone-c") == 200 and _delivered(region_env, "zone-c", "zone-b") == 200


def _round_trips(env: LocalEnvironment, src: str, dst: str) -> list[float]:
    return netns.udp_round_trips(env.names.client_ns(src), env.names.client_ns(dst), env.names.client_address(dst))


def test_a_delay_holds_one_direction_for_its_time(region_env: LocalEnvironment, runner: FaultRunner) -> None:
    env = region_env
    base = statistics.median(_round_trips(env, "zone-a", "zone-b"))
    active = runner.inject("zone-link-delay", "zone-a>zone-b", {"delay_ms": 50})
    assert active.event.data["effect"]["packets_delayed"] > 0
    delayed = _round_trips(env, "zone-a", "zone-b")
    assert 48 <= statistics.median(delayed) - base <= 56, (base, delayed)
    assert statistics.median(_round_trips(env, "zone-a", "zone-c")) < base + 5  # other paths untouched
    assert _delivered(env, "zone-a", "zone-b") == 200  # held, not lost
    runner.heal()
    assert statistics.median(_round_trips(env, "zone-a", "zone-b")) < base + 5
    assert "hd-" not in netns.run(["ip", "-n", env.names.router, "link", "show"])


def test_a_crashed_run_leaves_no_delay_line_after_harness_heal(region_env: LocalEnvironment) -> None:
    cli("--name", "it", "fault", "zone-link-delay", "zone-b<>*", "--delay-ms", "20", "--jitter-ms", "5", check=True)
    assert "hd-" in netns.run(["ip", "-n", region_env.names.router, "link", "show"])
    region_env.refresh()
    region_env.update(lambda st: st.update(faults=[]))  # a crash that lost the ledger: only the sweep finds it
    done = cli("--name", "it", "heal", check=True).stdout
    assert "delay line" in done
    assert "hd-" not in netns.run(["ip", "-n", region_env.names.router, "link", "show"])
    assert netns.run(["ip", "-n", region_env.names.router, "rule", "show"]).count("lookup") == 3  # local, main, default
