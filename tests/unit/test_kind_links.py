"""Grey link faults on kind, without Docker: the iptables chains the provider would make inside
the source zone's node containers, their evidence, heal and sweep. The recording runner of
test_kind.py answers `docker inspect`; the routes and iptables listings are canned here, in the
shapes kindnet and iptables print them. Expected commands are written out, not computed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pytest

from harness.errors import ConfigError
from harness.faults.runner import FaultRunner
from harness.providers.base import LinkImpairment, ZoneLinks
from harness.providers.kind_links import chain, chains_in, dropped, match, pod_cidrs
from harness.timeline import Timeline
from harness.kube import cluster
from tests.unit.test_kind import NODES, W, Commands, kind_env

# kindnet's routes on a zone-a node: every other node's pod CIDR via that node's address
ROUTES = """default via 172.30.0.1 dev eth0
10.244.1.0/24 via 172.30.0.4 dev eth0
10.244.2.0/24 via 172.30.0.5 dev eth0
10.244.3.0/24 via 172.30.0.6 dev eth0
10.244.4.0/24 via 172.30.0.7 dev eth0
10.244.5.0/24 via 172.30.0.8 dev eth0
172.30.0.0/16 dev eth0 proto kernel scope link src 172.30.0.3
"""
R1 = "HARNESS-5573e39b6600496d"  # the chain of run r1: sha1("r1"), written out
LISTING = """Chain HARNESS-5573e39b6600496d (2 references)
    pkts      bytes target     prot opt in     out     source               destination
      12     1400 DROP       all  --  *      *       0.0.0.0/0            172.30.0.5           /* to zone-b */
       3      180 DROP       all  --  *      *       0.0.0.0/0            10.244.2.0/24        /* to zone-b */
       0        0 DROP       all  --  *      *       0.0.0.0/0            172.30.0.7           /* to zone-c */
"""


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> None:
    """The calls that would need a live API server (test_kind.py's `kube`, in short)."""
    monkeypatch.setattr(cluster, "connect", lambda access: object())
    monkeypatch.setattr(cluster, "node_views", lambda api: [cluster.NodeView(n.name, n.zone, None, True, False, ())
                                                           for n in NODES])
    monkeypatch.setattr(cluster, "sweep_cordons", lambda access: [])


@dataclass
class NodeCommands(Commands):
    """Also answers, per node, `ip route` and `iptables -L/-S` inside it."""

    listings: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)

    def __call__(self, argv: Sequence[str]) -> str:
        out = super().__call__(argv)
        argv = list(argv)
        if argv[:2] == ["docker", "exec"] and argv[3:6] == ["ip", "-o", "-4"]:
            return ROUTES
        if argv[:2] == ["docker", "exec"] and argv[3:5] == ["iptables", "-L"]:
            return self.listings.get(argv[2], "")
        if argv[:2] == ["docker", "exec"] and argv[3:] == ["iptables", "-S"]:
            return self.rules.get(argv[2], "")
        return out


def test_the_matches_say_what_is_dropped_and_a_delay_is_refused() -> None:
    assert match(LinkImpairment()) == []
    assert match(LinkImpairment(loss_percent=30, port="peer")) == [
        "-p", "tcp", "-m", "multiport", "--ports", "2380", "-m", "statistic", "--mode", "random", "--probability",
        "0.3000"]
    assert match(LinkImpairment(larger_than=1200)) == ["-m", "length", "--length", "1201:65535"]
    assert match(LinkImpairment(rate_kbytes=64)) == ["-m", "hashlimit", "--hashlimit-above", "64kb/s",
                                                     "--hashlimit-mode", "dstip", "--hashlimit-name", "harness"]
    with pytest.raises(ConfigError, match="zone-link-delay cannot be applied on kind.*accepted there: zone-link-cut"):
        match(LinkImpairment(delay_ms=50))


