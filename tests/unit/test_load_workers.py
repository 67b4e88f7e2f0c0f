"""A distributed load's arguments and its account of the workers' histories, without a region or a
locust process: `harness load --workers/--expect-workers` refuses what it cannot run and says what
it accepts; the runner's master and worker command lines; a short history is named, not judged."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness import cli
from harness.errors import ConfigError
from harness.load.runner import WORKERS_ACCOUNT, LoadRun, LoadSpec
from harness.load_commands import distribution, run_load
from harness.timeline import Timeline

ENV: Any = SimpleNamespace(zones=("zone-a", "zone-b", "zone-c"))
HOSTS = ("http://10.0.0.1:2379",)


def _args(*extra: str) -> Any:
    return cli._parser().parse_args(["load", "--profile", "gep-put-follower", *extra])


@pytest.mark.parametrize("workers", ["zone-x", "zone-b,zone-b", "zone-b,", ""])
def test_workers_must_be_zones_of_the_region_each_once(workers: str) -> None:
    with pytest.raises(ConfigError, match=r"--workers takes zones .* accepted: zone-a, zone-b, zone-c; got"):
        run_load(ENV, _args("--workers", workers), start=lambda *a, **k: pytest.fail("started a load"))


def test_expect_workers_is_a_count() -> None:
    with pytest.raises(ConfigError, match="--expect-workers takes a number of workers, 0 or more; got -1"):
        distribution(ENV, _args("--expect-workers", "-1"))
    with pytest.raises(SystemExit):
        _args("--expect-workers", "two")  # argparse: "invalid int value: 'two'", exit status 2
    with pytest.raises(ConfigError, match="workers expected elsewhere >= 0"):
        LoadSpec("put", 100, HOSTS, expect_workers=-1)


def test_workers_and_expected_ones_reach_the_start_only_when_asked() -> None:
    assert distribution(ENV, _args()) == {}
    assert distribution(ENV, _args("--workers", "zone-b,zone-c", "--expect-workers", "1")) == {
        "workers": ("zone-b", "zone-c"), "expect_workers": 1}
    assert distribution(ENV, _args("--expect-workers", "2")) == {"workers": (), "expect_workers": 2}


def _distributed(tmp_path: Path, **spec: Any) -> LoadRun:
    run = LoadRun(LoadSpec("put", 100, HOSTS, **spec), "hh-client-zone-a", tmp_path, Timeline())
    run.master = ("10.77.1.250", 41234)  # what start() finds in the master's namespace
    return run


def test_the_master_waits_for_every_worker_process_and_runs_no_user_itself(tmp_path: Path) -> None:
    run = _distributed(tmp_path, workers=("hh-client-zone-b", None), processes=2, expect_workers=1)
    argv = run.argv()
    assert argv[:4] == ["ip", "netns", "exec", "hh-client-zone-a"] and "--processes" not in argv
    assert argv[argv.index("--expect-workers") + 1] == "5" and argv[argv.index("--master-bind-port") + 1] == "41234"
    command = shlex.split(run.worker_command())
    assert command == ["python", "-m", "locust", "-f", command[4], "--worker", "--master-host", "10.77.1.250",
                       "--master-port", "41234", "--processes", "2"]
    assert command[4].endswith("harness/load/locustfile.py")


def _account(run: LoadRun, final: bool, *workers: dict[str, Any]) -> None:
    run.history_dir.mkdir(parents=True, exist_ok=True)
    (run.history_dir / WORKERS_ACCOUNT).write_text(json.dumps(
        {"final": final, "workers": {f"node-{w['index']}": w for w in workers}}))


def test_a_worker_whose_history_did_not_all_come_back_is_named(tmp_path: Path) -> None:
    run = _distributed(tmp_path, workers=("hh-client-zone-b", "hh-client-zone-c"), expect_workers=1)
    whole = {"index": 0, "file": "ops-w0-11.jsonl", "received": 40, "sent": 40}
    _account(run, True, whole, {"index": 1, "file": "ops-w1-12.jsonl", "received": 30, "sent": None},
             {"index": 2, "file": "ops-w2-13.jsonl", "received": 30, "sent": 32})
    assert run.missing_history() == ["worker 1 (ops-w1-12.jsonl) never said its history was complete",
                                     "worker 2 (ops-w2-13.jsonl) sent 32 lines, 30 arrived"]
    _account(run, False, whole)
    assert run.missing_history() == [
        "1 of 3 workers connected",
        f"the master did not finish gathering its workers' histories; its log: {tmp_path / 'locust.log'}"]
    run = _distributed(tmp_path, expect_workers=1)
    _account(run, True, whole)
    assert run.missing_history() == []
    assert LoadRun(LoadSpec("put", 100, HOSTS), None, tmp_path / "one", Timeline()).missing_history() == []
