"""pytest plugin: options, hooks and fixtures: the shared environment, the steps (registered from
harness.steps), and each scenario's timeline, faults, probes and loads.

The environment (by default the local region) comes up once per session and always goes
down; every fault injected in a scenario is healed at its teardown, whatever happened
(Ctrl-C and SIGTERM included). Installing the harness is enough for a project's own
.feature files: this plugin registers every step.
"""

from __future__ import annotations

import re
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest
from pytest_bdd.reporting import ReportContext, scenario_reports_registry, test_report_context_registry

from harness import etcd_builds, rootless
from harness.config import PROVIDER_NAMES, Config, load_config, option_overrides
from harness.errors import CapabilityMissing, HarnessError, see_docs
from harness.judge import Inconclusive
from harness.faults.runner import FaultRunner
from harness.providers import get_provider
from harness.providers.base import (CloudStarter, EtcdCluster, Environment, FreshEnvironments, Provider, Reclaimable,
                                   Replaceable, RunFacts)
from harness.report.facts import Facts
from harness.soundness import diverged
from harness.steps import STEP_MODULES
from harness.steps.holders import Exploration, Loads, Probes
from harness.steps.terminal import say
from harness.teardown import take_down
from harness.timeline import Timeline
from harness.topology import Seed

if TYPE_CHECKING:
    from harness.aws.access import AwsAccess
    from harness.report.results import RunRecorder

