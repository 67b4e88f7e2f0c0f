"""The pytest plugin and steps, driven through pytester in separate pytest processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import netns
from tests.integration.conftest import cli, fault_tables, namespaces

# A project's own steps beside the harness's; the harness's come from its installed plugin.
STEPS_CONFTEST = """
from pytest_bdd import given, then

@given("nothing")
def _():
    pass

@then("all is well")
def _():
    pass
"""


def make_project(pytester: pytest.Pytester, feature: str, region: str) -> Path:
    pytester.makeconftest(STEPS_CONFTEST)
    pytester.makefile(".feature", scenario=feature)
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    pytester.makeini(f"[pytest]\naddopts = --strict-markers -p no:cacheprovider --region-name {region} --harness-config {cfg}\n")
    return pytester.path


def test_a_bare_project_gets_every_step_from_the_installed_plugin(pytester: pytest.Pytester) -> None:
    """A team's own repository: a .feature file and one line binding it; no conftest, no imports."""
    pytester.makefile(".feature", scenario="""
Feature: a team's own outage feature
  @outage
  Scenario: a follower zone goes down and comes back
    Given a healthy region with 3 etcd members spread over 3 zones
    And a zone without the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 1 s
    And the target zone comes back
    Then its member catches up within 10 s
    And no acknowledged write is lost
""")
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "--region-name", "pb",
                                           "--harness-config", str(cfg), "-k", "outage")
    result.assert_outcomes(passed=1)
    assert namespaces("pb") == []


def test_tags_are_registered_markers_and_k_outage_selects(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: selection
  @outage
  Scenario: tagged
    Given nothing
    Then all is well

  Scenario: plain
    Given nothing
    Then all is well
""", "px")
    result = pytester.runpytest_subprocess("-k", "outage")
    result.assert_outcomes(passed=1, deselected=1)


def test_unregistered_tag_fails_under_strict_markers(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: strict
  @outgae
  Scenario: typo in a tag
    Given nothing
""", "px")
    result = pytester.runpytest_subprocess()
    result.stdout.fnmatch_lines(["*'outgae' not found in `markers` configuration option*"])


def test_undefined_step_is_named_with_the_closest_steps(pytester: pytest.Pytester) -> None:
    """Not pytest-bdd's "Step definition is not found" alone: where, and what the author may have meant."""
    make_project(pytester, """
Feature: undefined
  Scenario: steps nobody wrote
    Given nothing
    When zone "zone-a" goes dark
""", "px")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert 'no step matches `When zone "zone-a" goes dark` (line 4 of ' in out, out
    assert 'scenario.feature); did you mean: When zone "{zone}" goes down;' in out, out
    assert "`harness steps --grep WORD` lists the harness's steps; see reference/steps.md in the documentation" in out


def test_unknown_zone_in_a_step(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: unknown zone
  Scenario: a zone that does not exist
    Given a healthy region with 3 etcd members spread over 3 zones
    When zone "zone-x" goes down for 1 s
""", "pu")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ConfigError: unknown zone 'zone-x'; this environment has zones: zone-a, zone-b, zone-c*"])
    assert namespaces("pu") == []


def test_a_missed_threshold_fails_with_what_was_measured(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: too strict
  @outage
  Scenario: Losing the leader's zone with an impossible promise
    Given a healthy region with 3 etcd members spread over 3 zones
    And the zone of the etcd leader is the target zone
    And write and read probes run every 10 ms from a client in another zone
    When the target zone goes down for 2 s
    Then the etcd leader does not change
""", "pv")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ToleranceViolation: the leader before the outage (etcd-*, term *) led throughout it: "
                                 "reports of another leadership: expected none, found *names leader etcd-* in term *"])
    assert namespaces("pv") == []
    (run,) = (pytester.path / "reports" / "runs").glob("*.json")
    events = json.loads(run.read_text())["events"]
    (fault,) = [e for e in events if e["kind"] == "fault"]
    assert "healed_at" in fault["data"], "the fault was healed at teardown even though the scenario failed"


LONG_OUTAGE = """
Feature: interrupted
  Scenario: a long outage
    Given a healthy region with 3 etcd members spread over 3 zones
    And write and read probes run every 10 ms from a client in zone "zone-b"
    When zone "zone-a" goes down for 60 s
"""


