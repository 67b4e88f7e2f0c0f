"""Write a run's report directory: summary.json, index.html, history, trends, reports/latest."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harness.report import history, page, plot, summary, trends
from harness.report.runs import point_latest

HISTORY = "history.sqlite"
TRENDS = "trends.html"


def _stderr(message: str) -> None:
    print(f"[report] {message}", file=sys.stderr, flush=True)


def _inside(path: Path, run_dir: Path) -> str | None:
    """`path` relative to the run directory when it is in it, else None."""
    try:
        return Path(path).resolve().relative_to(run_dir.resolve()).as_posix()
    except ValueError:
        return None


def copy_porcupine(run_dir: Path, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Porcupine's visualisations in the run directory (so it is self-contained), each record then
    pointing at it relative to the run: one written there already is only pointed at, one written
    elsewhere (reports/runs/, a run without a report of its own) is copied; a copy that fails keeps
    the original."""
    out = []
    for r in results:
        source = r.get("porcupine")
        if source and Path(source).is_file():
            own = _inside(Path(source), run_dir)
            if own is not None:
                r = r | {"porcupine": own}
            else:
                relative = f"porcupine/{Path(source).parent.name}.html"  # runs/<scenario>/porcupine.html
                try:
                    (run_dir / "porcupine").mkdir(exist_ok=True)
                    shutil.copyfile(source, run_dir / relative)
                    r = r | {"porcupine": relative}
                except OSError as e:
                    _stderr(f"could not copy {source} into {run_dir}: {e}")
        out.append(r)
    return out


def copy_logs(run_dir: Path, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The region logs each record names (reports/logs/<region>, which the next run's region
    replaces) copied into the run directory's logs/<region>, each once; a record then points at
    its copy, relative to the run. Logs never kept (the region was not brought down by this
    session) are left out; a copy that fails keeps the original."""
    copied: dict[str, str | None] = {}
    out = []
    for r in results:
        logs = []
        for source in r.get("logs", []):
            if source not in copied:
                copied[source] = None
                if Path(source).is_dir():
                    relative = f"logs/{Path(source).name}"
                    try:
                        shutil.copytree(source, run_dir / relative, dirs_exist_ok=True)
                        copied[source] = relative
                    except (OSError, shutil.Error) as e:
                        _stderr(f"could not copy {source} into {run_dir}: {e}")
                        copied[source] = source
            if copied[source] is not None:
                logs.append(copied[source])
        out.append(r | {"logs": logs} if "logs" in r else r)
    return out


def write_report(reports_dir: Path, run_dir: Path, run_id: str, results: list[dict[str, Any]],
                 environment: dict[str, Any], session: dict[str, Any],
                 progress: Callable[[str], None] = _stderr) -> Path:
    """Everything of one run's report from the result records and their timeline files.

    summary.json is written first, so a plotting failure still leaves it; returns index.html.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    results = copy_logs(run_dir, copy_porcupine(run_dir, results))
    timelines = {r["nodeid"]: summary.load_timeline(r.get("timeline")) for r in results}
    built = summary.build(run_id, results, environment, session, timelines)
    (run_dir / "summary.json").write_text(json.dumps(built, indent=1, default=str))
    started = time.monotonic()
    todo = len(built["scenarios"])

    def plot_one(i: int, s: dict[str, Any]) -> str | None:
        if i and i % 10 == 0:
            progress(f"plotted {i}/{todo} scenarios ({time.monotonic() - started:.1f} s)")
        timeline = timelines.get(s["nodeid"]) or {}
        if not timeline.get("events"):
            return None
        try:
            return plot.timeline_png(timeline, s["name"])
        except Exception as e:  # one plot that cannot be drawn must not cost the whole report
            progress(f"no plot for {s['nodeid']}: {type(e).__name__}: {str(e)[:300]}")
            return None

    index = run_dir / "index.html"
    index.write_text(page.render(built, run_dir, plot_one))
    point_latest(reports_dir, run_dir)  # the run's own report is complete; trends come next
    history.record(reports_dir / HISTORY, built)
    trends.write(reports_dir / HISTORY, reports_dir / TRENDS)
    progress(f"report of {todo} scenario(s) in {time.monotonic() - started:.1f} s: {index}")
    return index