SESSION_REGION = "pt"
# Registered with this plugin, so a project with its own .feature files needs nothing else.
pytest_plugins = STEP_MODULES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness")
    group.addoption("--harness-config", default=None, help="TOML file with [region], [etcd], [timeouts], [paths]")
    group.addoption("--etcd-bin", default=None, help="etcd binary for the local region (default: ETCD_BIN or `etcd` on PATH)")
    group.addoption("--region-name", default=SESSION_REGION,
                    help=f"name of the session's region, prefixes its namespaces (default: {SESSION_REGION}); "
                         f"with pytest-xdist each worker appends its number ({SESSION_REGION}0, {SESSION_REGION}1, ...)")
    group.addoption("--provider", default=None, choices=PROVIDER_NAMES,
                    help="environment to run against: local (default), cluster (an existing kubeconfig context) or kind")
    group.addoption("--etcd-version", default=None,
                    help="local regions run this etcd release, built from the Go module proxy on first use "
                         "(default: the pinned one; python -m harness.etcd_builds lists none, builds one)")
    group.addoption("--data-on-disk", action="store_true", default=False,
                    help="local regions keep etcd's data on a real filesystem ([paths] disk_data_dir), not tmpfs")
    group.addoption("--kubeconfig", default=None, help="cluster/kind: kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    group.addoption("--kube-context", default=None, help="cluster: context in the kubeconfig (default: its current one)")
    group.addoption("--harness-report", action="store_true", default=False,
                    help="write the run's report to reports/<run-id>/ (JUnit, cucumber JSON, summary.json, index.html), "
                         "reports/latest pointing at it, and the trends; also on failure and interruption")
    group.addoption("--explore-seed", type=int, default=None,
                    help="@explore: the seed of the random schedule of faults (default: a new one, said at its start)")
    group.addoption("--inconclusive", choices=("rerun", "error", "fail"), default="rerun",
                    help="a timing bound missed by less than the harness's own stalls is inconclusive, never a pass: "
                         "rerun the scenario once and report it as an error if it is inconclusive again (default), "
                         "report it as an error at once, or as a plain failure")
    group.addoption("--schedule-seed", type=int, default=None,
                    help="the seed of a scenario's random schedule (member kills; default: a new one, on the timeline)")
    group.addoption("--explore-seconds", type=float, default=None,
                    help="@explore: how long the schedule runs, in place of the feature's own time")
    group.addoption("--harness-run-id", default=None,
                    help="the report's run id (default: a new one; `harness nightly` names it to read its own run back)")


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Not root: run the whole session inside a user+network+mount namespace.
    try:
        if rootless.needs_reexec() and not config.getoption("etcd_bin", None):
            etcd_builds.build_before_namespace(config.getoption("etcd_version", None))
        rootless.reexec_if_needed([sys.executable, "-m", "pytest", *config.invocation_params.args])
    except HarnessError as e:
        # Tests that need no region still run; those that do fail with this reason.
        print(f"[harness] {e}", file=sys.stderr)


MARKERS = {
    "short": "the must-fail scenarios make test runs (make must-fail and make nightly run them all)",
    "long": "scenarios of minutes that make test leaves to make nightly and make bugs",
    "outage": "scenarios that take zones, nodes or members away",
    "zone_outage": "a whole zone is cut off at the router",
    "node_failure": "a node's processes are killed, frozen or its link goes down",
    "grey": "grey network failures between zones: one direction, partial partitions, loss, MTU trouble",
    "disk": "a member's disk full (a filesystem of its own, filled) or slow (etcd's raftBeforeSave failpoint)",
    "detect": "time to detect: when etcd's /health, its peer streams, /readyz, the load balancer and NotReady see a fault",
    "explore": "seeded random schedules of faults under load, judged by every validator (harness explore)",
    "quorum": "scenarios about etcd quorum loss and recovery",
    "recovery": "backups to the object store and the recovery from a permanent quorum loss (seed 003, DEP-05)",
    "kep3458": "a Service's cloud load balancer kept by the real cloud controller manager through outages (seed 002)",
    "placement": "where the real scheduler puts the reference control plane (needs a Kubernetes seed)",
    "traffic": "cross-zone traffic between etcd members, measured at the router and from their metrics",
    "gep20": "GEP-20's outage experiment with the reference control plane running for real on the local seed",
    "gardener": "on Gardener's own components on the local seed (gardener-resource-manager's webhooks place the "
                "reference control plane: its gardener form)",
    "druid": "etcd-druid (real) runs the reference's etcds from the Etcd resources gardenlet's code makes",
    "gep20_findings": "GEP-20's further statements (its appendix, its findings and future enhancements), each with the GEP's figure stated",
    "aws": "AWS faults (network ACL swap, credential revocation, EC2 instances) through an AWS API: the local cloud or [aws]",
    "region": "needs the local region (root or user namespaces, etcd, nftables)",
    "kube": "needs the local Kubernetes control plane (pinned binaries, built on first use)",
    "own_reference": "runs a whole reference control plane of its own with real pods: never beside another such "
                     "test (make test gives them all to one pytest-xdist worker: conftest.py)",
    "bug": "a known etcd bug's scenario: flags the bug on the version that had it, passes on a fixed one "
           "(python -m harness.bugs)",
}


_RECORDER: "pytest.StashKey[RunRecorder]" = pytest.StashKey()


_FACTS = pytest.StashKey[Facts]()


def _facts(config: pytest.Config) -> Facts:
    return config.stash.setdefault(_FACTS, Facts())


@pytest.hookimpl(tryfirst=True)  # before junitxml and pytest-bdd's cucumberjson read their paths
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # a pytest-xdist worker: a region of its own
        from harness import workers

        try:
            config.option.region_name = workers.region_name(config.option.region_name, worker["workerid"])
        except HarnessError as e:
            raise pytest.UsageError(str(e)) from None
    if config.getoption("harness_report", False) and worker is None:
        from harness.report.results import RunRecorder
        from harness.report.runs import new_run_id

        path = config.getoption("harness_config")
        loaded = load_config(Path(path) if path else None, option_overrides({"provider": config.getoption("provider")}))
        run_id = config.getoption("harness_run_id") or new_run_id()
        if Path(run_id).name != run_id or run_id.startswith("."):
            raise pytest.UsageError(f"--harness-run-id must be a plain directory name (e.g. 20250101T120000Z-3fa9c1), "
                                    f"got {run_id!r}")
        recorder = RunRecorder(loaded.reports_dir, run_id)
        recorder.environment["provider"] = loaded.provider.name
        recorder.run_dir.mkdir(parents=True, exist_ok=True)
        config.stash[_RECORDER] = recorder
        if not config.option.xmlpath:
            config.option.xmlpath = str(recorder.run_dir / "junit.xml")
        if not getattr(config.option, "cucumber_json_path", None):
            config.option.cucumber_json_path = str(recorder.run_dir / "cucumber.json")
    # Gherkin tags become markers; registered here so --strict-markers accepts them anywhere.
    from harness.bugs import BUGS

    for name, help_ in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_}")
    for bug in BUGS.values():
        config.addinivalue_line("markers", f"{bug.marker}: etcd issue {bug.issue}, {bug.title}")
    # SIGTERM (CI cancel) tears down like Ctrl-C does, so faults heal and the region goes down.
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, signal.default_int_handler)


