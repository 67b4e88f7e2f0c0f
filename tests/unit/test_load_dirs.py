"""Loads started outside a scenario keep their output under the region's work directory (which
`harness down` removes) or where the user asked, never in the system's temporary directory.

Each code path that starts a LoadRun is run up to the point where it chose the directory: the
profile's resolution and locust's start are short-cut (no region, no process).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness import load_commands
from harness.chaostoolkit import loads as chaos_loads
from harness.load.runner import LoadRun, LoadSpec

SPEC = LoadSpec("put", 100.0, ("http://10.0.0.1:2379",))


@pytest.fixture
def no_locust(monkeypatch: pytest.MonkeyPatch) -> None:
    def resolve(name: str, etcd: Any, processes: int = 1) -> tuple[LoadSpec, str]:
        return SPEC, "hh-client-zone-b"

    monkeypatch.setattr(load_commands, "resolve", resolve)
    monkeypatch.setattr(chaos_loads, "resolve", resolve)
    monkeypatch.setattr(LoadRun, "start", lambda self: self)
    monkeypatch.setattr(LoadRun, "wait_started", lambda self, timeout=20.0: None)


def _env(state_dir: Path) -> Any:
    config = SimpleNamespace(state_dir=state_dir, region=SimpleNamespace(name="lk"))
    return SimpleNamespace(config=config, spec=SimpleNamespace(name="lk"), leader=None, provider="local")


def _outside_tmp(path: Path, base: Path) -> None:
    __tracebackhide__ = True
    assert path.is_dir() and path.is_relative_to(base), f"{path} is not a new directory under {base}"
    assert path.parent != Path(tempfile.gettempdir()), f"{path} is directly in the system's temporary directory"


def test_harness_load_keeps_its_output_in_the_regions_work_directory(tmp_path: Path, no_locust: None) -> None:
    state = tmp_path / "state"
    run = load_commands._start(_env(state), "gep-put-follower")
    assert run is not None
    _outside_tmp(run.workdir, state / "lk" / "loads")


def test_harness_load_out_keeps_it_where_the_user_asked(tmp_path: Path, no_locust: None) -> None:
    first = load_commands._start(_env(tmp_path / "state"), "gep-put-follower", out=tmp_path / "kept")
    second = load_commands._start(_env(tmp_path / "state"), "gep-put-follower", out=tmp_path / "kept")
    assert first is not None and second is not None
    _outside_tmp(first.workdir, tmp_path / "kept")
    assert first.workdir != second.workdir, "a second load must not overwrite the first one's history"


def test_a_chaostoolkit_load_keeps_its_output_in_the_regions_work_directory(tmp_path: Path, no_locust: None) -> None:
    state = tmp_path / "state"
    try:
        started = chaos_loads.start(_env(state), "gep-put-follower", max_duration=3600)
        _outside_tmp(Path(started["workdir"]), state / "lk" / "loads")
    finally:
        chaos_loads._running.pop("gep-put-follower", None)  # never started: nothing to stop
