"""reports/history.sqlite: runs, scenarios, results and figures across runs, for the trends."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, started TEXT, duration_s REAL, exitstatus INTEGER,
  interrupted INTEGER, provider TEXT, etcd_version TEXT, kubernetes_version TEXT, zones TEXT);
CREATE TABLE IF NOT EXISTS scenarios (nodeid TEXT PRIMARY KEY, name TEXT, feature TEXT);
CREATE TABLE IF NOT EXISTS results (run_id TEXT, nodeid TEXT, result TEXT, duration_s REAL, message TEXT,
  PRIMARY KEY (run_id, nodeid));
CREATE TABLE IF NOT EXISTS figures (run_id TEXT, nodeid TEXT, name TEXT, value REAL, unit TEXT);
CREATE INDEX IF NOT EXISTS figures_by_name ON figures (name);
"""


def connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=30)
    db.executescript(SCHEMA)
    return db


def record(path: Path, summary: dict[str, Any]) -> None:
    """Store one run's summary (again: replaced)."""
    env = summary.get("environment", {})
    run = summary["run_id"]
    with connect(path) as db:
        db.execute("DELETE FROM results WHERE run_id = ?", (run,))
        db.execute("DELETE FROM figures WHERE run_id = ?", (run,))
        db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                   (run, summary.get("started"), summary.get("duration_s"), summary.get("exitstatus"),
                    int(bool(summary.get("interrupted"))), env.get("provider"), env.get("etcd_version"),
                    env.get("kubernetes_version"), json.dumps(env.get("zones", []))))
        for s in summary["scenarios"]:
            db.execute("INSERT OR REPLACE INTO scenarios VALUES (?,?,?)", (s["nodeid"], s["name"], s.get("feature")))
            db.execute("INSERT INTO results VALUES (?,?,?,?,?)",
                       (run, s["nodeid"], s["result"], s["duration_s"], (s.get("message") or "")[:2000]))
            figures = [(f["name"], f["value"], f["unit"]) for f in s["figures"] if isinstance(f["value"], (int, float))]
            # One figure per write path, named by it, so each path's trend is its own line.
            figures += [(f"write-unavailability window ({path})", g["length_s"], "s")
                        for path, g in (s.get("write_unavailability") or {}).items() if g.get("length_s") is not None]
            for t in s.get("traffic", []):
                figures += [(f"cross-zone {pair}", v.get("wire_kib_s"), "KiB/s") for pair, v in t["pairs"].items()]
            db.executemany("INSERT INTO figures VALUES (?,?,?,?,?)", [(run, s["nodeid"], *f) for f in figures])
    db.close()


def results(db: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(run_id, nodeid, scenario name, result), runs in time order."""
    return db.execute("SELECT r.run_id, r.nodeid, s.name, r.result FROM results r JOIN scenarios s USING (nodeid) "
                      "JOIN runs USING (run_id) ORDER BY runs.started, r.run_id").fetchall()


def figures(db: sqlite3.Connection, unit: str | None = None, like: str | None = None) -> list[tuple[str, str, str, float]]:
    """(run_id, scenario name, figure name, value), runs in time order."""
    sql = ("SELECT f.run_id, s.name, f.name, f.value FROM figures f JOIN scenarios s USING (nodeid) "
           "JOIN runs USING (run_id) WHERE f.value IS NOT NULL")
    args: list[Any] = []
    if unit is not None:
        sql += " AND f.unit = ?"
        args.append(unit)
    if like is not None:
        sql += " AND f.name LIKE ?"
        args.append(like)
    return db.execute(sql + " ORDER BY runs.started, f.run_id", args).fetchall()
