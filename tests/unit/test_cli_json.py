"""Every `--json` of the CLI prints exactly one JSON object on stdout; progress goes to stderr.

`harness load` runs its real code path with a LoadRun whose locust already wrote its statistics
(no region, no locust process): only its start is short-cut.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from harness import cli
from harness.load.runner import LoadRun, LoadSpec
from harness.load_commands import run_load
from harness.timeline import Timeline

LOCUST_CSV = """Type,Name,Request Count,Failure Count,Requests/s,99%
put,put,2980,3,99.3,12
,Aggregated,2980,3,99.3,12
"""


def finished_run(workdir: Path) -> LoadRun:
    workdir.mkdir()
    (workdir / "locust_stats.csv").write_text(LOCUST_CSV)
    return LoadRun(LoadSpec("put", 100.0, ("http://10.0.0.1:2379",)), "hh-client-zone-b", workdir, Timeline())


def load_args(*extra: str) -> argparse.Namespace:
    return cli._parser().parse_args(["load", "--profile", "gep-put-follower", "--seconds", "0", *extra])


def test_load_json_prints_only_json_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = finished_run(tmp_path / "w")
    assert run_load(None, load_args("--json"), start=lambda env, profile, processes, out: run) == 0  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert json.loads(out) == {"profile": "gep-put-follower", "seconds": 0.0, "requests": 2980, "failures": 3,
                               "ops_per_s": 99.3, "p99_ms": 12.0}
    assert f"[harness] gep-put-follower for 0 s from hh-client-zone-b, history in {run.workdir / 'history'}" in err


def test_load_without_json_keeps_its_table_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = finished_run(tmp_path / "w")
    run_load(None, load_args(), start=lambda env, profile, processes, out: run)  # type: ignore[arg-type]
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "gep-put-follower: 2980 requests, 3 failed, 99.3 ops/s, p99 12.0 ms"
    assert "[harness]" not in out and "[harness] gep-put-follower" in err


def test_every_json_option_is_one_the_cli_knows() -> None:
    """load is checked above and `conventions explain --json` in test_conventions; status and
    measure print json.dumps alone, and nothing else on their way. A new `--json` is added here
    once its stdout is checked to be JSON only."""
    parser = cli._parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    with_json = sorted(name for name, sub in commands.items() if any("--json" in a.option_strings for a in sub._actions))
    assert with_json == ["load", "measure", "status"]
