"""index.html: one self-contained page per run (plots embedded as base64 PNG, no scripts)."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any, Callable

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#212121;max-width:1200px}
h1{font-size:1.4em} h2{font-size:1.1em;margin:0} table{border-collapse:collapse;margin:.4em 0;font-size:.85em}
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
section.scenario{border:1px solid #ccc;border-left:6px solid #9e9e9e;padding:.6em 1em;margin:1em 0}
section.passed{border-left-color:#2e7d32} section.failed,section.error{border-left-color:#c62828}
section.interrupted{border-left-color:#ff9800}
.badge{display:inline-block;padding:0 .5em;border-radius:3px;color:#fff;background:#9e9e9e;font-size:.8em}
.badge.passed{background:#2e7d32} .badge.failed,.badge.error{background:#c62828} .badge.interrupted{background:#ff9800}
pre.why{background:#fff3f3;border:1px solid #f5c2c2;padding:.5em;white-space:pre-wrap;font-size:.8em;max-height:24em;overflow:auto}
img.timeline-plot{max-width:100%} .step-failed{color:#c62828;font-weight:bold} nav a{margin-right:.6em}
"""


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        value = f"{value:.3f}".rstrip("0").rstrip(".")
    return escape(f"{value} {unit}".strip())


def _table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return ""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _link(run_dir: Path, target: str | None, text: str) -> str:
    if not target:
        return ""
    href = os.path.relpath(target, run_dir) if os.path.isabs(target) else target
    return f'<a href="{escape(href)}">{escape(text)}</a>'


def scenario_html(index: int, s: dict[str, Any], plot_b64: str | None, run_dir: Path) -> str:
    steps = [[escape(st.get("keyword", "")), f'<span class="{"step-failed" if st.get("failed") else ""}">'
              f'{escape(st.get("name", ""))}</span>', escape(st.get("status") or ("failed" if st.get("failed") else "ok")),
              _fmt(st.get("duration"), "s") if st.get("status") != "not run" else ""] for st in s["steps"]]
    figures = [[escape(f["name"]), _fmt(f["value"], f["unit"]), _fmt(f.get("at"), "s")] for f in s["figures"]]
    faults = [[escape(w["fault"]), escape(str(w.get("target"))), _fmt(w.get("injected_at") or w["start"], "s"),
               _fmt(w.get("healed_at") or w.get("end"), "s")] for w in s["fault_windows"]]
    # One row per write path: one path's writes say nothing of another's.
    unavailable = [[escape(path), _fmt(g.get("length_s"), "s"), _fmt(g.get("start"), "s"), _fmt(g.get("end"), "s"),
                    "still open at the window's end: writes had not resumed" if g.get("open") else "writes resumed"]
                   for path, g in (s.get("write_unavailability") or {}).items()]
    loads = [[escape(l["profile"]), _fmt(l.get("rate"), "ops/s"), _fmt(l.get("ops_per_s"), "ops/s"),
              _fmt(l.get("requests")), _fmt(l.get("failures")), _fmt(l.get("p99_ms"), "ms")] for l in s["load"]]
    traffic = [[escape(pair), escape(t.get("not_available", {}).get("wire", "")) or _fmt(v.get("wire_kib_s"), "KiB/s"),
                _fmt(v.get("metrics_kib_s"), "KiB/s")] for t in s["traffic"] for pair, v in sorted(t["pairs"].items())]
    # What a measurement could not count is shown, not left to read as a low rate.
    uncounted = [[escape(e["source"]), escape(e.get("member") or e.get("pair") or ""), escape(kind),
                  escape(e.get("reason", ""))]
                 for t in s["traffic"] for kind in ("gaps", "resets") for e in t.get(kind, [])]
    anomalies = [[escape(a["name"]), escape(str({k: v for k, v in a.items() if k != "name"})[:400])] for a in s["anomalies"]]
    placement = [[escape(p["name"]), escape(pod.get("pod", "")), escape(str(pod.get("zone"))), escape(str(pod.get("node"))),
                  escape(str(pod.get("phase")))] for p in s["placement"] for pod in p["pods"]]
    pods = [[escape(ph["namespace"]), _fmt(ph["samples"]), _fmt(ph["errors"]),
             escape(", ".join(f"{z}: {n}" for z, n in ph["min_ready"].items())), _fmt(ph["max_pending"])]
            for ph in s.get("pod_phases", [])]
    druid = [[escape(r["etcd"]), escape(f"reads that failed: {r['failed_reads']}")] + [""] * 4 if "failed_reads" in r else
             [escape(r["etcd"]), _fmt(r["at"], "s"),
              escape(f"{r['ready']}{' (stale: etcd-druid not updating it)' if r.get('stale') else ''}"),
              escape(f"{r['ready_replicas']} of {r['replicas']}"),
              escape(", ".join(f"{c} {v}" for c, v in sorted((r["conditions"] or {}).items()))),
              escape(", ".join(f"{m} {v}" for m, v in sorted((r["members"] or {}).items())))]
             for r in s.get("etcd_status", [])]
    detected = [[escape(d["detector"]), escape(d["zone"]), escape(d["before"]), _fmt(d["detected_after_s"], "s"),
                 _fmt(d["recovered_after_s"], "s"), _fmt(d["unreadable_s"] or None, "s")]
                for d in s.get("time_to_detect", [])]
    links = " ".join(x for x in (
        _link(run_dir, s.get("timeline"), "timeline JSON"),
        *(_link(run_dir, log, f"logs {Path(log).name}") for log in s.get("logs", [])),
        _link(run_dir, s.get("porcupine"), "Porcupine visualisation (linearizability check failed)"),
    ) if x)
    result = escape(s["result"])
    parts = [
        f'<section class="scenario {result}" id="scenario-{index}" data-result="{result}">',
        f'<h2>{escape(s["name"])} <span class="badge {result}">{result}</span></h2>',
        f'<div><code>{escape(s["nodeid"])}</code> · {_fmt(s["duration_s"], "s")}'
        f'{" · tags: " + escape(", ".join(s["tags"])) if s["tags"] else ""}</div>',
    ]
    if s.get("crash"):
        parts.append(f'<h3>Why it failed</h3><pre class="why">{escape(s["crash"])}</pre>')
        if s.get("message"):
            parts.append(f'<details><summary>traceback</summary><pre class="why">{escape(s["message"])}</pre></details>')
    elif s.get("message"):
        parts.append(f'<h3>Why it failed</h3><pre class="why">{escape(s["message"])}</pre>')
    if plot_b64:
        parts.append(f'<img class="timeline-plot" alt="timeline of {escape(s["name"])}" '
                     f'src="data:image/png;base64,{plot_b64}">')
    parts.append("<h3>Done and expected (the steps, thresholds in their text)</h3>" + (_table(
        ["", "step", "status", "took"], steps) or "<p>no steps recorded</p>"))
    parts.append("<h3>Measured</h3>" + (_table(["figure", "value", "at"], figures) or "<p>no figures recorded</p>"))
    parts += [_table(["write-unavailability window of", "longest gap", "from", "to", ""], unavailable),
              _table(["fault", "target", "from", "to"], faults), _table(["load", "rate", "achieved", "requests",
              "failures", "p99"], loads), _table(["zone pair", "wire", "peer metrics"], traffic),
              _table(["traffic not counted", "member or pair", "as", "why"], uncounted),
              _table(["anomaly", "details"], anomalies), _table(["placement", "pod", "zone", "node", "phase"], placement),
              _table(["pods sampled in", "samples", "failed to list", "fewest Running+ready per zone",
                      "most Pending"], pods),
              _table(["etcd-druid reported, of", "from", "ready", "replicas ready", "conditions", "members"], druid),
              _table(["detector (time to detect, from the first fault's effect)", "zone", "before", "failing after",
                      "ok again after", "unreadable for"], detected)]
    if links:
        parts.append(f"<p>{links}</p>")
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _not_run_item(entry: dict[str, Any] | str) -> str:
    """A test that did not run, with why (schema 1 summaries held bare node ids)."""
    if isinstance(entry, str):
        return f"<li>{escape(entry)}</li>"
    return f"<li>{escape(entry['nodeid'])}: {escape(entry.get('reason') or '')}</li>"


