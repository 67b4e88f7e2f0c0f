"""Recorded-looking timelines for the report's tests (generated: deterministic, no region)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIELDS = ["kind", "member", "start", "end", "ok", "seq", "revision", "leader", "term", "error"]
LEADERS = {"1001": "etcd-0", "1002": "etcd-1", "1003": "etcd-2"}


def _writes(member: str, gap: tuple[float, float], seconds: float, step: float) -> list[list[Any]]:
    """A write every `step` s from 0 to `seconds`, failing inside `gap`."""
    out: list[list[Any]] = []
    t, seq = 0.0, 0
    while t < seconds:
        seq += 1
        ok = not (gap[0] < t + 0.01 < gap[1])
        out.append(["write", member, t, t + 0.01, ok, seq, 100 + seq if ok else None, None, None,
                    None if ok else "timeout"])
        t += step
    return out


def shoot_history(gap: tuple[float, float], seconds: float = 6.0) -> dict[str, Any]:
    """The shoot API probe's history: a write every 0.1 s, failing inside `gap`."""
    return {"prefix": "probe-s-", "via_zone": "zone-b", "member_ids": {}, "path": "shoot-api", "fields": FIELDS,
            "samples": _writes("shoot-api", gap, seconds, 0.1)}


def outage_timeline(nodeid: str, gap: tuple[float, float] = (2.0, 3.4), seconds: float = 6.0) -> dict[str, Any]:
    """A leader-zone outage from 2.0 s to 4.0 s; writes fail inside `gap`; leader 1001 -> 1002."""
    samples = _writes("etcd-1", gap, seconds, 0.05)
    t, seq = 0.0, 0
    while t < seconds:
        seq += 1
        samples.append(["read", "etcd-1", t, t + 0.005, True, None, None, None, None, None])
        samples.append(["status", "etcd-1", t, t + 0.004, True, None, 100 + seq, 1001 if t < 3.0 else 1002, 2, None])
        t += 0.05
    events = [
        {"kind": "fault", "name": "zone-outage", "start": 1.99, "end": 4.05,
         "data": {"target": "zone-a", "injected_at": 2.0, "healed_at": 4.0}},
        {"kind": "figure", "name": "time to a new leader", "start": 4.1, "end": 4.1, "data": {"value": 1.2, "unit": "s"}},
        {"kind": "figure", "name": "write-unavailability window", "start": 4.2, "end": 4.2,
         "data": {"value": round(gap[1] - gap[0], 2), "unit": "s"}},
    ]
    return {"base_monotonic": 100.0, "events": events, "nodeid": nodeid,
            "histories": [{"prefix": "/p/", "via_zone": "zone-b", "member_ids": LEADERS, "path": "etcd",
                           "fields": FIELDS, "samples": samples}]}


def traffic_timeline(nodeid: str, kib: float = 400.0) -> dict[str, Any]:
    pairs = {"zone-a->zone-b": {"wire_kib_s": kib / 2, "metrics_kib_s": kib / 2.4},
             "zone-a->zone-c": {"wire_kib_s": kib / 2, "metrics_kib_s": kib / 2.4}}
    events = [
        {"kind": "load", "name": "put", "start": 0.1, "end": 7.0,
         "data": {"rate": 100, "requests": 690, "failures": 0, "ops_per_s": 99.5, "p99_ms": 31}},
        {"kind": "traffic", "name": "measure", "start": 1.1, "end": 6.1,
         "data": {"seconds": 5, "pairs": pairs, "total_kib_s": {"wire": kib, "metrics": kib / 1.2}}},
        *({"kind": "figure", "name": f"cross-zone {p}", "start": 6.2, "end": 6.2,
           "data": {"value": v["wire_kib_s"], "unit": "KiB/s"}} for p, v in pairs.items()),
    ]
    return {"base_monotonic": 50.0, "events": events, "nodeid": nodeid, "histories": []}


def pods_timeline(nodeid: str, namespace: str = "shoot--harness--zone-multi-zone") -> dict[str, Any]:
    """GEP-20's outage seen by the pod sampler: zone-a's 3 pods go not ready at 5 s, are
    force-deleted at 12 s (2 Pending, unbound) and one comes back Running in zone-b at 15 s."""
    def zones(t: float) -> dict[str, dict[str, int]]:
        a = {"ready": 3, "not_ready": 0, "pending": 0, "other": 0}
        b = {"ready": 3, "not_ready": 0, "pending": 0, "other": 0}
        out = {"zone-a": a, "zone-b": b, "zone-c": {"ready": 3, "not_ready": 0, "pending": 0, "other": 0}}
        if 5 <= t < 12:
            a.update(ready=0, not_ready=3)
        elif t >= 12:
            a.update(ready=0)
            out["-"] = {"ready": 0, "not_ready": 0, "pending": 2 if t >= 15 else 3, "other": 0}
            if t >= 15:
                b["ready"] = 4
        return out

    events: list[dict[str, Any]] = [
        {"kind": "fault", "name": "zone-outage", "start": 4.0, "end": 20.0,
         "data": {"target": "zone-a", "injected_at": 4.0, "healed_at": 20.0}},
        {"kind": "probe", "name": "start", "start": 0.5, "end": 0.5, "data": {"target": "pods", "namespace": namespace}},
    ]
    for i in range(22):
        t = 1.0 + i
        data: dict[str, Any] = {"error": "KubeApiError: timed out"} if i == 10 else {"zones": zones(t)}
        events.append({"kind": "pods", "name": namespace, "start": t, "end": t, "data": data})
    return {"base_monotonic": 10.0, "events": events, "nodeid": nodeid, "histories": []}


def write(path: Path, timeline: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(timeline))
    return path


def results(directory: Path, scenarios: int = 3) -> list[dict[str, Any]]:
    """Result records as the plugin keeps them: passed, failed (with a message), traffic, ..."""
    out = []
    for i in range(scenarios):
        nodeid = f"features/test_features.py::test_scenario_{i}"
        kind = i % 3
        tl = traffic_timeline(nodeid) if kind == 2 else outage_timeline(nodeid)
        rec: dict[str, Any] = {
            "nodeid": nodeid, "name": f"scenario {i}", "feature": "outages", "tags": ["outage"],
            "result": "failed" if kind == 1 else "passed", "duration": 6.5,
            "steps": [{"keyword": "When", "name": "the target zone goes down for 2 s", "failed": False, "duration": 2.0},
                      {"keyword": "Then", "name": "writes resume within 1 s of the outage", "failed": kind == 1,
                       "duration": 0.1}],
            "timeline": str(write(directory / "runs" / f"s{i}.json", tl)),
        }
        if kind == 1:
            rec["message"] = ("ToleranceViolation: write-unavailability window: expected at most 1 s, "
                              "got 1.4 (Gap(start=2.0, end=3.4))")
        out.append(rec)
    return out
