"""A catch-up's figures from its readings (pure): how long it took, how far behind the member
was at its return, the MiB per zone pair, and the leader's part (snapshots, bytes it counts as
sent, its database, its CPU while the member was away and during the catch-up)."""

from __future__ import annotations

from typing import Any

from harness.probes.catch_up import CatchUpReadings, LeaderReading
from harness.validate.traffic import rates

MIB = 2**20


def figures(r: CatchUpReadings) -> dict[str, Any]:
    traffic = rates(r.traffic_first, r.traffic_last)
    return {"seconds": round(r.caught_up_at - r.back_at, 2), "target_revision": r.target,
            "revision_before": r.revision_before, "behind": r.target - r.revision_before,
            "away_s": round(r.back_at - r.away.at, 2),
            "mib": {pair: round(v["wire_kib_s"] * traffic["seconds"] / 1024, 2) if v["wire_kib_s"] is not None else None
                    for pair, v in traffic["pairs"].items()},
            "window_s": traffic["seconds"], "not_available": traffic.get("not_available", {}),
            "snapshots_sent": r.reached.snapshots_sent - r.returned.snapshots_sent,
            "leader_counted_mib": round((r.reached.sent_bytes - r.returned.sent_bytes) / MIB, 2),
            "leader_db_mib": round(r.reached.db_bytes / MIB, 2),
            "leader": r.leader,
            "leader_cpu_before": _per_s(r.away, r.returned),
            "leader_cpu_during": _per_s(r.returned, r.reached)}


def _per_s(a: LeaderReading, b: LeaderReading) -> float:
    """The leader's CPU seconds per second between two readings."""
    return round((b.cpu_seconds - a.cpu_seconds) / max(b.at - a.at, 1e-3), 3)
