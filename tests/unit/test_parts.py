"""Pure parts: naming, planning, nft rules, etcd version handling, waits, judging."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness import judge
from harness.config import EtcdSettings, RegionSpec
from harness.errors import PrerequisiteError, WaitAbandoned, WaitTimeout
from harness.faults import get_fault
from harness.providers.local.network.fault_tables import outage_rules, remove_table
from harness.providers.local.host.etcd import find_etcd, parse_version
from harness.providers.local.core import Names, plan
from harness.timeline import Timeline
from harness.wait import wait_for, wait_serving


def test_plan_places_members_per_layout() -> None:
    nodes, members = plan(RegionSpec())
    assert [n.name for n in nodes] == ["zone-a-1", "zone-a-2", "zone-b-1", "zone-b-2", "zone-c-1", "zone-c-2"]
    assert [(m.name, m.node) for m in members] == [("etcd-0", "zone-a-1"), ("etcd-1", "zone-b-1"), ("etcd-2", "zone-c-1")]
    _, five = plan(RegionSpec(members=5))
    assert [m.node for m in five] == ["zone-a-1", "zone-b-1", "zone-c-1", "zone-a-2", "zone-b-2"]
    _, single = plan(RegionSpec(layout="single-zone", nodes_per_zone=3))
    assert [m.node for m in single] == ["zone-a-1", "zone-a-2", "zone-a-3"]
    uneven, _ = plan(RegionSpec(zone_nodes=(3, 2, 1)))
    assert [n.name for n in uneven] == ["zone-a-1", "zone-a-2", "zone-a-3", "zone-b-1", "zone-b-2", "zone-c-1"]


def test_interface_names_fit_ifnamsiz() -> None:
    spec = RegionSpec(name="abcd", zones=("abcdefghij", "b"), nodes_per_zone=20)
    nodes, _ = plan(spec)
    n = Names(spec)
    assert all(len(f"v-{node.name}") <= 15 for node in nodes)
    assert len(n.bridge("abcdefghij")) <= 15 and n.subnet("b") == "10.77.2.0/24"


def test_outage_rules_drop_only_traffic_crossing_the_subnet() -> None:
    rules = outage_rules("harness_outage_zone_a", "10.77.1.0/24")
    assert "ip saddr 10.77.1.0/24 ip daddr != 10.77.1.0/24 counter drop" in rules
    assert "ip daddr 10.77.1.0/24 ip saddr != 10.77.1.0/24 counter drop" in rules
    assert remove_table("t") == "add table inet t\ndelete table inet t\n"


def test_unknown_fault_kind() -> None:
    with pytest.raises(Exception, match="unknown fault 'zone-blackout'; accepted: aws-instance-reboot, .*, host-outage, member-corruption, member-disk-full, member-failpoint, member-kill, member-pause, member-power-loss, member-value-corruption, node-cordon, node-delete, node-drain"):
        get_fault("zone-blackout")


def test_parse_version() -> None:
    assert parse_version("etcd Version: 3.4.23\nGit SHA: x\n") == "3.4.23"
    with pytest.raises(PrerequisiteError, match="could not read the etcd version"):
        parse_version("hello")


def _fake_etcd(tmp_path: Path, version: str) -> Path:
    for name, body in (("etcd", f"echo 'etcd Version: {version}'"), ("etcdctl", "true")):
        p = tmp_path / name
        p.write_text(f"#!/bin/sh\n{body}\n")
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return tmp_path / "etcd"


def test_missing_etcd_binary_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(PrerequisiteError, match=r"not found or not executable; leave \[etcd\] binary unset for the pinned etcd .* ETCD_BIN"):
        find_etcd(EtcdSettings(binary=str(tmp_path / "etcd")))


def test_unsafe_etcd_version_warns(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="etcd issue 13766"):
        b = find_etcd(EtcdSettings(binary=str(_fake_etcd(tmp_path, "3.5.1"))))
    assert b.version == "3.5.1" and b.etcdctl.endswith("etcdctl")


def test_wait_for_reports_last_state_and_progress(capsys: pytest.CaptureFixture[str]) -> None:
    seen = iter(range(1000))
    with pytest.raises(WaitTimeout, match="waiting for the counter to reach 10\\^6; last observed: \\d+"):
        wait_for(lambda: next(seen), lambda v: v > 10**6, "the counter to reach 10^6", 0.3, interval=0.01, progress_every=0.1)
    assert "waiting for the counter to reach 10^6" in capsys.readouterr().err


def test_a_wait_on_a_process_ends_when_it_exits_not_at_the_timeout() -> None:
    import subprocess
    import time

    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    started = time.monotonic()
    # It may exit before the first look: then nothing was observed yet.
    with pytest.raises(WaitAbandoned, match="exited with code 3 while waiting for it to serve; last observed: "
                                            "'(not yet|nothing observed yet)'"):
        wait_serving(lambda: "not yet", lambda: None if proc.poll() is None else f"exited with code {proc.returncode}",
                     "it to serve", timeout=30, interval=0.01)
    assert time.monotonic() - started < 10


def test_a_wait_on_a_process_that_serves_returns_and_one_that_hangs_times_out() -> None:
    answers = iter(["starting", "starting", None])
    wait_serving(lambda: next(answers), lambda: None, "it to serve", timeout=5, interval=0.01)
    with pytest.raises(WaitTimeout, match="last observed: 'starting'"):
        wait_serving(lambda: "starting", lambda: None, "it to serve", timeout=0.1, interval=0.01)


def test_judge_fails_with_what_it_saw() -> None:
    assert judge.at_most(1.2, 3, "gap") == 1.2
    with pytest.raises(AssertionError, match="gap: expected at most 0.500s, measured 0.528s"):
        judge.at_most(0.528, 0.5, "gap")
    with pytest.raises(AssertionError, match="never happened"):
        judge.at_most(None, 3, "new leader")
    with pytest.raises(AssertionError, match="expected none, found 1: \\[7\\]"):
        judge.none_of([7], "lost writes")


def test_timeline_spans_record_errors(tmp_path: Path) -> None:
    tl = Timeline()
    with pytest.raises(ValueError):
        with tl.span("fault", "x"):
            raise ValueError("boom")
    (event,) = tl.find("fault")
    assert event.end is not None and event.end >= event.start and "boom" in event.data["error"]
    assert tl.write(tmp_path / "t.json").exists()