# A scenario that needs what the environment cannot do (a zone cut on a provider without one, a
# client in a zone where there is no vantage point) did not run: a skip that names the missing
# capability, counted in the report, never a failure and never a pass. Once a Then-step is judging,
# it is too late for that: the scenario ran, and a check that cannot judge (nor the checks after
# it) has shown nothing, so the step fails.
def _skipped_when_incapable(item: pytest.Item) -> Iterator[None]:
    from harness.probes import machine_cpu

    item.stash[_CPU_AT] = machine_cpu.read()  # at the call, when the scenario's steps begin
    try:
        return (yield)
    except CapabilityMissing as e:
        judging = item.stash.get(_JUDGING, None)
        if judging is not None:
            pytest.fail(f"Then-step {judging!r} could not judge: the environment cannot do what it needs: {e}",
                        pytrace=False)
        pytest.skip(f"the environment cannot do what this needs: {e}")


_JUDGING = pytest.StashKey[str]()
_CPU_AT = pytest.StashKey[Any]()  # the machine's CPU times when the setup or the call began


# An inconclusive verdict (harness.judge.Inconclusive: a bound missed by less than the harness's
# own stalls) is never a pass. With --inconclusive=rerun its scenario runs once more: the first
# try's call is reported as skipped, saying why (the JUnit's <skipped>, "R" in the terminal), and
# the second decides; inconclusive again, it is an error of its own kind (failed, "E" and
# INCONCLUSIVE in the terminal, counted with the errors, the reason in the JUnit's properties), as
# it is at once with --inconclusive=error. Reports are logged as they come, as pytest's own
# protocol does, so an interrupted scenario is still reported.
_TRIES = pytest.StashKey[int]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if call.when == "teardown":
        _carry(item, report)
    if not (call.when == "call" and report.failed and call.excinfo is not None):
        return report
    from harness.probes import machine_cpu

    # A red on a starved machine stays red (etcd slowed by the machine is still a slower etcd), but
    # says what the machine had, so a reader can tell a busy runner from a slow system.
    cpu = machine_cpu.between(item.stash.get(_CPU_AT, None), machine_cpu.read())
    if cpu is not None:
        report.sections.append(("machine", f"over the steps, {cpu.describe()}"))
        report.user_properties.append(("machine_cpu_busy_percent", f"{cpu.busy_percent:.0f}"))
        item.user_properties.append(("machine_cpu_busy_percent", f"{cpu.busy_percent:.0f}"))
    if not call.excinfo.errisinstance(Inconclusive) or item.config.getoption("inconclusive") == "fail":
        return report
    mode = item.config.getoption("inconclusive")
    said = ("inconclusive", str(call.excinfo.value)[:500] + (f" ({cpu.describe()} over the steps)" if cpu else ""))
    report.user_properties.append(said)
    item.user_properties.append(said)  # the JUnit writes the item's, at teardown
    if mode == "rerun" and item.stash.get(_TRIES, 0) == 0:
        item.stash[_TRIES] = 1
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"inconclusive, run once more: {said[1]}")
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if item.config.getoption("inconclusive") != "rerun":
        return None
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runtestprotocol(item, nextitem=nextitem)
    if item.stash.get(_TRIES, 0) == 1:
        item.stash[_TRIES] = 2
        say(item.config, f"[harness] {item.nodeid}: inconclusive, running it once more")
        item.user_properties[:] = [p for p in item.user_properties
                                   if p[0] not in ("inconclusive", "machine_cpu_busy_percent")]
        runtestprotocol(item, nextitem=nextitem)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    if report.when == "call" and any(k == "inconclusive" for k, _ in report.user_properties):
        if report.skipped:
            return "rerun", "R", ("INCONCLUSIVE, RERUN", {"yellow": True})
        if report.failed:
            return "error", "E", ("INCONCLUSIVE", {"red": True})
    return None


