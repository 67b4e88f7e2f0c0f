"""Run ids, run directories and the `latest` link."""

from __future__ import annotations

import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

from harness.errors import ConfigError

LATEST = "latest"


def new_run_id(now: datetime | None = None) -> str:
    """UTC time plus a short random suffix, e.g. 20250101T120000Z-3fa9c1; sorts by time."""
    now = now or datetime.now(timezone.utc)
    return f"{now.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def point_latest(reports_dir: Path, run_dir: Path) -> Path:
    """Make reports/latest a relative symlink to run_dir (replaced atomically)."""
    link = reports_dir / LATEST
    tmp = reports_dir / f".{LATEST}.{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(os.path.relpath(run_dir, reports_dir))
    os.replace(tmp, link)
    return link


def run_dirs(reports_dir: Path) -> list[Path]:
    """Run directories holding a summary, oldest first."""
    if not reports_dir.is_dir():
        return []
    return sorted(p for p in reports_dir.iterdir()
                  if p.is_dir() and not p.is_symlink() and (p / "summary.json").exists())


def find_run(reports_dir: Path, run: str | None = None) -> Path:
    """The given run's directory (an id, a unique id prefix, or a path), else the newest."""
    if run is None:
        link = reports_dir / LATEST
        if link.exists():
            return link.resolve()
        runs = run_dirs(reports_dir)
        if not runs:
            raise ConfigError(f"no report in {reports_dir} yet; run `harness nightly` or pytest with --harness-report")
        return runs[-1]
    if Path(run).is_dir():
        return Path(run).resolve()
    matches = [p for p in run_dirs(reports_dir) if p.name.startswith(run)]
    if len(matches) != 1:
        known = ", ".join(p.name for p in run_dirs(reports_dir)[-5:]) or "none"
        raise ConfigError(f"{'no' if not matches else 'more than one'} run matching {run!r} in {reports_dir}; "
                          f"newest runs: {known}")
    return matches[0]
