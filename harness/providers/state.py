"""The region's state file: what `harness down` and `harness heal` need after a crash."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, Callable

from harness.errors import EnvironmentStateError
from harness.locks import held
from harness.files import replace_text


def state_path(state_dir: Path, region: str) -> Path:
    return state_dir / f"region-{region}.json"


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as e:
        raise EnvironmentStateError(f"state file {path} is corrupt ({e}); remove it and run `harness down` again") from None


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Write atomically: a crash mid-write must not lose the record of what to clean up.

    The file keeps its mode: one made 0600 (it holds the local cloud's keys) stays so, and the
    new content is never readable by others, not even for a moment."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    replace_text(path, json.dumps(state, indent=1), mode)


def update_state(path: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Read-modify-write under a lock: `harness fault` in one process and a test in another
    must not overwrite each other's ledger entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with held(path.with_suffix(".lock"), f"the state file {path}"):
        state = read_state(path)
        if state is None:
            raise EnvironmentStateError(f"state file {path} disappeared: the region was taken down")
        change(state)
        write_state(path, state)
        return state


class StateBacked:
    """An environment whose record, the fault ledger included, lives in a JSON state file.

    Every change goes through `update` (read-modify-write under the file's lock), so a
    `harness fault` in one process and a test in another never overwrite each other.
    """

    path: Path
    state: dict[str, Any]
    durable = True  # the state file outlives the process (see base.FaultLedger)

    def refresh(self) -> dict[str, Any]:
        """Re-read the state file (another process may have injected or healed faults)."""
        self.state = read_state(self.path) or self.state
        return self.state

    def update(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the state file under its lock and keep the result."""
        self.state = update_state(self.path, change)

    def faults(self) -> list[dict[str, Any]]:
        return list(self.refresh().get("faults", []))

    def record_fault(self, entry: dict[str, Any]) -> None:
        self.update(lambda st: st.setdefault("faults", []).append(entry))

    def update_fault(self, fault_id: str, data: dict[str, Any]) -> None:
        def change(st: dict[str, Any]) -> None:
            for entry in st.get("faults", []):
                if entry["id"] == fault_id:
                    entry["data"] = data

        self.update(change)

    def forget_fault(self, fault_id: str) -> None:
        self.update(lambda st: st.update(faults=[f for f in st.get("faults", []) if f["id"] != fault_id]))


def stop_watchdogs(state: dict[str, Any] | None) -> list[str]:
    """Stop the watchdogs of the faults still in the ledger: the environment they would heal is
    going away (see harness.faults.watchdog; a record is a harness.processes.ProcessRecord)."""
    import signal

    from harness.processes import ProcessRecord, signal_group

    stopped = []
    for entry in (state or {}).get("faults", []):
        record = ((entry.get("data") or {}).get("watchdog") or {}).get("process")
        if record and signal_group(ProcessRecord.from_dict(record), signal.SIGTERM):
            stopped.append(f"watchdog of {entry['id']}")
    return stopped