def _start_and_wait_for_fault(pytester: pytest.Pytester, region: str) -> subprocess.Popen[bytes]:
    root = make_project(pytester, LONG_OUTAGE, region)
    # Ctrl-C reaches a session started from a terminal even when this one was started in the
    # background (where the shell hands its children SIGINT ignored).
    proc = subprocess.Popen([sys.executable, "-m", "pytest", str(root)], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if f"{region}-router" in netns.list_netns() and fault_tables(region):
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the outage never started: {proc.communicate()[0].decode()[-2000:]}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_heals_and_tears_down(pytester: pytest.Pytester, sig: signal.Signals) -> None:
    proc = _start_and_wait_for_fault(pytester, "pc")
    proc.send_signal(sig)
    out = proc.communicate(timeout=60)[0].decode()
    assert namespaces("pc") == [], out[-2000:]
    (run,) = (pytester.path / "reports" / "runs").glob("*.json")
    (fault,) = [e for e in json.loads(run.read_text())["events"] if e["kind"] == "fault"]
    assert "healed_at" in fault["data"], out[-2000:]


def test_an_interrupted_harness_command_waits_until_its_pytest_healed_and_tore_down(pytester: pytest.Pytester) -> None:
    """`harness nightly`, `harness run` (`make run`) and `harness bugs` run their scenarios in a
    pytest of their own: a Ctrl-C reaches the harness, which passes it on and waits. Before, the child
    was killed 0.25 s later in the middle of its teardown, and the zone stayed blackholed."""
    root = make_project(pytester, LONG_OUTAGE, "pi")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "--config", str(root / "harness.toml"), "--name", "pi",
                             "nightly", "--", str(root)], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        while not ("pi-router" in netns.list_netns() and fault_tables("pi")):
            assert time.monotonic() < deadline and proc.poll() is None, "the outage never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C: the harness's group, not its pytest's
        out = proc.communicate(timeout=90)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        cli("--name", "pi", "down")
    assert "interrupted: waiting for pytest" in out and proc.returncode != 0, out[-2000:]
    assert namespaces("pi") == [], out[-2000:]
    (run,) = {p.resolve() for p in (pytester.path / "reports").glob("*/runs/*.json")}  # "latest" links to it
    (fault,) = [e for e in json.loads(run.read_text())["events"] if e["kind"] == "fault"]
    assert "healed_at" in fault["data"], out[-2000:]


def test_after_a_kill_harness_heal_and_the_next_session_clean_up(pytester: pytest.Pytester) -> None:
    proc = _start_and_wait_for_fault(pytester, "pk")
    proc.kill()
    proc.wait()
    try:
        assert fault_tables("pk") == ["harness_outage_zone_a"]
        healed = cli("--name", "pk", "heal", check=True)
        assert "healed zone-outage:zone-a" in healed.stdout and fault_tables("pk") == []
        # The next session with that name removes what the killed one left.
        pytester.makefile(".feature", scenario="""
Feature: next
  Scenario: next session
    Given a healthy region with 3 etcd members spread over 3 zones
""")
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*removed the leftovers of an earlier session*pk-router*"])
    finally:
        cli("--name", "pk", "down")
    assert namespaces("pk") == []


def test_a_step_without_the_given_it_needs_says_which(pytester: pytest.Pytester) -> None:
    """Not pytest's "fixture 'probe' not found" and a list of a hundred fixtures."""
    make_project(pytester, """
Feature: a step out of order
  Scenario: a Then-step with nothing before it
    Then writes resume within 3 s of the outage
""", "pg")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "`Then writes resume within 3 s of the outage` (line 3 of " in out, out
    assert "scenario.feature) needs 'probe', which no earlier step of its scenario handed on" in out
    assert "a step before it that does: Given write and read probes run every {ms} ms" in out
    assert "See reference/steps.md in the documentation" in out
    assert "fixture 'probe' not found" not in out and "available fixtures" not in out and "FixtureRequest" not in out


