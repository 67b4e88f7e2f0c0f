"""Cross-zone traffic rates from two traffic samples (pure)."""

from __future__ import annotations

from typing import Any

from harness.probes.traffic import TrafficSample

KIB = 1024.0


def rates(first: TrafficSample, last: TrafficSample) -> dict[str, Any]:
    """KiB/s per zone pair ("zone-a->zone-b": {"wire_kib_s", "metrics_kib_s"}) and in total."""
    seconds = last.at - first.at
    if seconds <= 0:
        raise ValueError("the second sample must be later than the first")
    pairs = sorted(set(first.wire) | set(last.wire))

    def per_s(a: dict[str, int], b: dict[str, int], key: str) -> float:
        return round(max(0, b.get(key, 0) - a.get(key, 0)) / KIB / seconds, 2)

    out = {p: {"wire_kib_s": per_s(first.wire, last.wire, p), "metrics_kib_s": per_s(first.metrics, last.metrics, p)}
           for p in pairs}
    return {
        "seconds": round(seconds, 2),
        "pairs": out,
        "total_kib_s": {"wire": round(sum(v["wire_kib_s"] for v in out.values()), 2),
                        "metrics": round(sum(v["metrics_kib_s"] for v in out.values()), 2)},
    }


def between(figures: dict[str, Any], a: str, b: str) -> dict[str, float]:
    """Both directions between two zones, added up."""
    there, back = figures["pairs"].get(f"{a}->{b}", {}), figures["pairs"].get(f"{b}->{a}", {})
    return {k: round(there.get(k, 0.0) + back.get(k, 0.0), 2) for k in ("wire_kib_s", "metrics_kib_s")}
