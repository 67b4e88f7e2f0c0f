"""The region's state file: what `harness down` and `harness heal` need after a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.errors import EnvironmentStateError


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
    """Write atomically: a crash mid-write must not lose the record of what to clean up."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(state, indent=1))
    os.replace(tmp, path)