def test_a_scenario_that_leaves_the_region_diverged_fails_and_the_next_gets_a_fresh_one(
        pytester: pytest.Pytester) -> None:
    """A scenario that leaves a member down behind the fault runner's back fails at its teardown,
    with each member's answers as evidence; the next one gets a fresh region, instead of timing out
    waiting for converged members."""
    pytester.makeconftest(STEPS_CONFTEST + '''
from pytest_bdd import when

@when("a member dies behind the harness's back")
def _(env):
    env.kill_member("etcd-1")
''')
    pytester.makefile(".feature", scenario="""
Feature: diverged
  Scenario: one
    Given a healthy region with 3 etcd members spread over 3 zones
    When a member dies behind the harness's back

  Scenario: two
    Given a healthy region with 3 etcd members spread over 3 zones
    Then all members end with equal HashKV
""")
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n'
                                             f'[timeouts]\nrecovery = 5.0\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--region-name", "pd", "--harness-config", str(cfg))
    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    assert "ERROR at teardown of test_one" in out
    assert "this scenario left the session's region inconsistent once its faults were healed: the members never " \
           "reached one revision within 5 s" in out
    assert "etcd-1" in out and "during the 5 s wait" in out
    assert namespaces("pd") == []


def test_the_sessions_region_goes_after_the_last_scenario_not_at_the_sessions_end(pytester: pytest.Pytester) -> None:
    """Tests after the last scenario run on a machine without the region (a seed left running
    would load them)."""
    make_project(pytester, """
Feature: first
  Scenario: one
    Given a healthy region with 3 etcd members spread over 3 zones
    Then all is well
""", "pg")
    pytester.makepyfile(test_later="""
from harness import netns

def test_no_region_meanwhile():
    assert [ns for ns in netns.list_netns() if ns.startswith("pg-")] == []
""")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=2)
    assert namespaces("pg") == []