def render(summary: dict[str, Any], run_dir: Path, plot: Callable[[int, dict[str, Any]], str | None]) -> str:
    """The page; `plot(index, scenario)` gives each scenario's PNG (base64) or None."""
    env = summary.get("environment", {})
    counts = ", ".join(f"{n} {k}" for k, n in summary.get("counts", {}).items()) or "no scenarios"
    if summary.get("other_tests_not_listed"):
        counts += f" ({summary['other_tests_not_listed']} passed or skipped tests that are not scenarios are not listed)"
    state = ("interrupted" if summary.get("interrupted") else "all passed" if summary.get("ok")
             else "nothing ran" if not sum(n for k, n in summary.get("counts", {}).items() if k != "skipped")
             else "failures")
    env_rows = [[escape(k), escape(", ".join(v) if isinstance(v, list) else str(v))] for k, v in env.items()]
    nav = " ".join(f'<a href="#scenario-{i}">{escape(s["name"][:40])}</a>' for i, s in enumerate(summary["scenarios"]))
    sections = [scenario_html(i, s, plot(i, s), run_dir) for i, s in enumerate(summary["scenarios"])]
    not_run = summary.get("not_run", [])
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ha-harness run {escape(summary['run_id'])}</title><style>{CSS}</style></head><body>",
        f"<h1>ha-harness run {escape(summary['run_id'])}: {escape(state)}</h1>",
        f"<p>{escape(counts)} · started {escape(str(summary.get('started', '')))} · "
        f"{_fmt(summary.get('duration_s'), 's')} · exit status {escape(str(summary.get('exitstatus')))} · "
        f'<a href="junit.xml">JUnit</a> · <a href="cucumber.json">cucumber JSON</a> · '
        f'<a href="summary.json">summary.json</a> · <a href="../trends.html">trends</a></p>',
        _table(["environment", ""], env_rows), f"<nav>{nav}</nav>", *sections,
        (f"<h3>Not run ({len(not_run)})</h3><ul>" + "".join(_not_run_item(n) for n in not_run) + "</ul>")
        if not_run else "",
        "</body></html>",
    ])
