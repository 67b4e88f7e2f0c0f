"""Plots drawn with matplotlib (Agg, no display), returned as base64 PNG for a self-contained page."""

from __future__ import annotations

import base64
import io
from typing import Any, Iterable, Sequence

import matplotlib

matplotlib.use("Agg")
# Titles and labels are test ids and names: a "$" in them is text, not TeX to typeset.
matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from harness.report.summary import probe_name, samples  # noqa: E402

DPI = 80
OK, FAILED, FAULT, LOAD, LEADER = "#2e7d32", "#c62828", "#ef9a9a", "#90caf9", "#6a1b9a"


def to_png_b64(figure: Figure) -> str:
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=DPI)  # layout done by tight_layout: one draw, not two
    plt.close(figure)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def leader_changes(status: Iterable[Any]) -> list[tuple[float, int]]:
    """(time, new leader id) whenever the leader the members report changes (first one included)."""
    out: list[tuple[float, int]] = []
    for s in sorted((s for s in status if s.ok and s.leader), key=lambda s: s.end):
        if not out or out[-1][1] != s.leader:
            out.append((s.end, s.leader))
    return out


def merged(spans: Iterable[tuple[float, float]], join: float = 0.05) -> list[tuple[float, float]]:
    """Spans closer than `join` s merged into one (a few segments to draw instead of thousands)."""
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a - out[-1][1] <= join:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _probe_rows(ax: Any, timeline: dict[str, Any]) -> list[str]:
    labels: list[str] = []
    for i, history in enumerate(timeline.get("histories", [])):
        got = samples(history)
        name = probe_name(history)
        for kind in ("write", "read"):
            rows = [s for s in got if s.kind == kind]
            if not rows:
                continue
            y = len(labels)
            labels.append(f"{kind}s {name}")
            for ok, colour in ((True, OK), (False, FAILED)):
                spans = merged((s.start, max(s.end, s.start + 0.002)) for s in rows if s.ok is ok)
                if spans:
                    ax.hlines([y + (0.12 if ok else -0.12)] * len(spans), [a for a, _ in spans], [b for _, b in spans],
                              colors=colour, linewidth=5 if ok else 7,
                              label=f"{kind} {'ok' if ok else 'failed'}" if i == 0 else None)
        members = history.get("member_ids", {})
        for t, leader in leader_changes(s for s in got if s.kind == "status"):
            ax.axvline(t, color=LEADER, linestyle="--", linewidth=1)
            ax.annotate(f"leader {members.get(str(leader), leader)}", (t, 1.0), xycoords=("data", "axes fraction"),
                        rotation=90, fontsize=7, va="top", ha="right", color=LEADER)
    return labels


def pod_series(events: Iterable[dict[str, Any]]) -> tuple[str, list[float], dict[str, list[int]], list[int]]:
    """The first sampled namespace's "pods" samples: its name, the sample times, Running-and-ready
    pods per zone and Pending pods in all (samples that could not list the pods are left out)."""
    got = [e for e in events if e["kind"] == "pods" and "zones" in e.get("data", {})]
    got = [e for e in got if e["name"] == got[0]["name"]] if got else []
    zones = sorted({z for e in got for z in e["data"]["zones"]} - {"-"})
    times = [e["start"] for e in got]
    ready = {z: [e["data"]["zones"].get(z, {}).get("ready", 0) for e in got] for z in zones}
    pending = [sum(c.get("pending", 0) for c in e["data"]["zones"].values()) for e in got]
    return (got[0]["name"] if got else ""), times, ready, pending


def _pods_panel(ax: Any, events: list[dict[str, Any]], end_all: float) -> None:
    namespace, times, ready, pending = pod_series(events)
    for e in events:
        if e["kind"] == "fault":
            d = e.get("data", {})
            ax.axvspan(d.get("injected_at") or e["start"], d.get("healed_at") or e.get("end") or end_all,
                       color=FAULT, alpha=0.45, lw=0)
    for zone, ys in ready.items():
        ax.step(times, ys, where="post", linewidth=1.5, label=f"{zone} Running+ready")
    ax.step(times, pending, where="post", color="#424242", linestyle="--", linewidth=1.5, label="Pending (all zones)")
    ax.set_xlim(0, end_all * 1.02)
    ax.set_ylim(0, 1.5 * max([*pending, *(y for ys in ready.values() for y in ys), 1]) + 0.5)  # room for the legend
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("pods")
    ax.set_title(f"pods of {namespace} per zone", fontsize=9, loc="left")
    ax.legend(loc="upper left", fontsize=7, ncols=5)


