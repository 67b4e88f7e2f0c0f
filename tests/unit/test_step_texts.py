"""Every step of the shipped features matches exactly one step definition: two definitions that
match the same text make pytest-bdd pick one silently, and the scenario then runs the wrong step."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from pytest_bdd.parser import FeatureParser

from harness.steps import STEP_MODULES

FEATURES = Path(__file__).parents[2] / "features"
MUST_FAIL = Path(__file__).parents[1] / "must_fail" / "features"


def _definitions() -> list[tuple[str, object, str]]:
    out = []
    for module in map(importlib.import_module, STEP_MODULES):
        for name in dir(module):
            if name.startswith("pytestbdd_stepdef_"):
                ctx = getattr(module, name)._get_wrapped_function()()
                out.append((ctx.type, ctx.parser, f"{module.__name__}: {name.split('_', 3)[3]}"))
    return out


def _steps() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted([*FEATURES.glob("*.feature"), *MUST_FAIL.glob("*.feature")]):
        feature = FeatureParser(str(path.parent), path.name).parse()
        for scenario in feature.scenarios.values():
            rows = [dict(zip(e.example_params, r)) for e in scenario.examples for r in e.examples] or [{}]
            for row in rows:
                for step in scenario.steps:  # the background's included
                    text = re.sub(r"<(\w[\w ]*)>", lambda m: row.get(m.group(1), m.group(0)), step.name)
                    out.append((step.type, text, f"{path.name}:{step.line_number}"))
    return out


def _matching(kind: str, text: str, definitions: list[tuple[str, object, str]]) -> list[str]:
    return [label for t, parser, label in definitions if t == kind and parser.is_matching(text)]  # type: ignore[attr-defined]


DEFINITIONS = _definitions()


@pytest.mark.parametrize(("kind", "text", "where"), _steps(), ids=lambda v: str(v)[:60])
def test_each_step_has_exactly_one_definition(kind: str, text: str, where: str) -> None:
    matching = _matching(kind, text, DEFINITIONS)
    assert len(matching) == 1, f"{where}: {kind} {text!r} matches {matching or 'no definition'}"


def test_an_ambiguous_pair_is_caught() -> None:
    """The pair that once made "all members end with equal HashKV" ask for a shoot."""
    from pytest_bdd import parsers

    pair = [("then", parsers.parse("{name} members end with equal HashKV"), "loose"),
            ("then", parsers.parse("all members end with equal HashKV"), "exact")]
    assert _matching("then", "all members end with equal HashKV", pair) == ["loose", "exact"]
