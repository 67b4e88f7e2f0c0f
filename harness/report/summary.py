"""summary.json: per scenario what was done, expected and measured, and why it failed; built
from the plugin's result records and the scenarios' timeline files (pure but for reading them)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from harness.probes.availability import recorded_path
from harness.probes.etcd_status import STALE_AFTER_S
from harness.probes.samples import Sample
from harness.report import figures as fig
from harness.timeline import Event
from harness.validate import detection
from harness.validate.availability import longest_write_gap

SCHEMA = 2  # 2: write_unavailability per probe path; not_run lists {nodeid, name, reason}, skipped included
NEVER_STARTED = "never started: the session ended before it"


def load_timeline(path: str | Path | None) -> dict[str, Any]:
    """A scenario's timeline JSON ({} when it was never written or cannot be read)."""
    if not path:
        return {}
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def samples(history: dict[str, Any]) -> list[Sample]:
    names = history.get("fields", [])
    return [Sample(**dict(zip(names, row))) for row in history.get("samples", [])]


def fault_windows(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        if e["kind"] != "fault":
            continue
        d = e.get("data", {})
        out.append({"fault": e["name"], "target": d.get("target"), "start": e["start"], "end": e.get("end"),
                    "injected_at": d.get("injected_at"), "effective_at": d.get("effective_at"),
                    "effect": d.get("effect"), "healed_at": d.get("healed_at"),
                    **({"error": d["error"]} if "error" in d else {})})
    return out


def probe_name(history: dict[str, Any]) -> str:
    """"<path> via <zone>", the name a probe's figures go by."""
    return f"{recorded_path(history)} via {history.get('via_zone') or '?'}"


def write_unavailability(timeline: dict[str, Any], windows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per write probe (by its name): the longest stretch without an acknowledged write of that probe
    overlapping the fault windows (from the first fault taking effect to the last heal, the stretch
    still open then included). Per probe because one path's acknowledgements say nothing about
    another's: pooled, etcd's writes would hide the shoot API's outage. {} without faults."""
    if not windows:
        return {}
    start = min(w.get("effective_at") or w["injected_at"] or w["start"] for w in windows)
    out: dict[str, dict[str, Any]] = {}
    for h in timeline.get("histories", []):
        writes = [s for s in samples(h) if s.kind == "write"]
        if not writes:
            continue
        # An unhealed fault's window ends where this probe stopped observing.
        end = max(max(start, w["healed_at"] or w["end"] or max(s.end for s in writes)) for w in windows)
        name = probe_name(h)
        if name in out:  # two probes on one path from one zone: told apart by their key prefix
            name = f"{name} ({h.get('prefix')})"
        gap = longest_write_gap(writes, start, end)
        out[name] = {"start": round(gap.start, 4), "end": round(gap.end, 4), "length_s": round(gap.length, 4),
                     "open": gap.open}
    return out


def time_to_detect(timeline: dict[str, Any], windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each detector the scenario watched: how long after the first fault took effect it first said
    "failing" (and "ok" again), beside when each write probe first saw a write fail. [] without
    faults or detectors."""
    events = [Event(**e) for e in timeline.get("events", []) if e["kind"] == detection.EVENT]
    if not windows or not events:
        return []
    start = min(w.get("effective_at") or w["injected_at"] or w["start"] for w in windows)
    until = max(e["start"] for e in timeline["events"])
    clients = {probe_name(h): detection.first_failure(samples(h), start) for h in timeline.get("histories", [])}
    return detection.table(detection.detections(events, start, until), start, clients)


def loads(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("rate", "requests", "failures", "ops_per_s", "p99_ms", "processes")
    return [{"profile": e["name"], "start": e["start"], "end": e.get("end"),
             **{k: e["data"][k] for k in keep if k in e.get("data", {})}} for e in events if e["kind"] == "load"]


def traffic(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each measurement's rates, with what it could not count (failed scrapes, reset counters)
    and the sources the environment does not have."""
    return [{"start": e["start"], "end": e.get("end"), "seconds": e["data"].get("seconds"),
             "pairs": e["data"].get("pairs", {}), "total_kib_s": e["data"].get("total_kib_s", {}),
             "gaps": e["data"].get("gaps", []), "resets": e["data"].get("resets", []),
             "not_available": e["data"].get("not_available", {})}
            for e in events if e["kind"] == "traffic" and "pairs" in e.get("data", {})]


def pod_phases(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per sampled namespace: how many samples, the first and last pods per zone and phase, and
    per zone the fewest Running-and-ready pods seen; the full series stays in the timeline."""
    by_ns: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e["kind"] == "pods":
            by_ns.setdefault(e["name"], []).append(e)
    out = []
    for ns, got in by_ns.items():
        ok = [e for e in got if "zones" in e.get("data", {})]
        zones = sorted({z for e in ok for z in e["data"]["zones"]} - {"-"})
        out.append({"namespace": ns, "samples": len(got), "errors": len(got) - len(ok),
                    "first": ok[0]["data"]["zones"] if ok else None, "last": ok[-1]["data"]["zones"] if ok else None,
                    "min_ready": {z: min(e["data"]["zones"].get(z, {}).get("ready", 0) for e in ok) for z in zones},
                    "max_pending": max((sum(c.get("pending", 0) for c in e["data"]["zones"].values()) for e in ok),
                                       default=0)})
    return out


def etcd_status(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """What etcd-druid reported of each etcd (harness.probes.etcd_status), each change once with
    when it was first read (a status druid stopped updating is "stale"), and per etcd the reads that
    failed; the full series stays in the timeline."""
    out: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    failed: dict[str, int] = {}
    for e in events:
        if e["kind"] != "etcd-status":
            continue
        data = e.get("data", {})
        if "error" in data:
            failed[e["name"]] = failed.get(e["name"], 0) + 1
            continue
        said = {k: data.get(k) for k in ("ready", "ready_replicas", "replicas", "conditions", "members")}
        said["stale"] = (data.get("updated_ago") or 0.0) > STALE_AFTER_S
        if last.get(e["name"]) != said:
            last[e["name"]] = said
            out.append({"etcd": e["name"], "at": e["start"], **said})
    return out + [{"etcd": name, "failed_reads": n} for name, n in sorted(failed.items())]


def scenario(result: dict[str, Any], timeline: dict[str, Any] | None = None) -> dict[str, Any]:
    """One scenario's summary from its result record and its timeline."""
    timeline = load_timeline(result.get("timeline")) if timeline is None else timeline
    events = timeline.get("events", [])
    windows = fault_windows(events)
    return {
        "nodeid": result["nodeid"],
        "name": result.get("name") or result["nodeid"].rpartition("::")[2],
        "feature": result.get("feature"),
        "tags": result.get("tags", []),
        "result": result.get("result", "unknown"),
        "duration_s": round(result.get("duration", 0.0), 3),
        "message": result.get("message"),
        "crash": result.get("crash"),
        "steps": result.get("steps", []),
        "fault_windows": windows,
        "write_unavailability": write_unavailability(timeline, windows),
        "figures": fig.from_events(events),
        "load": loads(events),
        "traffic": traffic(events),
        "anomalies": [{"name": e["name"], **e.get("data", {})} for e in events if e["kind"] == "anomaly"],
        "pod_phases": pod_phases(events),
        "etcd_status": etcd_status(events),
        "time_to_detect": time_to_detect(timeline, windows),
        "placement": [{"name": e["name"], "pods": e["data"].get("pods", [])} for e in events if e["kind"] == "placement"],
        "timeline": result.get("timeline"),
        "porcupine": result.get("porcupine"),
        "logs": result.get("logs", []),
    }


def _name(result: dict[str, Any]) -> str:
    return result.get("name") or result["nodeid"].rpartition("::")[2]


def not_run(results: list[dict[str, Any]], never_started: list[str]) -> list[dict[str, Any]]:
    """Every test that did not run and why: the skipped ones with their skip reason (a run whose
    scenarios all skip is no green run), then those the session never reached."""
    skipped = [{"nodeid": r["nodeid"], "name": _name(r), "reason": r.get("message") or "skipped without a reason"}
               for r in results if r.get("result") == "skipped"]
    return skipped + [{"nodeid": n, "name": n.rpartition("::")[2], "reason": NEVER_STARTED} for n in never_started]


def scenarios_ran(results: list[dict[str, Any]]) -> int:
    """Gherkin scenarios that ran (passed, failed, or were cut short); a skipped one did not."""
    return sum(1 for r in results if r.get("feature") and r.get("result") != "skipped")


def build(run_id: str, results: list[dict[str, Any]], environment: dict[str, Any], session: dict[str, Any],
          timelines: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The whole run's summary; `timelines` (nodeid -> timeline) overrides reading the files."""
    timelines = timelines or {}
    counts = Counter(r.get("result", "unknown") for r in results)
    # Gherkin scenarios are what people read; a plain test is listed only when it did not pass
    # (JUnit has them all), so a `make test` report is not a thousand unit tests long.
    listed = [r for r in results if r.get("feature") or r.get("result") not in ("passed", "skipped")]
    ran = sum(n for result, n in counts.items() if result != "skipped")
    return {
        "schema": SCHEMA,
        "run_id": run_id,
        **session,
        "environment": environment,
        "counts": dict(sorted(counts.items())),
        # A run in which nothing ran (all skipped, none collected) passed nothing: not ok.
        "ok": not session.get("interrupted") and ran > 0
        and all(r.get("result") in ("passed", "skipped") for r in results),
        "scenarios_ran": scenarios_ran(results),
        "not_run": not_run(results, session.get("not_run", [])),
        "scenarios": [scenario(r, timelines.get(r["nodeid"])) for r in listed],
        "other_tests_not_listed": len(results) - len(listed),
    }