def pytest_bdd_step_func_lookup_error(request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any,
                                      exception: Exception) -> None:
    """A step no definition matches: say which, and the harness's steps that read most like it."""
    from harness.steps import catalogue

    near = catalogue.closest(step.name, catalogue.steps(shown_failing=False))
    pytest.fail(f"no step matches `{step.keyword} {step.name}` (line {step.line_number} of {feature.rel_filename})"
                + ("; did you mean: " + "; ".join(near) if near else "")
                + f". `harness steps --grep WORD` lists the harness's steps; {see_docs('reference/steps.md')}",
                pytrace=False)


def pytest_bdd_step_error(request: pytest.FixtureRequest, feature: Any, scenario: Any, step: Any,
                          step_func: Any, step_func_args: dict[str, object], exception: Exception) -> None:
    if isinstance(exception, CapabilityMissing) and step.type == "then":
        request.node.stash[_JUDGING] = step.name
    if isinstance(exception, pytest.FixtureLookupError) and exception.argname:
        _missing_given(feature, step, exception.argname)


def _missing_given(feature: Any, step: Any, name: str) -> None:
    """A step that needs what no earlier step of its scenario handed on: say which steps would."""
    from harness.steps import catalogue

    by = catalogue.providers(catalogue.steps(shown_failing=False)).get(name)
    if by:
        raise pytest.fail.Exception(  # from None: not pytest's "fixture not found" beside it
            f"`{step.keyword} {step.name}` (line {step.line_number} of {feature.rel_filename}) needs {name!r}, which no "
            f"earlier step of its scenario handed on; a step before it that does: {'; '.join(by[:4])}"
            f"{' …' if len(by) > 4 else ''}. {see_docs('reference/steps.md').capitalize()}", pytrace=False) from None


pytest_runtest_setup = pytest_runtest_call = pytest.hookimpl(wrapper=True)(_skipped_when_incapable)


# What the process that writes the report and the JUnit needs of a test, on its teardown report:
# pytest-xdist sends a worker's reports to that process attribute by attribute.
def _carry(item: pytest.Item, report: pytest.TestReport) -> None:
    timeline = item.stash.get(_TIMELINE, None)
    if timeline is not None:
        del item.stash[_TIMELINE]
        report.harness_timeline = timeline  # type: ignore[attr-defined]
    facts = item.config.stash.get(_FACTS, None)
    news = facts.news() if facts is not None else None
    if news is not None:
        report.harness_facts = news  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)  # a worker's: before xdist sends the report; else: before the cucumber JSON reads it
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _CONFIG:
        return
    config = _CONFIG[-1]
    if hasattr(config, "workerinput"):  # pytest-bdd keeps a report's scenario beside it, which xdist does not send
        context = test_report_context_registry.get(report)
        if context is not None:
            report.harness_scenario = {"scenario": context.scenario, "name": context.name}  # type: ignore[attr-defined]
        return
    sent = getattr(report, "harness_scenario", None)
    if sent is not None and report not in test_report_context_registry:
        test_report_context_registry[report] = ReportContext(**sent)
    recorder = config.stash.get(_RECORDER, None)
    facts = getattr(report, "harness_facts", None)
    if facts is not None:
        _suite_properties(config, facts["suite"])
        if recorder is not None:
            recorder.environment.update(facts["environment"])
    if recorder is None:
        return
    timeline = getattr(report, "harness_timeline", None)
    if timeline is not None:
        recorder.add_timeline(report.nodeid, Path(timeline["path"]), Path(timeline["porcupine"]),
                              [Path(p) for p in timeline["logs"]])
    context = test_report_context_registry.get(report)
    recorder.add_report(report, context.scenario if context else None)


