"""reports/trends.html from reports/history.sqlite: pass rate per scenario per run, recovery
times and cross-zone traffic per zone pair across runs."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from pathlib import Path

from harness.report import history, plot
from harness.report.page import CSS

RECOVERY_UNIT = "s"
TRAFFIC_PREFIX = "cross-zone "


def render(db_path: Path) -> str:
    db = history.connect(db_path)
    try:
        rows = history.results(db)
        recovery = history.figures(db, unit=RECOVERY_UNIT)
        traffic = history.figures(db, like=TRAFFIC_PREFIX + "%")
    finally:
        db.close()
    runs = list(dict.fromkeys(r[0] for r in rows))
    names = sorted({r[2] for r in rows})
    cell = {(r[2], r[0]): r[3] for r in rows}
    per_scenario: dict[str, list[str]] = defaultdict(list)
    per_run: dict[str, list[str]] = defaultdict(list)
    for run, _, name, result in rows:
        per_scenario[name].append(result)
        per_run[run].append(result)

    def rate(results: list[str]) -> str:
        counted = [r for r in results if r != "skipped"]
        return f"{100 * sum(r == 'passed' for r in counted) / len(counted):.0f} %" if counted else "—"

    recovery_series: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for run, scenario, figure, value in recovery:
        recovery_series[f"{scenario[:40]}: {figure}"].append((run, value))
    traffic_series: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for run, scenario, figure, value in traffic:
        traffic_series[f"{figure[len(TRAFFIC_PREFIX):]} ({scenario[:30]})"].append((run, value))
    images = []
    if rows:
        images.append(("pass/fail per scenario per run", plot.matrix_png(names, runs, cell, "result per scenario and run")))
    if recovery_series:
        images.append(("recovery times", plot.lines_png(recovery_series, "recovery times and gaps (s)", "s")))
    if traffic_series:
        images.append(("traffic", plot.lines_png(traffic_series, "cross-zone traffic per zone pair (wire)", "KiB/s")))
    table = "".join(f"<tr><td>{escape(n)}</td><td>{rate(per_scenario[n])}</td><td>{len(per_scenario[n])}</td></tr>"
                    for n in names)
    run_rows = "".join(f'<tr><td><a href="{escape(r)}/index.html">{escape(r)}</a></td><td>{rate(per_run[r])}</td></tr>'
                       for r in reversed(runs))
    return "\n".join([
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>ha-harness trends</title>',
        f"<style>{CSS}</style></head><body><h1>ha-harness trends over {len(runs)} run(s)</h1>",
        *(f'<h2>{escape(t)}</h2><img class="trend-plot" alt="{escape(t)}" src="data:image/png;base64,{b}">'
          for t, b in images),
        f"<h2>pass rate per scenario</h2><table><tr><th>scenario</th><th>pass rate</th><th>runs</th></tr>{table}</table>",
        f"<h2>runs</h2><table><tr><th>run</th><th>pass rate</th></tr>{run_rows}</table>",
        "</body></html>",
    ])


def write(db_path: Path, out: Path) -> Path:
    out.write_text(render(db_path))
    return out
