"""`harness nightly`'s verdict from its run's summary: what ran, what did not and why, and the
exit status. pytest exits 0 when every test skipped, so a nightly on a provider where every
etcd scenario skips would be green without having tested anything; here it is not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOTHING_RAN = 5  # pytest's own status for "no tests collected"


@dataclass(frozen=True)
class Verdict:
    lines: list[str]  # what ran and what did not (stdout)
    problem: str | None  # why the run is not green although pytest may say it is (stderr)
    status: int


def _one_line(text: str) -> str:
    return " ".join(text.split())


def verdict(summary: dict[str, Any], pytest_status: int) -> Verdict:
    """Lines listing the scenarios that ran and every test that did not (with its skip reason);
    a run in which no Gherkin scenario ran exits non-zero (pytest's status, else NOTHING_RAN)."""
    ran, not_run = int(summary.get("scenarios_ran", 0)), summary.get("not_run", [])
    counts = ", ".join(f"{n} {k}" for k, n in summary.get("counts", {}).items()) or "no tests collected"
    lines = [f"{ran} scenario(s) ran ({counts})"]
    if not_run:
        lines.append(f"not run ({len(not_run)}):")
        lines += [f"  {n['nodeid']}: {_one_line(n.get('reason') or '')}" for n in not_run]
    if ran:
        return Verdict(lines, None, pytest_status)
    why = f"{len(not_run)} not run, listed above" if not_run else "none collected"
    return Verdict(lines, f"no scenario ran ({why}); a nightly that tested nothing is not green",
                   pytest_status or NOTHING_RAN)