def _suite_properties(config: pytest.Config, suite: dict[str, str]) -> None:
    """The JUnit's testsuite properties (record_testsuite_property's, which a worker cannot write)."""
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    said = {name for name, _ in xml.global_properties}
    for name, value in suite.items():
        if name not in said:
            xml.add_global_property(name, value)


_CONFIG: list[pytest.Config] = []  # the session's config, for hooks that only get a report
_RUN_DIR = "harness_run_dir"  # a pytest-xdist worker's input: the run's report directory


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, before a worker starts: the scenarios it runs write into this run's directory."""
    recorder = node.config.stash.get(_RECORDER, None)
    if recorder is not None:
        node.workerinput[_RUN_DIR] = str(recorder.run_dir)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker per core, as many as the memory holds (harness.workers)."""
    from harness import workers

    return workers.machine_count()


def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG.append(session.config)


@pytest.hookimpl(trylast=True)  # after the fixtures' teardown wrote the timelines and junitxml its file
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config in _CONFIG:
        _CONFIG.remove(session.config)
    recorder = session.config.stash.get(_RECORDER, None)
    if recorder is None:
        return
    from harness.report.write import write_report

    for item in session.items:  # a scenario cut short: its steps so far, from pytest-bdd's own record
        rec = recorder.results.get(item.nodeid)
        if rec is not None and rec["result"] == "interrupted" and item in scenario_reports_registry:
            recorder.add_scenario(item.nodeid, scenario_reports_registry[item].serialize())
    seen = set(recorder.results)
    not_run = [item.nodeid for item in session.items if item.nodeid not in seen]
    user_xml = session.config.option.xmlpath
    if user_xml and Path(user_xml).resolve() != (recorder.run_dir / "junit.xml").resolve() and Path(user_xml).exists():
        shutil.copyfile(user_xml, recorder.run_dir / "junit.xml")
    status = int(exitstatus)
    try:
        index = write_report(recorder.reports_dir, recorder.run_dir, recorder.run_id, recorder.records(),
                             recorder.environment, recorder.session(status, status == pytest.ExitCode.INTERRUPTED, not_run),
                             progress=lambda text: say(session.config, f"[report] {text}"))
    except Exception as e:  # the report must never hide the test results
        say(session.config, f"[harness] could not write the report in {recorder.run_dir}: {type(e).__name__}: {e}")
        return
    say(session.config, f"[harness] report: {index}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Placement and GEP-20 need a Kubernetes seed: locally the pinned binaries (`make test-fast` skips them).
    for item in items:
        if item.get_closest_marker("placement") or item.get_closest_marker("gep20"):
            item.add_marker(pytest.mark.kube)


@pytest.fixture(scope="session")
def harness_config(pytestconfig: pytest.Config) -> Config:
    given = {name: pytestconfig.getoption(name) for name in (
        "region_name", "etcd_bin", "etcd_version", "provider", "kubeconfig", "kube_context")}
    given["data_on_disk"] = pytestconfig.getoption("data_on_disk") or None  # a flag: off is not given
    path = pytestconfig.getoption("harness_config")
    return load_config(Path(path) if path else None, option_overrides(given))


@pytest.fixture(scope="session")
def harness_provider(harness_config: Config) -> Provider:
    return get_provider(harness_config.provider.name, harness_config)


def _reclaim(provider: Provider, config: pytest.Config) -> None:
    """Remove what a session that died left under this name. A live session's environment is an
    error: called before anything that would take the environment down on failure."""
    if isinstance(provider, Reclaimable):
        left = provider.reclaim()
        if left:
            say(config, f"[harness] removed the leftovers of an earlier session: {', '.join(left)}")


@pytest.fixture(scope="session")
def session_env(harness_provider: Provider, pytestconfig: pytest.Config) -> Iterator[Environment]:
    """The session's environment: the local region (up once, always down), or the cluster."""
    facts = _facts(pytestconfig)
    facts.said(provider=harness_provider.name)
    _reclaim(harness_provider, pytestconfig)
    try:
        env = harness_provider.up()
        facts.environment["zones"] = list(env.zones)
        run = env.run_facts() if isinstance(env, RunFacts) else {}
        facts.said(**{k: run[k] for k in ("etcd_version", "etcd_binary", "etcd_data") if k in run})
        from harness.probes import versions

        if "kubernetes_version" in run:  # until a scenario starts the seed (the `seed` fixture then asks its API)
            facts.environment.update(kubernetes_version=run["kubernetes_version"],
                                     kubernetes_version_source=versions.KUBE_PINNED)
        if pytestconfig.getoption("harness_report") and "etcd_version" in run:
            facts.environment.update(versions.etcd_version(env, run["etcd_version"]))
        yield env
    finally:
        take_down(harness_provider)  # heals, removes what it deployed; a cluster it did not create stays
        pytestconfig.stash[_REPLACED] = None


