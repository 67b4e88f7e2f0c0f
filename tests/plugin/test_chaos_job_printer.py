"""harness.chaos_job, the pytest plugin `harness run` runs the GEP-20 feature with: it picks the
zone outage scenario's examples of a form and zones, and prints what each recorded (tables before,
during and after the fault, the figures) with pytest's verdict. Here on a feature of the same name
whose steps record such events without a region (tests/kube/test_chaos_job.py runs the real job)."""

from __future__ import annotations

import pytest

FEATURE_TEXT = """
Feature: GEP-20's zone outage experiment, automated
  Scenario Outline: A zone outage in the GEP-20 form: a stand-in (<zone> down)
    Given the pods are seen in zone "<zone>"
    When zone "<zone>" goes away for a moment
    Then zone "<zone>" is not zone-c

    Examples:
      | zone   |
      | zone-a |
      | zone-b |
      | zone-c |

  Scenario: Another scenario of the feature
    Given the pods are seen in zone "zone-a"
"""

STEPS = """
from pytest_bdd import given, parsers, then, when

@given(parsers.parse('the pods are seen in zone "{zone}"'))
def _(timeline, zone):
    timeline.mark("placement", "the pods", pods=[], table=f"COMPONENT  ZONE\\netcd-main  {zone}")

@when(parsers.parse('zone "{zone}" goes away for a moment'))
def _(timeline, zone):
    fault = timeline.begin("fault", "zone-outage", target=zone)
    timeline.mark("placement", "the pods meanwhile", pods=[], table="COMPONENT  ZONE\\netcd-main  -")
    timeline.finish(fault)
    timeline.mark("placement", "the pods at last", pods=[], table=f"COMPONENT  ZONE\\netcd-main  {zone}")

@then(parsers.parse('zone "{zone}" is not zone-c'))
def _(timeline, zone):
    timeline.mark("figure", "the nodes NotReady, after the fault took effect", value=8.5, unit="s")
    timeline.mark("figure", "lost writes", value=0, unit="writes")
    assert zone != "zone-c", f"{zone} said no"
"""


def test_the_job_runs_the_examples_asked_for_and_prints_their_tables_figures_and_verdicts(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STEPS)
    pytester.makefile(".feature", gep20=FEATURE_TEXT)
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('gep20.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "harness.chaos_job", "--harness-config",
                                           str(cfg), "--chaos-zone", "zone-b", "--chaos-zone", "zone-c", "-q")
    result.assert_outcomes(passed=1, failed=1, deselected=2)
    out = result.stdout.str()
    for zone in ("zone-b", "zone-c"):
        assert (f"--- before the outage of {zone} (the pods):\nCOMPONENT  ZONE\netcd-main  {zone}\n\n"
                f"--- during the outage of {zone} (the pods meanwhile):\nCOMPONENT  ZONE\netcd-main  -\n\n"
                f"--- after the outage of {zone} (the pods at last):\nCOMPONENT  ZONE\netcd-main  {zone}\n") in out, out
        assert (f"  {zone}: the nodes NotReady, after the fault took effect: 8.5 s; lost writes: 0 writes") in out, out
    assert "  zone-b -> ok  [test_a_zone_outage_in_the_gep20_form_a_standin_zone_down[zone-b]]" in out, out
    assert "  zone-c -> FAILED (call): AssertionError: zone-c said no" in out, out
    assert '[harness run] zone-b: When zone "zone-b" goes away for a moment' in out, out  # each step as it begins
    assert "zone-a" not in out


def test_a_form_or_zone_without_a_scenario_is_refused_saying_what_there_is(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STEPS)
    pytester.makefile(".feature", gep20=FEATURE_TEXT)
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('gep20.feature')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "harness.chaos_job", "--chaos-zone", "zone-x")
    assert result.ret != 0
    assert "no zone outage scenario of the gep20 form for zone(s) zone-x: the feature's Examples have zone-a, zone-b, " \
           "zone-c" in result.stderr.str() + result.stdout.str()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "harness.chaos_job", "--chaos-form",
                                           "conventions")
    assert result.ret != 0 and "Examples have none" in result.stderr.str() + result.stdout.str()
