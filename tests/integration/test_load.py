"""Load with locust from a client zone, its history, and cross-zone traffic, on the real region."""

from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

import pytest

from harness.load.history import operations, watchers
from harness.load.runner import LoadRun, LoadSpec
from harness.probes.traffic import TrafficProbe
from harness.providers.local.region import LocalEnvironment
from harness.timeline import Timeline
from harness.validate.linearizability import check
from harness.validate.oplog import acknowledged_writes
from harness.validate.traffic import rates
from harness.validate.watch import check_watchers
from tests.integration.conftest import cli


def test_a_load_runs_in_its_client_zone_and_records_a_checkable_history(region_env: LocalEnvironment,
                                                                        tmp_path: Path) -> None:
    timeline = Timeline()
    members = tuple(m.client_url for m in region_env.members)
    watched = region_env.members[1]
    spec = LoadSpec("mixed", 200, members, users=10, watch_hosts=(watched.client_url,), key_prefix="/it-load/",
                    shared_keys=10)
    run = LoadRun(spec, region_env.names.client_ns("zone-b"), tmp_path, timeline).start()
    run.wait_started()
    time.sleep(4)

    def fence(key: str, value: str) -> int:
        client = region_env.client(watched.name, "zone-b")
        try:
            return client.put(key, value)
        finally:
            client.close()

    stats = run.stop(fence)
    assert stats["failures"] == 0 and stats["requests"] > 400, stats
    assert 120 <= stats["ops_per_s"] <= 260, stats  # locust keeps near the rate it was given
    (event,) = timeline.find("load")
    assert event.end is not None and event.data["requests"] == stats["requests"]
    ops = operations(tmp_path / "history")
    assert {op.kind for op in ops} >= {"put", "get", "delete", "txn"}
    assert len({op.value for op in ops if op.kind in ("put", "txn")}) == len([op for op in ops if op.kind in ("put", "txn")])
    verdict = check(ops, tmp_path / "porcupine.html")
    assert verdict.ok, str(verdict)
    assert any(op.serializable for op in ops) and any(op.kind == "get" and not op.serializable for op in ops)
    assert {op.key for op in ops if op.kind in ("put", "get")} <= {f"/it-load/shared/{i:04d}" for i in range(10)} | {
        run.fence["key"]}
    assert all(op.deleted is not None for op in ops if op.kind == "delete" and op.ok)
    (watcher,) = watchers(tmp_path / "history")
    assert watcher.events and watcher.start_revision > 0 and watcher.details and watcher.progress == ()
    # Every event up to the fence written after the writers stopped, prevKV and isCreate included.
    assert max(e.revision for e in watcher.events) >= run.fence["revision"]
    assert check_watchers([watcher], acknowledged_writes(ops), through_revision=run.fence["revision"]) == []


def test_locust_processes_share_one_load(region_env: LocalEnvironment, tmp_path: Path) -> None:
    spec = LoadSpec("put", 300, (region_env.members[0].client_url,), users=10, processes=2)
    run = LoadRun(spec, region_env.names.client_ns("zone-a"), tmp_path, Timeline()).start()
    run.wait_started()
    time.sleep(4)
    stats = run.stop()
    assert stats["failures"] == 0 and stats["requests"] > 400, stats
    # --rate is the total of every worker, not each worker's.
    assert 200 <= stats["ops_per_s"] <= 360, stats
    assert len(list((tmp_path / "history").glob("ops-*.jsonl"))) == 2, "one history file per worker process"


