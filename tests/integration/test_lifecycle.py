"""`harness up/status/down` and what happens with bad input or leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from harness.processes import pid_alive as alive
from harness.providers.state import state_path
from tests.integration.conftest import HARNESS, cli, config_for, namespaces

ROOT = Path(__file__).resolve().parents[2]


def _nothing_left(name: str) -> None:
    cfg = config_for(name)
    assert namespaces(name) == []
    assert not state_path(cfg.state_dir, name).exists()
    assert not (cfg.data_dir / name).exists()


def test_up_status_down() -> None:
    cli("--name", "lc", "down")
    try:
        up = cli("--name", "lc", "up", check=True)
        assert "region lc is up: 3 zones, 6 nodes, 3 etcd members" in up.stdout
        desc = json.loads(cli("--name", "lc", "status", "--json", check=True).stdout)
        assert [z["name"] for z in desc["zones"]] == ["zone-a", "zone-b", "zone-c"]
        assert [(m["name"], m["zone"], m["health"]) for m in desc["members"]] == [
            ("etcd-0", "zone-a", "healthy"), ("etcd-1", "zone-b", "healthy"), ("etcd-2", "zone-c", "healthy")]
        assert sum(m["leader"] for m in desc["members"]) == 1 and desc["leader"]
        assert all(m["raft_term"] >= 2 and m["revision"] >= 1 for m in desc["members"])
        assert desc["etcd"]["version"].startswith("3.")
        pids = [int(p) for ns in namespaces("lc") for p in os.popen(f"ip netns pids {ns}").read().split()]
        assert len(pids) == 3
        assert "region lc" in cli("--name", "lc", "status", check=True).stdout
    finally:
        down = cli("--name", "lc", "down", check=True)
    assert "netns lc-router" in down.stdout
    assert not any(alive(p) for p in pids)  # gone, or a zombie waiting for init to reap it
    _nothing_left("lc")
    assert cli("--name", "lc", "down", check=True).stdout.strip() == "nothing to remove"


def test_missing_etcd_binary_is_a_clear_error_and_creates_nothing() -> None:
    proc = cli("--name", "me", "up", "--etcd-bin", "/nonexistent/etcd")
    assert proc.returncode == 2
    assert "etcd binary '/nonexistent/etcd' not found or not executable" in proc.stderr
    assert "ETCD_BIN" in proc.stderr
    _nothing_left("me")


def test_status_of_a_region_that_is_not_up() -> None:
    proc = cli("--name", "nu", "status")
    assert proc.returncode == 2 and "region 'nu' is not up" in proc.stderr and "harness up" in proc.stderr


def test_leftovers_of_a_crashed_run_are_refused_then_removed() -> None:
    cli("--name", "cr", "down")
    cli("--name", "cr", "up", check=True)
    # A crash that lost the state file: namespaces and etcd processes are all that is left.
    state_path(config_for("cr").state_dir, "cr").unlink()
    assert namespaces("cr")
    again = cli("--name", "cr", "up")
    assert again.returncode == 2
    assert "previous run left it behind: cr-" in again.stderr and "run `harness down`" in again.stderr
    down = cli("--name", "cr", "down", check=True)
    assert "process" in down.stdout and "netns cr-zone-a-1" in down.stdout
    _nothing_left("cr")


def test_other_layouts() -> None:
    for name, args, zones in (("l5", ["--members", "5"], ["zone-a", "zone-b", "zone-c", "zone-a", "zone-b"]),
                              ("l1", ["--layout", "single-zone"], ["zone-a"] * 3)):
        try:
            cli("--name", name, "up", *args, check=True)
            desc = json.loads(cli("--name", name, "status", "--json", check=True).stdout)
            assert [m["zone"] for m in desc["members"]] == zones
            assert len({m["node"] for m in desc["members"]}) == len(zones)
            assert all(m["health"] == "healthy" for m in desc["members"])
        finally:
            cli("--name", name, "down")
        _nothing_left(name)


def test_a_chaos_job_whose_pytest_was_killed_still_takes_its_region_down() -> None:
    """`harness run` brings up a region of its own through pytest; a pytest killed before it could
    tear down (SIGKILL, or a second Ctrl-C in the middle of its teardown) leaves it to the harness."""
    cfg = config_for("cjk")
    job = subprocess.Popen([*HARNESS, "--name", "cjk", "run", "--zone", "zone-a"], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (state_path(cfg.state_dir, "cjk").exists() and namespaces("cjk")):
            assert time.monotonic() < deadline and job.poll() is None, "the region never came up"
            time.sleep(0.1)
        # The harness's own child: one the pytest forks shows its command line until it execs.
        (child,) = [int(p) for p in os.listdir("/proc") if p.isdigit() and _runs_pytest_of(int(p), "cjk", job.pid)]
        os.kill(child, signal.SIGKILL)
        out = job.communicate(timeout=300)[0]
        assert "harness run: region 'cjk' is still up: healing it and taking it down" in out, out[-3000:]
        _nothing_left("cjk")
    finally:
        if job.poll() is None:
            job.kill()
        cli("--name", "cjk", "down")


def _runs_pytest_of(pid: int, region: str, parent: int) -> bool:
    try:
        argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid == parent and b"pytest" in argv and region.encode() in argv and b"--region-name" in argv