# The session's environment goes once no scenario after the current one can use it: a region and
# its seed left running would load the machine under every test that follows (the local seed's
# own tests bring up seeds of their own). Scenarios ask for it by running their steps, so any
# pytest-bdd scenario counts as a user.
_LAST_USER = pytest.StashKey[str | None]()


def pytest_collection_finish(session: pytest.Session) -> None:
    users = [i.nodeid for i in session.items
             if {"session_env", "_pytest_bdd_example"} & set(getattr(i, "fixturenames", ()))]
    session.config.stash[_LAST_USER] = users[-1] if users else None


@pytest.hookimpl(trylast=True)  # after this item's own fixtures went
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if (nextitem is None or item.nodeid != item.config.stash.get(_LAST_USER, None)
            or item.stash.get(_TRIES, 0) == 1):  # session end tears it down anyway; or a rerun follows
        return
    for fixturedef in item.session._fixturemanager.getfixturedefs("session_env", item) or ():
        fixturedef.finish(item._request)  # type: ignore[attr-defined]  # its dependents first, as pytest does


@pytest.fixture
def region_factory(harness_provider: Provider, harness_config: Config, pytestconfig: pytest.Config,
                   request: pytest.FixtureRequest) -> Iterator[Callable[..., Environment]]:
    """Fresh regions of any shape for one scenario (e.g. members=5, layout="single-zone"). The
    fresh region is the scenario's etcd under test from then on, also after a Background's
    "Given a healthy region ..." made the session's region that."""
    if not isinstance(harness_provider, FreshEnvironments):
        pytest.skip(f"a fresh region of its own needs the local provider, not {harness_provider.name}")
    made: list[Provider] = []

    def make(etcd: dict[str, Any] | None = None, **shape: Any) -> Environment:
        from pytest_bdd.compat import inject_fixture

        # Named after the session's region, so that two sessions (--region-name, pytest-xdist's
        # workers) never share one: pt gives ptf0, ptf1, ..., a worker's pt0 gives pt00, pt01, ...
        region = harness_provider.fresh(f"{(harness_config.region.name + 'f')[:3]}{len(made)}", etcd, **shape)
        _reclaim(region, pytestconfig)
        made.append(region)  # ours from here: taken down at the end, also when its bring-up fails
        fresh = region.up()
        inject_fixture(request._pyfuncitem._request, "etcd", fresh)  # type: ignore[attr-defined]
        return fresh

    try:
        yield make
    finally:
        for region in reversed(made):
            region.down()


_REPLACED = pytest.StashKey[Environment | None]()