def test_traffic_is_counted_per_zone_pair_at_the_router_and_in_the_metrics(region_env: LocalEnvironment,
                                                                            tmp_path: Path) -> None:
    probe = TrafficProbe(region_env)
    idle_a = probe.sample()
    time.sleep(2)
    idle = rates(idle_a, probe.sample())
    leader = region_env.member(region_env.leader(region_env.wait_healthy()))  # type: ignore[arg-type]
    run = LoadRun(LoadSpec("put", 100, (leader.client_url,)), region_env.names.client_ns(leader.zone), tmp_path,
                  Timeline()).start()
    run.wait_started()
    loaded_a = probe.sample()
    time.sleep(3)
    loaded = rates(loaded_a, probe.sample())
    run.stop()
    assert set(loaded["pairs"]) == {f"{a}->{b}" for a in region_env.zones for b in region_env.zones if a != b}
    # 100 PUT/s of 1 KiB from the leader to two followers: about 200 KiB/s out of its zone.
    out_of_leader = sum(v["wire_kib_s"] for k, v in loaded["pairs"].items() if k.startswith(f"{leader.zone}->"))
    assert 150 < out_of_leader < 400, loaded
    assert loaded["total_kib_s"]["wire"] > 10 * idle["total_kib_s"]["wire"] > 0
    assert 0.6 < loaded["total_kib_s"]["metrics"] / loaded["total_kib_s"]["wire"] <= 1.0, loaded["total_kib_s"]


def test_harness_load_and_measure_traffic_print_json() -> None:
    cli("--name", "lc", "down")
    load = cli("--name", "lc", "load", "--profile", "gep-put-follower", "--seconds", "3", "--json", check=True)
    figures = json.loads(load.stdout.strip().splitlines()[-1])
    assert set(figures) == {"profile", "seconds", "requests", "failures", "ops_per_s", "p99_ms"}
    assert figures["profile"] == "gep-put-follower" and figures["requests"] > 200 and figures["failures"] == 0
    measured = cli("--name", "lc", "measure", "traffic", "--profile", "idle", "--seconds", "2", "--json", check=True)
    traffic = json.loads(measured.stdout.strip().splitlines()[-1])
    assert set(traffic) == {"profile", "seconds", "pairs", "total_kib_s", "gaps", "resets"} and len(traffic["pairs"]) == 6
    assert traffic["gaps"] == traffic["resets"] == []
    assert set(traffic["total_kib_s"]) == {"wire", "metrics"}
    bad = cli("--name", "lc", "load", "--profile", "gep-nonsense", "--seconds", "1")
    assert bad.returncode == 2 and "invalid choice: 'gep-nonsense'" in bad.stderr


def _harness_in_tmp() -> set[str]:
    """What of the harness's naming is in /tmp (other jobs on the machine write there too)."""
    tmp = Path(tempfile.gettempdir())
    return {p.name for p in tmp.iterdir() if p.name.startswith(("harness-", "load-", "chaos-", "rp-chromium-"))
            or "chromium" in p.name.lower()}


def test_harness_load_leaves_nothing_in_tmp_after_harness_down(tmp_path: Path) -> None:
    """`harness up; harness load; harness down`: the load's output is in the region's work
    directory while the region is up, and gone with it; --out keeps it where asked."""
    cli("--name", "lk", "down")
    before = _harness_in_tmp()
    try:
        cli("--name", "lk", "up", check=True)
        load = cli("--name", "lk", "load", "--profile", "gep-put-follower", "--seconds", "2", check=True)
        (history,) = re.findall(r"history in (\S+)", load.stderr)
        assert Path(history).is_dir() and Path(history).parent.parent.name == "loads", load.stderr
        kept = cli("--name", "lk", "load", "--profile", "gep-put-follower", "--seconds", "1", "--out", str(tmp_path),
                   check=True)
        (kept_history,) = re.findall(r"history in (\S+)", kept.stderr)
        assert Path(kept_history).is_relative_to(tmp_path) and list(Path(kept_history).glob("ops-*.jsonl"))
    finally:
        cli("--name", "lk", "down", check=True)
    assert not Path(history).exists(), "harness down removes the load's output with the region's work directory"
    assert Path(kept_history).is_dir(), "--out is the user's: harness down leaves it"
    assert _harness_in_tmp() - before == set()


@pytest.mark.parametrize("spec", [dict(profile="burst", rate=10), dict(profile="put", rate=0), dict(profile="put", rate=10, hosts=())])
def test_a_bad_load_is_a_clear_error(spec: dict[str, object]) -> None:
    from harness.errors import ConfigError

    with pytest.raises(ConfigError, match="load profile|a load needs"):
        LoadSpec(**{"hosts": ("http://x:2379",), **spec})  # type: ignore[arg-type]
