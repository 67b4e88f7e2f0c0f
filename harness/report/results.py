"""Result records: what the plugin keeps of each scenario's pytest reports (plain dicts, so
the report is built from data, not from pytest objects)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

MESSAGE_CHARS = 6000


def _message(report: Any) -> str | None:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    text = getattr(report, "longreprtext", "") or ""
    return text[-MESSAGE_CHARS:] or None


def _crash(report: Any) -> str | None:
    """The exception's own message (a ToleranceViolation says what was expected and measured),
    which a traceback's last lines bury."""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    return str(crash.message)[-MESSAGE_CHARS:] if crash is not None else None


class RunRecorder:
    """One session's results by nodeid, plus where each scenario's timeline went."""

    def __init__(self, reports_dir: Path, run_id: str) -> None:
        self.reports_dir, self.run_id = reports_dir, run_id
        self.run_dir = reports_dir / run_id
        self.started = datetime.now(timezone.utc)
        self.results: dict[str, dict[str, Any]] = {}
        self.environment: dict[str, Any] = {}

    def _record(self, nodeid: str) -> dict[str, Any]:
        return self.results.setdefault(nodeid, {"nodeid": nodeid, "result": "interrupted", "duration": 0.0, "steps": []})

    def add_report(self, report: Any, scenario: dict[str, Any] | None) -> None:
        """Fold one phase's report (setup, call, teardown) into its scenario's record."""
        rec = self._record(report.nodeid)
        rec["duration"] += report.duration
        if scenario:
            self.add_scenario(report.nodeid, scenario)
        if report.when == "setup":
            if report.failed:
                rec.update(result="error", message=_message(report), crash=_crash(report))
            elif report.skipped:
                rec.update(result="skipped", message=_message(report))
        elif report.when == "call":
            # the plugin marks one it did not take for a plain failure (--inconclusive)
            inconclusive = report.failed and any(k == "inconclusive" for k, _ in report.user_properties)
            # a passed one has nothing to say (under xdist its longrepr is the worker's "[gw0] linux -- ..." line)
            rec.update(result="skipped" if report.skipped else "inconclusive" if inconclusive else report.outcome,
                       message=None if report.passed else _message(report),
                       crash=_crash(report) if report.failed else None)
        elif report.failed and rec["result"] == "passed":
            rec.update(result="error", message=_message(report), crash=_crash(report))

    def add_scenario(self, nodeid: str, scenario: dict[str, Any]) -> None:
        """pytest-bdd's serialized scenario report: name, feature, tags, the steps and how they went.
        pytest-bdd marks every step after a failed one failed too; they never ran."""
        steps, failed = [], False
        for s in scenario.get("steps", []):
            status = "not run" if failed else "failed" if s.get("failed") else "ok"
            failed = failed or bool(s.get("failed"))
            steps.append({"keyword": s.get("keyword"), "name": s.get("name"), "failed": status == "failed",
                          "status": status, "duration": round(s.get("duration") or 0.0, 3)})
        self._record(nodeid).update(name=scenario.get("name"), feature=scenario.get("feature", {}).get("name"),
                                    tags=scenario.get("tags", []), steps=steps)

    def add_timeline(self, nodeid: str, path: Path, porcupine: Path | None, logs: list[Path]) -> None:
        rec = self._record(nodeid)
        rec["timeline"] = str(path.resolve())
        rec["logs"] = [str(p.resolve()) for p in logs]
        if porcupine is not None and porcupine.exists():
            rec["porcupine"] = str(porcupine.resolve())

    def records(self) -> list[dict[str, Any]]:
        return list(self.results.values())

    def session(self, exitstatus: int, interrupted: bool, not_run: list[str]) -> dict[str, Any]:
        finished = datetime.now(timezone.utc)
        return {"started": self.started.isoformat(timespec="seconds"), "finished": finished.isoformat(timespec="seconds"),
                "duration_s": round((finished - self.started).total_seconds(), 1), "exitstatus": exitstatus,
                "interrupted": interrupted, "not_run": not_run}
