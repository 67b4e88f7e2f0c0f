"""The run's report: JUnit and cucumber JSON (pytest's and pytest-bdd's own writers, pointed at
the run's directory), summary.json, a self-contained index.html with a timeline plot per
scenario, and trends across runs from reports/history.sqlite.

Pure where it can be: everything here builds from the scenarios' timeline files and the
result records the pytest plugin collected; the plugin only collects and calls `write_report`.
"""

from __future__ import annotations

from typing import Any

from harness.report.runs import find_run, new_run_id

__all__ = ["find_run", "new_run_id", "write_report"]


def __getattr__(name: str) -> Any:
    # matplotlib is imported only when a report is written, not by every scenario's teardown.
    if name == "write_report":
        from harness.report.write import write_report

        return write_report
    raise AttributeError(name)