def timeline_figure(timeline: dict[str, Any], title: str) -> Figure:
    """Fault windows shaded, load spans, probe successes and failures, leader changes and,
    when sampled, pods per zone and phase, and when measured, cross-zone KiB/s per zone pair."""
    events = timeline.get("events", [])
    traffic = [e for e in events if e["kind"] == "traffic" and e.get("data", {}).get("pairs")]
    pods = any(e["kind"] == "pods" and "zones" in e.get("data", {}) for e in events)
    heights = [3] + [2] * (bool(pods) + bool(traffic))
    fig, axes = plt.subplots(len(heights), 1, figsize=(10, 2.6 + 1.6 * (len(heights) - 1)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    ax = axes[0][0]
    labels = _probe_rows(ax, timeline)
    end_all = max([e.get("end") or e["start"] for e in events] + [0.1])
    shown = 0
    for e in events:
        if e["kind"] == "fault":
            d = e.get("data", {})
            a, b = d.get("injected_at") or e["start"], d.get("healed_at") or e.get("end") or end_all
            ax.axvspan(a, b, color=FAULT, alpha=0.45, lw=0)
            ax.annotate(f"{e['name']} {d.get('target', '')}", (a, 0.02 + 0.1 * shown), xycoords=("data", "axes fraction"),
                        fontsize=8, color="#b71c1c")
            shown += 1
        elif e["kind"] == "load":
            ax.axvspan(e["start"], e.get("end") or end_all, color=LOAD, alpha=0.25, lw=0)
            ax.annotate(f"load {e['name']} {e.get('data', {}).get('rate', '')}/s", (e["start"], 0.9),
                        xycoords=("data", "axes fraction"), fontsize=8, color="#0d47a1")
        elif e["kind"] == "traffic":
            ax.axvspan(e["start"], e.get("end") or end_all, color="#fff59d", alpha=0.4, lw=0)
    ax.set_yticks(range(len(labels)), labels or [])
    ax.set_ylim(-0.8, max(len(labels), 1) - 0.2)
    ax.set_xlim(0, end_all * 1.02)
    ax.set_xlabel("seconds since the scenario's start")
    ax.set_title(title, fontsize=9, loc="left")
    if labels:
        ax.legend(loc="upper right", fontsize=7, ncols=4)
    if pods:
        _pods_panel(axes[1][0], events, end_all)
    if traffic:
        _traffic_bars(axes[-1][0], traffic[-1]["data"]["pairs"])
    fig.tight_layout()
    return fig


def _traffic_bars(ax: Any, pairs: dict[str, dict[str, float | None]]) -> None:
    names = sorted(pairs)
    xs = range(len(names))

    def heights(key: str) -> list[float]:
        # A pair that could not be counted (None) gets no bar rather than one of zero height.
        return [float("nan") if pairs[n].get(key) is None else float(pairs[n][key]) for n in names]  # type: ignore[arg-type]

    ax.bar([x - 0.2 for x in xs], heights("wire_kib_s"), 0.4, label="wire (router counters)")
    ax.bar([x + 0.2 for x in xs], heights("metrics_kib_s"), 0.4, label="etcd peer metrics")
    ax.set_xticks(list(xs), names, fontsize=7, rotation=20)
    ax.set_ylabel("KiB/s")
    ax.set_title("cross-zone traffic per zone pair", fontsize=9, loc="left")
    ax.legend(fontsize=7)


def timeline_png(timeline: dict[str, Any], title: str) -> str:
    return to_png_b64(timeline_figure(timeline, title))


def lines_png(series: dict[str, Sequence[tuple[str, float]]], title: str, ylabel: str) -> str:
    """One line per series over the runs (x: run ids in order)."""
    runs = sorted({r for points in series.values() for r, _ in points})
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for name, points in sorted(series.items()):
        ax.plot([runs.index(r) for r, _ in points], [v for _, v in points], marker="o", label=name[:60])
    ax.set_xticks(range(len(runs)), [r[:15] for r in runs], rotation=30, fontsize=7)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9, loc="left")
    if series:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return to_png_b64(fig)


def matrix_png(rows: list[str], runs: list[str], cell: dict[tuple[str, str], str], title: str) -> str:
    """Scenarios x runs, each cell coloured by its result."""
    colours = {"passed": OK, "failed": FAILED, "error": FAILED, "interrupted": "#ff9800", "skipped": "#bdbdbd"}
    fig, ax = plt.subplots(figsize=(10, 0.25 * len(rows) + 1.5))
    for y, row in enumerate(rows):
        for x, run in enumerate(runs):
            result = cell.get((row, run))
            if result:
                ax.add_patch(matplotlib.patches.Rectangle((x, y), 0.95, 0.9, color=colours.get(result, "#9e9e9e")))
    ax.set_xlim(0, max(len(runs), 1))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([x + 0.5 for x in range(len(runs))], [r[:15] for r in runs], rotation=30, fontsize=7)
    ax.set_yticks([y + 0.45 for y in range(len(rows))], [r[:70] for r in rows], fontsize=7)
    ax.set_title(title, fontsize=9, loc="left")
    fig.tight_layout()
    return to_png_b64(fig)
