"""A fault's watchdog: heals the fault at its deadline, even when the harness that injected it is gone.

Like AWS FIS's experiment duration. The runner arms one small detached process per fault (its own
session, so neither Ctrl-C nor `kill -9` of the harness takes it along). It wakes every second and
exits as soon as the fault's ledger entry is gone (healed) or the environment is (taken down); at
the deadline it heals the fault from the ledger, the way `harness heal` would, and keeps retrying
while the entry stays: giving up would leave the fault applied.

    python -m harness.faults.watchdog --config-json JSON --fault-id ID --deadline EPOCH
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from harness.config import Config, from_dict, to_dict
from harness.errors import HarnessError
from harness.processes import ProcessRecord, signal_group, spawn

POLL_S = 1.0
RETRY_S = 5.0


def log_dir(config: Config) -> Path:
    # Inside the region's work directory: `harness down` keeps its logs and removes the rest.
    return config.state_dir / config.region.name / "logs"


def arm(config: Config, fault_id: str, deadline: float) -> dict[str, Any]:
    """Start the watchdog of `fault_id` (wall-clock `deadline`); returns its record for the ledger."""
    argv = [sys.executable, "-m", "harness.faults.watchdog", "--config-json", json.dumps(to_dict(config)),
            "--fault-id", fault_id, "--deadline", f"{deadline:.3f}"]
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in fault_id)
    _, record = spawn(f"watchdog {fault_id}", argv, log_dir(config) / f"watchdog-{safe}.log")
    return {"deadline": deadline, "process": record.to_dict()}


def disarm(watchdog: Mapping[str, Any] | None) -> bool:
    """Stop a watchdog (its fault was healed, or the environment goes down); False if already gone."""
    if not watchdog or not watchdog.get("process"):
        return False
    return signal_group(ProcessRecord.from_dict(watchdog["process"]), signal.SIGTERM)


def _entry(config: Config, fault_id: str) -> tuple[Any, dict[str, Any]] | None:
    """The environment and the fault's ledger entry; None once either is gone."""
    from harness.providers import get_provider

    try:
        env = get_provider(config.provider.name, config).attach()
    except HarnessError:
        return None
    entry = next((e for e in env.faults() if e["id"] == fault_id), None)
    return (env, entry) if entry else None


def watch(config: Config, fault_id: str, deadline: float) -> str:
    """Wait for the deadline, then heal; returns how it ended (also the log's last line)."""
    from harness.faults import get_fault

    while time.time() < deadline:
        if _entry(config, fault_id) is None:
            return f"{fault_id} was healed (or its environment removed) before the deadline; nothing to do"
        time.sleep(min(POLL_S, max(0.0, deadline - time.time())))
    print(f"{time.strftime('%H:%M:%S')} {fault_id}: deadline reached, healing", flush=True)
    while (found := _entry(config, fault_id)) is not None:
        env, entry = found
        try:
            get_fault(entry["kind"], **(entry.get("options") or {})).heal(env, entry["target"], entry.get("data") or {})
            env.forget_fault(fault_id)
            return f"{fault_id} healed by its watchdog at the deadline"
        except Exception as e:  # keep trying: a fault left applied is the worst outcome
            print(f"{time.strftime('%H:%M:%S')} {fault_id}: heal failed ({type(e).__name__}: {e}); retrying in {RETRY_S:.0f}s",
                  flush=True)
            time.sleep(RETRY_S)
    return f"{fault_id} was healed by someone else meanwhile"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.faults.watchdog", description=__doc__)
    p.add_argument("--config-json", required=True)
    p.add_argument("--fault-id", required=True)
    p.add_argument("--deadline", type=float, required=True, help="wall-clock time (seconds since the epoch)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"{time.strftime('%H:%M:%S')} watching {args.fault_id} until "
          f"{time.strftime('%H:%M:%S', time.localtime(args.deadline))}", flush=True)
    print(f"{time.strftime('%H:%M:%S')} {watch(from_dict(json.loads(args.config_json)), args.fault_id, args.deadline)}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