def test_pod_cidrs_come_from_kindnets_routes_and_chain_names_fit_iptables() -> None:
    assert pod_cidrs(ROUTES, ["172.30.0.5", "172.30.0.6"]) == ["10.244.2.0/24", "10.244.3.0/24"]
    assert chain("r1") == R1
    assert len(chain("x" * 80)) <= 28
    assert dropped(LISTING) == {"zone-b": 15, "zone-c": 0}
    assert chains_in(f"-P INPUT ACCEPT\n-N {R1}\n-N KUBE-SERVICES\n-A OUTPUT -j {R1}\n") == [R1]


def test_a_one_way_cut_is_a_chain_in_each_node_of_the_source_zone(tmp_path: Path) -> None:
    run = NodeCommands()
    env = kind_env(run, tmp_path)
    assert isinstance(env, ZoneLinks)
    data = env.impair_links([("zone-a", "zone-b")], LinkImpairment(), "r1")
    assert data == {"chain": R1, "nodes": {W: "zone-a", f"{W}2": "zone-a"}, "paths": ["zone-a>zone-b"]}
    inside = [a[2:] for a in run.argvs if a[:2] == ["docker", "exec"] and a[3] == "iptables"]
    comment = ["-m", "comment", "--comment", "to zone-b", "-j", "DROP"]
    assert inside[:7] == [
        [W, "iptables", "-N", R1],
        [W, "iptables", "-A", R1, "-d", "172.30.0.5", *comment],
        [W, "iptables", "-A", R1, "-d", "172.30.0.6", *comment],
        [W, "iptables", "-A", R1, "-d", "10.244.2.0/24", *comment],
        [W, "iptables", "-A", R1, "-d", "10.244.3.0/24", *comment],
        [W, "iptables", "-I", "OUTPUT", "1", "-j", R1],
        [W, "iptables", "-I", "FORWARD", "1", "-j", R1],
    ]
    assert {a[0] for a in inside} == {W, f"{W}2"}  # nothing inside zone-b's or zone-c's nodes

    assert env.links_effect(data) is None  # no drop counted yet
    run.listings = {W: LISTING, f"{W}2": LISTING}
    assert env.links_effect(data) == {"dropped_packets": {"zone-a>zone-b": 30}}


def test_heal_takes_the_chain_out_of_every_node_from_the_run_id_alone(tmp_path: Path) -> None:
    run = NodeCommands()
    env = kind_env(run, tmp_path)
    run.fail("docker", "exec", f"{W}3", "iptables", "-D", "OUTPUT", "-j", R1,
             stderr="iptables: No chain/target/match by that name.")
    env.restore_links({"run_id": "r1"})  # a node without the chain is no error: heal is idempotent
    removed = [a[2:] for a in run.argvs if a[:2] == ["docker", "exec"]]
    assert [W, "iptables", "-X", R1] in removed and [f"{W}6", "iptables", "-X", R1] in removed
    assert [W, "iptables", "-D", "FORWARD", "-j", R1] in removed


def test_the_sweep_removes_a_chain_the_ledger_lost(tmp_path: Path, api: None) -> None:
    run = NodeCommands(rules={f"{W}4": "-N HARNESS-lost\n-A OUTPUT -j HARNESS-lost\n"})
    env = kind_env(run, tmp_path)
    assert "removed iptables chain HARNESS-lost from ha-harness-worker4" in env.sweep()
    assert ["docker", "exec", f"{W}4", "iptables", "-X", "HARNESS-lost"] in run.argvs


def test_a_link_fault_runs_through_the_fault_runner_and_a_delay_is_refused(tmp_path: Path, api: None) -> None:
    run = NodeCommands(listings={W: LISTING, f"{W}2": LISTING})
    env = kind_env(run, tmp_path)
    runner = FaultRunner(env, Timeline())
    active = runner.inject("zone-link-cut", "zone-a>zone-b")
    assert active.event.data["effect"]["dropped_packets"] == {"zone-a>zone-b": 30}
    runner.heal(active, wait=False)
    assert ["docker", "exec", f"{W}5", "iptables", "-X", active.data["chain"]] in run.argvs
    with pytest.raises(Exception, match="zone-link-delay cannot be applied on kind"):
        runner.inject("zone-link-delay", "zone-a>zone-b", {"delay_ms": 10})
    assert env.refresh()["faults"] == []
