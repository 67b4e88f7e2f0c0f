"""Cross-zone traffic rates from two traffic samples (pure).

A rate is only computed between two readings of the same counters. A member whose metrics were
not read at either end is a gap, a counter that went down (or a member that restarted) a reset:
neither is counted as zero nor as the bytes since the member started, and the pairs its zone
sends on have no metrics figure (None). Both are listed with the figures, for the steps to judge.
"""

from __future__ import annotations

from typing import Any

from harness.probes.traffic import Scrape, TrafficSample

KIB = 1024.0
SOURCES = ("wire", "metrics")


def _wire(first: TrafficSample, last: TrafficSample) -> tuple[dict[str, int | None], list[dict[str, Any]],
                                                               list[dict[str, Any]]]:
    """Bytes per pair at the router over the interval; gaps and resets of its counters."""
    out: dict[str, int | None] = {}
    gaps: list[dict[str, Any]] = []
    resets: list[dict[str, Any]] = []
    if first.wire is None or last.wire is None:  # an environment without counters on the wire
        return out, gaps, resets
    for p in sorted(set(first.wire) | set(last.wire)):
        a, b = first.wire.get(p), last.wire.get(p)
        out[p] = None
        if a is None or b is None:
            gaps.append({"source": "wire", "pair": p,
                         "reason": f"no router counter at the {'first' if a is None else 'last'} sample"})
        elif b < a:  # the table was replaced in between
            resets.append({"source": "wire", "pair": p, "reason": f"router counter went down from {a} to {b} bytes"})
        else:
            out[p] = b - a
    return out, gaps, resets


def _unread(scrape: Scrape | None, which: str) -> str | None:
    if scrape is None:
        return f"not scraped at the {which} sample"
    if scrape.sent is None:
        return f"scrape failed at the {which} sample: {scrape.error}"
    return None


def _metrics(first: TrafficSample, last: TrafficSample) -> tuple[dict[str, int], set[str], list[dict[str, Any]],
                                                                  list[dict[str, Any]]]:
    """Bytes per pair the members' peer metrics count over the interval, the zones with a member
    not counted (a gap or a reset), and those gaps and resets."""
    sent: dict[str, int] = {}
    uncounted: set[str] = set()
    gaps, resets = [], []
    for member in sorted(set(first.metrics) | set(last.metrics)):
        a, b = first.metrics.get(member), last.metrics.get(member)
        zone = (a or b).zone  # type: ignore[union-attr]
        reason = _unread(a, "first") or _unread(b, "last")
        if reason:
            gaps.append({"source": "metrics", "member": member, "zone": zone, "reason": reason})
            uncounted.add(zone)
            continue
        assert a is not None and b is not None and a.sent is not None and b.sent is not None
        down = {p: (n, b.sent.get(p, 0)) for p, n in a.sent.items() if b.sent.get(p, 0) < n}
        if a.started is not None and b.started is not None and a.started != b.started:
            reason = f"restarted during the interval (process start {a.started:.0f} -> {b.started:.0f})"
        elif down:
            reason = "counters went down: " + ", ".join(f"{p} {x} -> {y} bytes" for p, (x, y) in sorted(down.items()))
        if reason:
            resets.append({"source": "metrics", "member": member, "zone": zone, "reason": reason})
            uncounted.add(zone)
            continue
        for p in set(a.sent) | set(b.sent):  # a counter first seen at the end started from zero in between
            sent[p] = sent.get(p, 0) + b.sent.get(p, 0) - a.sent.get(p, 0)
    return sent, uncounted, gaps, resets


def rates(first: TrafficSample, last: TrafficSample) -> dict[str, Any]:
    """KiB/s per zone pair ("zone-a->zone-b": {"wire_kib_s", "metrics_kib_s"}, None where it could
    not be counted) and in total (None when any pair could not), with the "gaps" and "resets", and
    under "not_available" a source the environment does not have and why."""
    seconds = last.at - first.at
    if seconds <= 0:
        raise ValueError("the second sample must be later than the first")
    wire, wire_gaps, wire_resets = _wire(first, last)
    sent, uncounted, metric_gaps, metric_resets = _metrics(first, last)

    def per_s(n: int | None) -> float | None:
        return None if n is None else round(n / KIB / seconds, 2)

    out = {p: {"wire_kib_s": per_s(wire.get(p)),
               "metrics_kib_s": None if p.split("->")[0] in uncounted else per_s(sent.get(p, 0))}
           for p in sorted(set(wire) | set(sent))}
    figures: dict[str, Any] = {
        "seconds": round(seconds, 2),
        "pairs": out,
        "total_kib_s": {"wire": _sum(v["wire_kib_s"] for v in out.values()),
                        "metrics": _sum(v["metrics_kib_s"] for v in out.values())},
        "gaps": wire_gaps + metric_gaps,
        "resets": wire_resets + metric_resets,
    }
    if first.wire_unavailable:
        figures["not_available"] = {"wire": first.wire_unavailable}
    return figures


def _sum(values: Any) -> float | None:
    """The sum, or None when any part is unknown (a partial sum would pass for the whole)."""
    got = list(values)
    return None if any(v is None for v in got) else round(sum(got), 2)


def uncounted(figures: dict[str, Any], source: str) -> list[str]:
    """What `source` ("wire" or "metrics") could not count, one line each: which member's scrape
    failed or which counter reset, and why."""
    if source not in SOURCES:
        raise ValueError(f"source is one of {SOURCES}, got {source!r}")
    out = []
    for kind in ("gaps", "resets"):
        for e in figures.get(kind, []):
            if e["source"] == source:
                who = f"{e['member']} ({e['zone']})" if "member" in e else e["pair"]
                out.append(f"{who}: {e['reason']}")
    return out


def between(figures: dict[str, Any], a: str, b: str) -> dict[str, float | None]:
    """Both directions between two zones, added up (None when either could not be counted)."""
    there, back = figures["pairs"].get(f"{a}->{b}", {}), figures["pairs"].get(f"{b}->{a}", {})
    return {k: _sum((there.get(k, 0.0), back.get(k, 0.0))) for k in ("wire_kib_s", "metrics_kib_s")}
