"""Every fault heals itself at its maximum duration, even when the harness that injected it was killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.config import to_dict
from harness.errors import ConfigError
from harness.faults.runner import FaultRunner
from harness.processes import ProcessRecord
from harness.providers.local.region import LocalEnvironment
from harness.timeline import Timeline
from tests.integration.conftest import cli, fault_tables


def _watchdog(env: LocalEnvironment) -> ProcessRecord:
    (entry,) = env.faults()
    return ProcessRecord.from_dict(entry["data"]["watchdog"]["process"])


def _until(condition, timeout: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.1)
    return time.monotonic() - start


def test_the_watchdog_heals_at_the_deadline(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    runner.inject("zone-outage", "zone-b", max_duration=2.0)
    dog = _watchdog(region_env)
    assert dog.alive() and fault_tables("it")
    _until(lambda: not fault_tables("it") and not region_env.faults(), 10, "the outage healed by its watchdog")
    _until(lambda: not dog.alive(), 5, "the watchdog gone after healing")
    assert "healed by its watchdog at the deadline" in Path(dog.log).read_text()


def test_healing_first_disarms_the_watchdog(region_env: LocalEnvironment) -> None:
    runner = FaultRunner(region_env, Timeline())
    runner.inject("zone-outage", "zone-b", max_duration=60.0)
    dog = _watchdog(region_env)
    runner.heal()
    _until(lambda: not dog.alive(), 5, "the watchdog stopped by the heal")
    assert not fault_tables("it") and not region_env.faults()


def test_down_stops_watchdogs(region_env: LocalEnvironment) -> None:
    FaultRunner(region_env, Timeline()).inject("zone-outage", "zone-c", max_duration=60.0)
    dog = _watchdog(region_env)
    from harness.providers.local.region import LocalRegion

    LocalRegion(region_env.config).down()
    _until(lambda: not dog.alive(), 5, "no watchdog left after down")


def test_a_maximum_duration_must_be_positive(region_env: LocalEnvironment) -> None:
    with pytest.raises(ConfigError, match="maximum duration must be positive"):
        FaultRunner(region_env, Timeline()).inject("zone-outage", "zone-b", max_duration=0)
    assert not region_env.faults() and not fault_tables("it")


INJECT_AND_HANG = textwrap.dedent("""
    import json, sys, time
    from harness.config import from_dict
    from harness.faults.runner import FaultRunner
    from harness.providers.local.region import LocalRegion
    from harness.timeline import Timeline
    config = from_dict(json.loads(sys.argv[1]))
    FaultRunner(LocalRegion(config).attach(), Timeline()).inject("zone-outage", "zone-a", max_duration=float(sys.argv[2]))
    print("injected", flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("then", ["watchdog", "harness heal"])
def test_kill_9_of_the_harness_mid_outage_is_healed(region_env: LocalEnvironment, then: str) -> None:
    """The harness dies without running a single line of cleanup; the zone comes back anyway."""
    proc = subprocess.Popen([sys.executable, "-c", INJECT_AND_HANG, json.dumps(to_dict(region_env.config)), "3"],
                            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    assert proc.stdout is not None and proc.stdout.readline().strip() == "injected"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert fault_tables("it"), "the outage outlived the harness"
    dog = _watchdog(region_env)
    if then == "harness heal":
        cli("--name", "it", "heal", check=True)
        assert not fault_tables("it") and not region_env.faults()
        _until(lambda: not dog.alive(), 5, "the watchdog disarmed by `harness heal`")
    else:
        _until(lambda: not fault_tables("it") and not region_env.faults(), 10, "the watchdog healed the outage")
    region_env.wait_healthy()


def test_cli_dry_run_changes_nothing_and_max_duration_is_honoured(region_env: LocalEnvironment) -> None:
    out = cli("--name", "it", "fault", "zone-outage", "--zone", "zone-b", "--dry-run", check=True).stdout
    assert "Apply zone-outage on zone-b" in out and "nothing was changed" in out
    assert not fault_tables("it") and not region_env.faults()
    out = cli("--name", "it", "fault", "zone-outage", "zone-b", "--max-duration", "2", check=True).stdout
    assert "heals itself at" in out and fault_tables("it")
    _until(lambda: not fault_tables("it") and not region_env.faults(), 10, "healed at the CLI's maximum duration")
