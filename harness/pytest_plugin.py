"""pytest plugin: options, the shared local region, and per-scenario timeline, faults and probes.

The region comes up once per session and always goes down; every fault injected in a
scenario is healed at its teardown, whatever happened (Ctrl-C and SIGTERM included).
"""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from harness.config import Config, load_config, with_region
from harness.faults.runner import FaultRunner
from harness.probes.availability import AvailabilityProbe, ProbeHistory
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness import rootless
from harness.timeline import Timeline

SESSION_REGION = "pt"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness")
    group.addoption("--harness-config", default=None, help="TOML file with [region], [etcd], [timeouts], [paths]")
    group.addoption("--etcd-bin", default=None, help="etcd binary for the local region (default: ETCD_BIN or `etcd` on PATH)")


def pytest_cmdline_main(config: pytest.Config) -> None:
    # Not root: run the whole session inside a user+network+mount namespace.
    rootless.reexec_if_needed([sys.executable, "-m", "pytest", *config.invocation_params.args])


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (CI cancel) tears down like Ctrl-C does, so faults heal and the region goes down.
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.fixture(scope="session")
def harness_config(pytestconfig: pytest.Config) -> Config:
    overrides: dict[str, Any] = {"region.name": SESSION_REGION}
    if pytestconfig.getoption("etcd_bin"):
        overrides["etcd.binary"] = pytestconfig.getoption("etcd_bin")
    path = pytestconfig.getoption("harness_config")
    return load_config(Path(path) if path else None, overrides)


def _bring_up(region: LocalRegion) -> LocalEnvironment:
    left = region.leftovers()
    if left:
        # This name belongs to pytest sessions; what is there was left by one that died.
        print(f"\n[harness] removing leftovers of an earlier session: {', '.join(left)}", file=sys.stderr)
        region.down()
    return region.up()


@pytest.fixture(scope="session")
def local_region(harness_config: Config) -> Iterator[LocalEnvironment]:
    region = LocalRegion(harness_config)
    env = _bring_up(region)
    try:
        yield env
    finally:
        region.down()


@pytest.fixture
def region_factory(harness_config: Config) -> Iterator[Callable[..., LocalEnvironment]]:
    """Fresh regions of any shape for one scenario (e.g. members=5, layout="single-zone")."""
    made: list[LocalRegion] = []

    def make(**shape: Any) -> LocalEnvironment:
        name = f"pf{len(made)}"
        region = LocalRegion(with_region(harness_config, name=name, **shape))
        made.append(region)
        return _bring_up(region)

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
    samples = []
    if probes is not None:
        probes.stop_all()
        samples = [[s.kind, s.member, round(s.start, 4), round(s.end, 4), s.ok, s.seq, s.revision, s.leader]
                   for h in probes.histories for s in h.samples]
    out = config.reports_dir / "runs" / f"{name}.json"
    try:
        tl.write(out, {"nodeid": request.node.nodeid, "samples": samples,
                       "sample_fields": ["kind", "member", "start", "end", "ok", "seq", "revision", "leader"]})
    except OSError as e:  # a report that cannot be written must not hide the test result
        print(f"[harness] could not write {out}: {e}", file=sys.stderr)

