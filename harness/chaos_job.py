"""The chaos job (`harness run`, `make run`) as a pytest plugin: GEP-20's zone outage scenario of
features/gep20.feature for each zone in turn (its Examples), run like any feature, with the report
on. This plugin picks the scenario's examples and prints, as each ends, what its steps recorded:
the pods and the seed's nodes before, during and after the outage, as in GEP-20's appendix, and the
figures. The bounds are the feature's and the verdicts pytest's: the job judges nothing itself.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from harness.steps.terminal import say

FEATURE = "gep20.feature"  # features/, as pytest-bdd names a scenario's feature: by its file
# The Scenario Outline of each form (its name up to the zone), its Examples a zone each.
OUTLINES = {"gep20": "A zone outage in the GEP-20 form:", "conventions": "A zone outage in the conventions form:",
            "gardener": "A zone outage in the gardener form:",
            "druid": "A zone outage with etcd-druid running the etcds:"}  # the gardener form with druid's etcds


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness run")
    group.addoption("--chaos-form", choices=sorted(OUTLINES), default="gep20",
                    help="the form of the reference whose zone outage scenario runs (default gep20)")
    group.addoption("--chaos-zone", action="append", default=None,
                    help="take only this zone down (repeatable; default: every zone of the scenario's Examples)")


def chosen(doc: str | None, example: dict[str, str], form: str, zones: list[str] | None) -> bool:
    """Whether a test (its function's doc, pytest-bdd's "<feature file>: <scenario>", and its
    example) is the form's outage scenario of gep20.feature for one of `zones`."""
    path, _, scenario = (doc or "").partition(": ")
    return (path.endswith("/" + FEATURE) and scenario.startswith(OUTLINES[form])
            and (not zones or example.get("zone") in zones))


def _example(item: pytest.Item) -> dict[str, str]:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("_pytest_bdd_example", {}) if callspec is not None else {}


def _doc(item: pytest.Item) -> str | None:
    return getattr(getattr(item, "obj", None), "__doc__", None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    form, zones = config.getoption("chaos_form"), config.getoption("chaos_zone")
    keep = [i for i in items if chosen(_doc(i), _example(i), form, zones)]
    if not keep:
        offered = sorted({_example(i).get("zone", "?") for i in items if chosen(_doc(i), {}, form, None) and _example(i)})
        raise pytest.UsageError(f"no zone outage scenario of the {form} form for zone(s) {', '.join(zones or [])}: "
                                f"the feature's Examples have {', '.join(offered) or 'none'}")
    config.hook.pytest_deselected(items=[i for i in items if i not in keep])
    items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(Printer(config), "harness-chaos-job-printer")


class Printer:
    """Prints each scenario as it ends, from its run's record (the timeline the harness's plugin
    wrote and put on the teardown report)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.verdicts: dict[str, pytest.TestReport] = {}  # a scenario's call, or the setup that failed

    def pytest_bdd_before_step_call(self, request: pytest.FixtureRequest, step: Any) -> None:
        """Each step as it begins (its fixtures ready: the region and the seed are up by the first):
        where a run of some minutes is."""
        zone = _example(request.node).get("zone", "")
        say(self.config, f"[harness run] {zone}: {step.keyword} {step.name}".replace("\n", " ")[:200])

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.failed):
            self.verdicts[report.nodeid] = report
        timeline = getattr(report, "harness_timeline", None)
        if report.when != "teardown" or not timeline:
            return
        try:
            with open(timeline["path"]) as f:
                events = json.load(f).get("events", [])
        except (OSError, ValueError) as e:
            print(f"[harness] {report.nodeid}: its run's record cannot be read ({e})", file=sys.stderr)
            return
        say(self.config, "\n" + describe(report.nodeid, events, self.verdicts.pop(report.nodeid, None)))


def describe(nodeid: str, events: list[dict[str, Any]], verdict: pytest.TestReport | None) -> str:
    """One scenario as the job prints it: each table its steps recorded under before/during/after
    the outage, then the figures and the verdict."""
    faults = [e for e in events if e["kind"] == "fault"]
    start = faults[0]["start"] if faults else None
    end = faults[-1].get("end") if faults else None
    zone = faults[0]["data"].get("target", "?") if faults else "?"
    lines = []
    for e in events:
        if e["kind"] != "placement" or "table" not in e.get("data", {}):
            continue
        when = ("before" if start is None or e["start"] < start else
                "during" if end is None or e["start"] < end else "after")
        lines += [f"--- {when} the outage of {zone} ({e['name']}):", e["data"]["table"], ""]
    figures = [e for e in events if e["kind"] == "figure"]
    lines.append(f"  {zone}: " + ("; ".join(_figure(e) for e in figures) or "no figures recorded"))
    if verdict is None:
        said = "not judged"
    elif verdict.passed:
        said = "ok"
    else:
        crash = getattr(verdict.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(verdict.longrepr).strip().splitlines()[-1:]
        said = f"{verdict.outcome.upper()} ({verdict.when}): {' '.join(str(message).split())[:600]}"
    lines.append(f"  {zone} -> {said}  [{nodeid.rpartition('::')[2]}]")
    return "\n".join(lines)


def _figure(e: dict[str, Any]) -> str:
    data = e.get("data", {})
    value, unit = data.get("value"), data.get("unit", "")
    shown = "never" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
    return f"{e['name']}: {shown}{' ' + unit if unit and value is not None else ''}"
