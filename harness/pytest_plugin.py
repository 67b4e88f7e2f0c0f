"""pytest plugin: options, the shared local region, and per-scenario timeline, faults and probes.

The region comes up once per session and always goes down; every fault injected in a
scenario is healed at its teardown, whatever happened (Ctrl-C and SIGTERM included).
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from harness import rootless
from harness.config import Config, load_config, with_region
from harness.errors import EnvironmentStateError, PrerequisiteError
from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe, ProbeHistory
from harness.providers.local.etcd import alive
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.local.state import read_state
from harness.timeline import Timeline

SESSION_REGION = "pt"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness")
    group.addoption("--harness-config", default=None, help="TOML file with [region], [etcd], [timeouts], [paths]")
    group.addoption("--etcd-bin", default=None, help="etcd binary for the local region (default: ETCD_BIN or `etcd` on PATH)")
    group.addoption("--region-name", default=SESSION_REGION,
                    help=f"name of the session's region, prefixes its namespaces (default: {SESSION_REGION})")


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Not root: run the whole session inside a user+network+mount namespace.
    try:
        rootless.reexec_if_needed([sys.executable, "-m", "pytest", *config.invocation_params.args])
    except PrerequisiteError as e:
        # Tests that need no region still run; those that do fail with this reason.
        print(f"[harness] {e}", file=sys.stderr)


MARKERS = {
    "outage": "scenarios that take zones, nodes or members away",
    "zone_outage": "a whole zone is cut off at the router",
    "node_failure": "a node's processes are killed, frozen or its link goes down",
    "quorum": "scenarios about etcd quorum loss and recovery",
    "region": "needs the local region (root or user namespaces, etcd, nftables)",
    "kube": "needs the local Kubernetes control plane (pinned binaries, built on first use)",
}


def pytest_configure(config: pytest.Config) -> None:
    # Gherkin tags become markers; registered here so --strict-markers accepts them anywhere.
    for name, help_ in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {help_}")
    # SIGTERM (CI cancel) tears down like Ctrl-C does, so faults heal and the region goes down.
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.fixture(scope="session")
def harness_config(pytestconfig: pytest.Config) -> Config:
    overrides: dict[str, Any] = {"region.name": pytestconfig.getoption("region_name")}
    if pytestconfig.getoption("etcd_bin"):
        overrides["etcd.binary"] = pytestconfig.getoption("etcd_bin")
    path = pytestconfig.getoption("harness_config")
    return load_config(Path(path) if path else None, overrides)


def _say(config: pytest.Config, text: str) -> None:
    """Write past output capture: bring-up happens inside the first test's setup."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if capture is None or reporter is None:
        print(text, file=sys.stderr)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(text)


def _bring_up(region: LocalRegion, config: pytest.Config) -> LocalEnvironment:
    left = region.leftovers()
    if left:
        owner = (read_state(region.path) or {}).get("owner_pid")
        if owner and owner != os.getpid() and alive(owner):
            raise EnvironmentStateError(
                f"region {region.spec.name!r} is in use by process {owner}; "
                "wait for it or pick another name with --region-name"
            )
        # This name belongs to pytest sessions; what is there was left by one that died.
        _say(config, f"[harness] removing leftovers of an earlier session: {', '.join(left)}")
        region.down()
    return region.up()


@pytest.fixture(scope="session")
def local_region(
    harness_config: Config, pytestconfig: pytest.Config, record_testsuite_property: Callable[[str, object], None]
) -> Iterator[LocalEnvironment]:
    region = LocalRegion(harness_config)
    env = _bring_up(region, pytestconfig)
    # CI reads which etcd the verdicts are about from the JUnit file.
    record_testsuite_property("etcd_version", env.state["etcd"]["version"])
    record_testsuite_property("etcd_binary", env.state["etcd"]["path"])
    try:
        yield env
    finally:
        region.down()


@pytest.fixture
def region_factory(harness_config: Config, pytestconfig: pytest.Config) -> Iterator[Callable[..., LocalEnvironment]]:
    """Fresh regions of any shape for one scenario (e.g. members=5, layout="single-zone")."""
    made: list[LocalRegion] = []

    def make(**shape: Any) -> LocalEnvironment:
        name = f"pf{len(made)}"
        region = LocalRegion(with_region(harness_config, name=name, **shape))
        made.append(region)
        return _bring_up(region, pytestconfig)

    try:
        yield make
    finally:
        for region in reversed(made):
            region.down()


@pytest.fixture
def env(local_region: LocalEnvironment) -> LocalEnvironment:
    """The environment a scenario works on; a step may replace it with a fresh one."""
    return local_region


@pytest.fixture
def timeline(request: pytest.FixtureRequest, harness_config: Config) -> Iterator[Timeline]:
    tl = Timeline()
    yield tl
    _write_run(request, harness_config, tl)


@pytest.fixture
def faults(env: LocalEnvironment, timeline: Timeline) -> Iterator[FaultRunner]:
    runner = FaultRunner(env, timeline)
    try:
        yield runner
    finally:
        runner.heal()


class Probes:
    def __init__(self, env: LocalEnvironment, timeline: Timeline) -> None:
        self.env = env
        self.timeline = timeline
        self.running: list[AvailabilityProbe] = []
        self.histories: list[ProbeHistory] = []

    def start(self, via_zone: str, interval: float) -> AvailabilityProbe:
        probe = AvailabilityProbe(self.env, self.timeline, via_zone, interval).start()
        self.running.append(probe)
        return probe

    def stop_all(self) -> None:
        while self.running:
            self.histories.append(self.running.pop().stop())


@pytest.fixture
def probes(env: LocalEnvironment, timeline: Timeline, request: pytest.FixtureRequest) -> Iterator[Probes]:
    p = Probes(env, timeline)
    request.node.stash[_PROBES] = p
    try:
        yield p
    finally:
        p.stop_all()


_PROBES = pytest.StashKey[Probes]()


def _write_run(request: pytest.FixtureRequest, config: Config, tl: Timeline) -> None:
    """Write the scenario's timeline and samples, pass or fail, for the report."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)[-150:]
    probes = request.node.stash.get(_PROBES, None)
    histories = []
    if probes is not None:
        probes.stop_all()
        histories = [h.to_dict() for h in probes.histories]
    out = config.reports_dir / "runs" / f"{name}.json"
    try:
        tl.write(out, {"nodeid": request.node.nodeid, "histories": histories})
    except OSError as e:  # a report that cannot be written must not hide the test result
        print(f"[harness] could not write {out}: {e}", file=sys.stderr)

