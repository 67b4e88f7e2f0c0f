"""`python -m harness.kube [DIR]`: find or build the pinned binaries ahead of a run (CI cache warm-up)."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.errors import PrerequisiteError
from harness.kube.binaries import ALL_BINARIES, ensure_binaries, sources_from_env


def main(argv: list[str]) -> int:
    explicit = Path(argv[0]) if argv else None
    try:
        binaries = ensure_binaries(sources_from_env(explicit))
    except PrerequisiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in ALL_BINARIES:
        print(f"{name}: {binaries.path(name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