@pytest.fixture
def env(session_env: Environment, harness_provider: Provider, pytestconfig: pytest.Config,
        harness_config: Config) -> Iterator[Environment]:
    """The environment a scenario works on; a step may replace it with a fresh one. Once the
    scenario's faults are healed, the session's local region is checked: a scenario that left it
    diverged (members that never reach one revision, or that differ in HashKV at it) fails with
    the evidence, and the region is replaced, so the next scenario starts on a sound one."""
    current = pytestconfig.stash.get(_REPLACED, None) or session_env
    yield current
    if not isinstance(harness_provider, Replaceable) or not isinstance(current, EtcdCluster):
        return
    why = diverged(current, harness_config.timeouts.recovery)
    if why is None:
        return
    say(pytestconfig, f"[harness] this scenario left the session's region inconsistent ({why}); replacing it")
    pytestconfig.stash[_REPLACED] = harness_provider.replace()
    pytest.fail(f"this scenario left the session's region inconsistent once its faults were healed: {why}",
                pytrace=False)


@pytest.fixture
def etcd(env: Environment) -> Environment:
    """The etcd cluster a scenario probes and judges: the region's own, unless a step names a
    shoot's (the reference control plane running for real)."""
    return env


@pytest.fixture
def seed(harness_provider: Provider, env: Environment, pytestconfig: pytest.Config) -> Seed:
    """The seed of the scenario's environment; the local one starts on first use (a few seconds)."""
    from harness.probes import versions

    got = harness_provider.seed(env)
    environment = _facts(pytestconfig).environment
    if pytestconfig.getoption("harness_report") and environment.get("kubernetes_version_source") != versions.KUBE_API:
        try:  # once per session: the report says which Kubernetes the verdicts are about
            environment.update(kubernetes_version=versions.kubernetes_version(got.kube),
                               kubernetes_version_source=versions.KUBE_API)
        except HarnessError as e:
            say(pytestconfig, f"[harness] could not read the seed's Kubernetes version: {e}")
    return got


@pytest.fixture
def timeline(request: pytest.FixtureRequest, harness_config: Config) -> Iterator[Timeline]:
    from harness.probes import machine_cpu

    tl, cpu = Timeline(), machine_cpu.read()
    yield tl
    share = machine_cpu.between(cpu, machine_cpu.read())
    if share is not None:  # the context of the scenario's timing verdicts (the machine's, not a figure of the system)
        tl.mark("machine", "cpu", busy_percent=round(share.busy_percent, 1), steal_percent=round(share.steal_percent, 1),
                cores=share.cores)
    _write_run(request, harness_config, tl)


_INTERRUPTED: list[bool] = []  # Ctrl-C or SIGTERM: pytest calls the hook below before teardown


def pytest_keyboard_interrupt() -> None:
    _INTERRUPTED.append(True)


@pytest.fixture
def faults(env: Environment, timeline: Timeline, request: pytest.FixtureRequest) -> Iterator[FaultRunner]:
    runner = FaultRunner(env, timeline)
    try:
        yield runner
    finally:
        # Interrupted: heal every fault at once, but do not wait for the region to recover (a
        # member cut off rejoins up to half a minute later); the session is ending anyway. Nor
        # when a shoot's etcd was under test and nothing was left to heal: the region's own etcd
        # was a bystander, and the next fault waits for its health anyway.
        bystander = not runner.active and _shoot_under_test(request, env)
        runner.heal(wait=not _INTERRUPTED and not bystander)


def _shoot_under_test(request: pytest.FixtureRequest, env: Environment) -> bool:
    """A shoot's etcd was the scenario's etcd under test, beside the environment's own."""
    try:
        etcd = request.getfixturevalue("etcd")
    except Exception:  # the lookup failed at teardown: the region's health is awaited, as by default
        return False
    return etcd is not env and bool(env.members)


@pytest.fixture
def exploration(pytestconfig: pytest.Config) -> Exploration:
    return Exploration(pytestconfig.getoption("explore_seed"), pytestconfig.getoption("explore_seconds"),
                       lambda text: say(pytestconfig, text))


