"""The local cloud's small parts: zones onto availability zones, the reconciler's memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.providers.local.cloud.account import availability_zones
from harness.providers.local.reconciler import Status, main


def test_zones_map_onto_availability_zones_by_index() -> None:
    assert availability_zones(("zone-a", "zone-b", "zone-c")) == (
        "eu-west-1", {"zone-a": "eu-west-1a", "zone-b": "eu-west-1b", "zone-c": "eu-west-1c"})
    region, azs = availability_zones(tuple(f"z{i}" for i in range(5)))
    assert region == "us-east-1" and list(azs.values()) == [f"us-east-1{c}" for c in "abcde"]
    with pytest.raises(ConfigError, match="at most 6; this region has 7 zones"):
        availability_zones(tuple(f"z{i}" for i in range(7)))


def test_the_reconcilers_memory_survives_a_restart_and_a_torn_file(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    assert Status.load(path) == Status()
    Status(pid=1, ruleset="abc", killed={"zone-a-1": {"data": {"mode": "kill", "member": "etcd-0"}}}).save(path)
    again = Status.load(path)
    assert again.ruleset == "abc" and again.killed["zone-a-1"]["data"]["member"] == "etcd-0"
    path.write_text('{"pid": 1, "kil')
    assert Status.load(path) == Status()


@pytest.mark.parametrize("interval", ["0", "61"])
def test_the_reconciler_refuses_a_poll_interval_out_of_range(interval: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--state-dir=/nonexistent", "--data-dir=/nonexistent", "--region=x", f"--interval={interval}"])
    assert exit_.value.code == 2
    assert f"--interval must be between 0.01 and 60 seconds, got {float(interval)}" in capsys.readouterr().err


def test_the_reconciler_of_a_region_without_a_cloud_says_so(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="region 'x' has no local cloud in"):
        main([f"--state-dir={tmp_path}", f"--data-dir={tmp_path}", "--region=x"])