def test_a_then_step_that_cannot_judge_fails_where_a_given_step_skips(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: capabilities
  Scenario: a check this environment cannot make
    Given nothing
    Then something only another environment can tell

  Scenario: a setup this environment cannot make
    Given something only another environment has
    Then all is well
""", "pq")
    pytester.makeconftest(STEPS_CONFTEST + '''
from harness.errors import CapabilityMissing

@then("something only another environment can tell")
def _():
    raise CapabilityMissing("no wire counters here")

@given("something only another environment has")
def _():
    raise CapabilityMissing("no seed here")
''')
    result = pytester.runpytest_subprocess("-rs")
    result.assert_outcomes(failed=1, skipped=1)
    out = result.stdout.str()
    assert "Then-step 'something only another environment can tell' could not judge" in out and "no wire counters" in out
    assert "the environment cannot do what this needs: no seed here" in out


def test_a_scenario_conclusive_on_its_rerun_is_judged_by_the_rerun_alone(pytester: pytest.Pytester) -> None:
    make_project(pytester, """
Feature: resolution
  Scenario: a bound missed while the harness stalled, once
    Given nothing
    Then a bound is missed by less than the harness stalled the first time
""", "pq")
    pytester.makeconftest(STEPS_CONFTEST + '''
from pathlib import Path
from harness import judge

@then("a bound is missed by less than the harness stalled the first time")
def _():
    tried = Path("tried")
    if not tried.exists():
        tried.touch()
        judge.resolved(0.2, 0.5, "write gap", "3.2 s against 3 s")
''')
    result = pytester.runpytest_subprocess("--junitxml", str(pytester.path / "junit.xml"))
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1} and result.ret == pytest.ExitCode.OK
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count("<testcase") == 2 and junit.count('<property name="inconclusive"') == 1


def test_an_inconclusive_verdict_reruns_its_scenario_once_then_errs(pytester: pytest.Pytester) -> None:
    """Never a pass: rerun once (the default), and if the bound is missed within the harness's own
    stalls again, the scenario is an inconclusive error saying so; --inconclusive=error errs at
    once, --inconclusive=fail fails as a violation does."""
    make_project(pytester, """
Feature: resolution
  Scenario: a bound missed while the harness stalled
    Given nothing
    Then a bound is missed by less than the harness stalled
""", "pr")
    pytester.makeconftest(STEPS_CONFTEST + '''
from harness import judge

@then("a bound is missed by less than the harness stalled")
def _():
    judge.resolved(0.2, 0.5, "write gap", "3.2 s against 3 s")
''')
    result = pytester.runpytest_subprocess("--junitxml", str(pytester.path / "junit.xml"))
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.parseoutcomes() == {"errors": 1, "rerun": 1}
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count("<testcase") == 2 and '<skipped type="pytest.skip" message="inconclusive, run once more' in junit
    assert "<failure" in junit and "harness.judge.Inconclusive" in junit
    assert junit.count('<property name="inconclusive"') == 2  # each try's testcase says why
    result.stdout.fnmatch_lines(["*inconclusive, running it once more*"])
    result.stdout.fnmatch_lines(["*Inconclusive: write gap: inconclusive, missed by 0.200s while the harness itself "
                                 "stalled 0.500s*"])
    once = pytester.runpytest_subprocess("--inconclusive", "error")
    assert once.parseoutcomes() == {"errors": 1} and once.ret == pytest.ExitCode.TESTS_FAILED
    plain = pytester.runpytest_subprocess("--inconclusive", "fail", "--junitxml", str(pytester.path / "plain.xml"))
    plain.assert_outcomes(failed=1)
    xml = (pytester.path / "plain.xml").read_text()
    assert '<property name="inconclusive"' not in xml
    # A failure says what the machine had beside its verdict (it stays a failure).
    assert '<property name="machine_cpu_busy_percent"' in xml
    plain.stdout.fnmatch_lines(["*- machine -*", "over the steps, the machine's CPU was *% busy over * core(s)*"])


def test_a_region_a_live_session_owns_is_refused_and_left_to_it(pytester: pytest.Pytester) -> None:
    """Two sessions with one region name: the second errs, saying who owns it, and takes nothing
    of it down (its teardown runs only for what it brought up)."""
    from harness.config import load_config
    from harness.providers.state import state_path

    make_project(pytester, """
Feature: second
  Scenario: a second session on a name in use
    Given a healthy region with 3 etcd members spread over 3 zones
""", "pl")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    path = state_path(load_config().state_dir, "pl")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"owner_pid": owner.pid}))
        result = pytester.runpytest_subprocess()
        result.assert_outcomes(failed=1)  # the Given-step asks for the region
        result.stdout.fnmatch_lines([f"*region 'pl' is in use by process {owner.pid}; wait for it*"])
        assert json.loads(path.read_text()) == {"owner_pid": owner.pid}  # left as the owner has it
    finally:
        owner.kill()
        owner.wait()
        path.unlink(missing_ok=True)


def test_each_xdist_worker_runs_its_scenarios_in_a_region_of_its_own(pytester: pytest.Pytester) -> None:
    """`-n 2`: each worker brings up its own region, named after the session's and the worker's
    number, and takes it down; the JUnit the controller writes has what the workers' regions ran."""
    pytester.makeconftest(STEPS_CONFTEST + '''
from pathlib import Path

@then("the region's name is written down")
def _(env):
    Path(f"ran-in-{env.spec.name}").write_text("")
''')
    scenario = """
  Scenario: {0}
    Given a healthy region with 3 etcd members spread over 3 zones
    Then the region's name is written down
"""
    pytester.makefile(".feature", scenario="Feature: two workers\n" + scenario.format("one") + scenario.format("two"))
    pytester.makepyfile(test_features="from pytest_bdd import scenarios\nscenarios('scenario.feature')\n")
    cfg = pytester.makefile(".toml", harness=f'[paths]\nreports_dir = "{pytester.path / "reports"}"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--region-name", "xw",
                                           "--harness-config", str(cfg), "--junitxml", "junit.xml")
    result.assert_outcomes(passed=2)
    assert sorted(p.name for p in pytester.path.glob("ran-in-*")) == ["ran-in-xw0", "ran-in-xw1"]
    assert namespaces("xw0") == namespaces("xw1") == namespaces("xw") == []
    suite = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "junit.xml").getroot().iter("property")}
    assert suite["provider"] == "local" and suite["etcd_data"] == "tmpfs" and suite["etcd_version"]