@pytest.fixture
def schedule_seed(pytestconfig: pytest.Config) -> int:
    """The seed of the scenario's random schedule: --schedule-seed, else a new one (the step puts it
    on the timeline, so a run can be repeated, and harness.bugs gives a buggy and a fixed release
    the same one)."""
    given = pytestconfig.getoption("schedule_seed")
    return int(given) if given is not None else time.time_ns() % 2**32


@pytest.fixture
def cloud(harness_provider: Provider, env: Environment) -> "AwsAccess":
    """The environment's AWS account: the local region's own cloud (started on first use), or [aws]."""
    from harness.providers.base import Cloud

    if isinstance(harness_provider, CloudStarter):
        return harness_provider.cloud(env)
    access = env.aws() if isinstance(env, Cloud) else None
    if access is None:
        pytest.skip(f"the {env.provider} environment has no AWS account; configure [aws] (region, vpc_id, zones)")
    return access


@pytest.fixture
def machine_probes(cloud: "AwsAccess", timeline: Timeline) -> Iterator[list[Any]]:
    """Machine-API probes of a scenario; stopped at teardown, what they created deleted."""
    started: list[Any] = []
    try:
        yield started
    finally:
        for probe in started:
            probe.stop()


@pytest.fixture
def probes(timeline: Timeline, request: pytest.FixtureRequest) -> Iterator[Probes]:
    p = Probes(timeline)
    request.node.stash[_PROBES] = p
    try:
        yield p
    finally:
        p.stop_all()


_PROBES = pytest.StashKey[Probes]()
_TIMELINE = pytest.StashKey[dict[str, Any]]()  # where the scenario's timeline was written, for the report


def _run_name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]


def _runs_dir(request: pytest.FixtureRequest, config: Config) -> Path:
    """Where scenarios write their timelines, load histories and Porcupine pages: in the run's own
    report directory when the session writes a report, so that a later run of the same scenario
    never changes what this run's page shows; else reports/runs."""
    recorder = request.config.stash.get(_RECORDER, None)
    run_dir = recorder.run_dir if recorder is not None else getattr(request.config, "workerinput", {}).get(_RUN_DIR)
    return (Path(run_dir) if run_dir else config.reports_dir) / "runs"


@pytest.fixture
def loads(request: pytest.FixtureRequest, harness_config: Config, timeline: Timeline) -> Iterator[Loads]:
    held = Loads(_runs_dir(request, harness_config) / _run_name(request), timeline)
    try:
        yield held
    finally:
        held.stop_all()


def _write_run(request: pytest.FixtureRequest, config: Config, tl: Timeline) -> None:
    """Write the scenario's timeline and samples, pass or fail, for the report."""
    name = _run_name(request)
    probes = request.node.stash.get(_PROBES, None)
    histories, records = [], []
    if probes is not None:
        probes.stop_all()
        histories, records = [h.to_dict() for h in probes.histories], probes.records
    out = _runs_dir(request, config) / f"{name}.json"
    # Figures the Then-steps marked become JUnit properties (the teardown report carries them).
    from harness.report.figures import from_events, junit_properties

    request.node.user_properties.extend(junit_properties(from_events(tl.to_dict()["events"])))
    try:
        tl.write(out, {"nodeid": request.node.nodeid, "histories": histories, "records": records})
    except OSError as e:  # a report that cannot be written must not hide the test result
        print(f"[harness] could not write {out}: {e}", file=sys.stderr)
        return
    region = getattr(getattr((getattr(request.node, "funcargs", None) or {}).get("env"), "spec", None), "name", None)
    # The region's logs are kept in reports/logs/<region> when it goes down, after the scenarios;
    # the report copies them into the run's directory then (and leaves them out if none were kept).
    # The teardown report carries this to the process that writes the report.
    request.node.stash[_TIMELINE] = {"path": str(out), "porcupine": str(out.parent / name / "porcupine.html"),
                                     "logs": [str(config.reports_dir / "logs" / region)] if region else []}

