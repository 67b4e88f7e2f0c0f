"""`harness steps`: the catalogue of Gherkin steps, read from the step definitions."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.steps import catalogue
from tests.unit.test_step_texts import DEFINITIONS

FOUND = catalogue.steps()


def test_every_step_definition_is_in_the_catalogue_once() -> None:
    assert len(FOUND) == len(DEFINITIONS)
    assert len({(s.kind, s.text) for s in FOUND}) == len(FOUND), "two steps read the same"


@pytest.mark.parametrize(("pattern", "shown"), [
    ("within {limit:g} s every pod is Running", "within {limit} s every pod is Running"),
    (r"(?P<name>etcd-[a-z]+) keeps quorum with (?P<count>\d+) members", "{name} keeps quorum with {count} members"),
    (r'from (?P<where>every zone|zone "(?P<zone>[^"]+)")', "from {where}"),
    (r"a (?P<x>\(literal\)) paren", "a {x} paren"),
])
def test_a_pattern_reads_with_its_parameters_named(pattern: str, shown: str) -> None:
    assert catalogue.readable(pattern) == shown


def test_a_then_step_names_the_must_fail_scenarios_that_show_it_failing_and_what_it_needs() -> None:
    (step,) = [s for s in FOUND if s.kind == "then" and s.text == "writes resume within {count} {unit} of the outage"]
    assert any(f.startswith("etcd_outage.feature: ") for f in step.shown_failing), step.shown_failing
    assert {"probe", "outage"} <= set(step.needs) and step.params == ("count", "unit")
    given = catalogue.providers(FOUND)
    assert any(g.startswith("Given write and read probes run every {ms} ms") for g in given["probe"])


def test_harness_steps_greps_prints_markdown_and_says_what_it_lacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["steps", "--grep", "GOES DOWN"]) == 0
    out = capsys.readouterr().out
    assert 'When zone "{zone}" goes down\n' in out and "hands on: outage" in out
    assert f"{len(FOUND)} steps (" in out and "without a description" in out
    assert "Then writes resume" not in out
    assert main(["steps", "--markdown"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# Gherkin steps") and "## Given" in page and "## Then" in page
    assert page.count("\n### `") == len(FOUND)
    assert main(["steps", "--grep", "no such words here"]) == 2
    assert "no step has 'no such words here' in its text or description" in capsys.readouterr().err


def test_the_closest_steps_to_a_misspelt_one_and_none_to_nonsense() -> None:
    assert catalogue.closest('zone "zone-a" goes dark', FOUND)[0] == 'When zone "{zone}" goes down'
    assert catalogue.closest("the leader stays the same", FOUND)[0] == "Then the etcd leader does not change"
    assert catalogue.closest("bogus words entirely unrelated xyz", FOUND) == []
