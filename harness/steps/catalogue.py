"""The catalogue of the Gherkin steps a feature may use, read from the step definitions themselves
(`harness steps`), so it cannot drift from them: each step's text with its parameters, what it
says of itself (its docstring), what it needs from earlier steps or the plugin, what it hands on,
and for a Then-step the must-fail scenarios that show it failing (in a clone of the harness).
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.steps import STEP_MODULES

MUST_FAIL = Path(__file__).resolve().parents[2] / "tests" / "must_fail" / "features"
KINDS = ("given", "when", "then")
FAILS_WITH = "Fails with:"  # a must-fail scenario's line naming the message its failure carries
# A step's own arguments besides its parsed parameters: pytest-bdd's, not the scenario's state.
_BDD_ARGS = {"datatable", "docstring", "request"}


@dataclass(frozen=True)
class Step:
    kind: str  # given, when or then
    text: str  # its pattern, each parameter as {name}
    params: tuple[str, ...]
    needs: tuple[str, ...]  # fixtures: what earlier steps handed on, or the plugin's
    provides: str | None  # the fixture it hands on (target_fixture)
    doc: str
    where: str  # module:line
    # "file: scenario (fails with: "message")" of the must-fail scenarios ending with it
    shown_failing: tuple[str, ...] = ()
    parser: Any = None

    def matches(self, word: str) -> bool:
        return word.lower() in f"{self.kind} {self.text} {self.doc}".lower()


def readable(pattern: str) -> str:
    """A step pattern with each parameter as {name}: parse's format specs and a regular
    expression's named groups dropped."""
    out, i = [], 0
    while i < len(pattern):
        m = re.compile(r"\(\?P<(\w+)>").match(pattern, i)
        if m is None:
            out.append(pattern[i])
            i += 1
            continue
        depth, j = 1, m.end()
        while j < len(pattern) and depth:
            depth += {"(": 1, ")": -1}.get(pattern[j], 0) if pattern[j - 1] != "\\" else 0
            j += 1
        out.append("{" + m.group(1) + "}")
        i = j
    return re.sub(r"\{(\w+):[^}]*\}", r"{\1}", "".join(out)).replace("(?:", "(")


def _params(parser: Any) -> tuple[str, ...]:
    regex = getattr(parser, "regex", None)
    if regex is not None:
        return tuple(regex.groupindex)
    return tuple(re.findall(r"\{(\w+)(?::[^}]*)?\}", str(parser.name)))


def steps(shown_failing: bool = True) -> list[Step]:
    """Every step definition of the harness's step modules, in their order (with the must-fail
    scenarios that show each Then-step failing, unless `shown_failing` is False)."""
    found = []
    for module in map(importlib.import_module, STEP_MODULES):
        for name in vars(module):
            if not name.startswith("pytestbdd_stepdef_"):
                continue
            ctx = getattr(module, name)._get_wrapped_function()()
            params = _params(ctx.parser)
            func = inspect.unwrap(ctx.step_func)
            needs = tuple(p for p in inspect.signature(func).parameters if p not in params and p not in _BDD_ARGS)
            line = inspect.getsourcelines(func)[1]
            doc = (inspect.getdoc(func) or "").split("\n\n")[0].replace("\n", " ")
            found.append(Step(ctx.type, readable(str(ctx.parser.name)), params, needs, ctx.target_fixture, doc,
                              f"{module.__name__}:{line}", parser=ctx.parser))
    return _with_must_fail(found) if shown_failing else found


def closest(text: str, found: list[Step], n: int = 3) -> list[str]:
    """The steps whose text reads most like `text` (a step no definition matched), best first."""
    from difflib import SequenceMatcher

    def likeness(step: Step) -> float:
        return SequenceMatcher(None, text.lower(), re.sub(r"\{\w+\}", "", step.text).lower()).ratio()

    ranked = sorted(found, key=likeness, reverse=True)
    return [f"{s.kind.capitalize()} {s.text}" for s in ranked[:n] if likeness(s) >= 0.5]


def _with_must_fail(found: list[Step]) -> list[Step]:
    if not MUST_FAIL.is_dir():
        return found
    from pytest_bdd.parser import FeatureParser

    ends: dict[int, list[str]] = {}
    for path in sorted(MUST_FAIL.glob("*.feature")):
        for scenario in FeatureParser(str(path.parent), path.name).parse().scenarios.values():
            last = scenario.steps[-1]
            message = next((line.strip()[len(FAILS_WITH):].strip() for line in scenario.description.splitlines()
                            if line.strip().startswith(FAILS_WITH)), None)
            for i, step in enumerate(found):
                if step.kind == "then" and step.parser.is_matching(last.name):
                    ends.setdefault(i, []).append(f"{path.name}: {scenario.name}"
                                                  + (f" (fails with: \"{message}\")" if message else ""))
    return [Step(**{**vars(s), "shown_failing": tuple(ends.get(i, ()))}) for i, s in enumerate(found)]


def providers(found: list[Step]) -> dict[str, list[str]]:
    """Each fixture a step hands on, and the steps that hand it on."""
    out: dict[str, list[str]] = {}
    for s in found:
        if s.provides:
            out.setdefault(s.provides, []).append(f"{s.kind.capitalize()} {s.text}")
    return out


def _needs(step: Step, given: dict[str, list[str]]) -> str:
    parts = []
    for name in step.needs:
        by = given.get(name)
        parts.append(f"{name} (from: {by[0]}{' …' if len(by) > 1 else ''})" if by else name)
    return ", ".join(parts)


def text(found: list[Step], given: dict[str, list[str]]) -> str:
    lines = []
    for s in found:
        lines.append(f"{s.kind.capitalize()} {s.text}")
        if s.doc:
            lines.append(f"    {s.doc}")
        if s.needs:
            lines.append(f"    needs: {_needs(s, given)}")
        if s.provides:
            lines.append(f"    hands on: {s.provides}")
        for scenario in s.shown_failing[:3]:
            lines.append(f"    shown failing: {scenario}")
    return "\n".join(lines)


def markdown(found: list[Step], given: dict[str, list[str]]) -> str:
    out = ["# Gherkin steps", "", "Generated from the step definitions (`harness steps --markdown`).", ""]
    for kind in KINDS:
        of_kind = [s for s in found if s.kind == kind]
        if not of_kind:
            continue
        out += [f"## {kind.capitalize()}", ""]
        for s in of_kind:
            out.append(f"### `{s.kind.capitalize()} {s.text}`")
            out.append("")
            out.append(s.doc or "*(no description)*")
            out.append("")
            if s.needs:
                out.append(f"- needs: {_needs(s, given)}")
            if s.provides:
                out.append(f"- hands on: `{s.provides}`")
            out += [f"- shown failing: {scenario}" for scenario in s.shown_failing]
            out.append(f"- defined in `{s.where}`")
            out.append("")
    return "\n".join(out)


def summary(found: list[Step]) -> str:
    counts = ", ".join(f"{sum(1 for s in found if s.kind == k)} {k}" for k in KINDS)
    bare = sum(1 for s in found if not s.doc)
    unshown = sum(1 for s in found if s.kind == "then" and not s.shown_failing) if MUST_FAIL.is_dir() else None
    return (f"{len(found)} steps ({counts}); {bare} without a description"
            + (f"; {unshown} Then-step(s) end no must-fail scenario (shown failing elsewhere, or not yet)"
               if unshown is not None else ""))
