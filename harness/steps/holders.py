"""What a scenario's steps keep between them and its fixtures end at teardown: the probes and
loads it started, the control planes it deployed, what an exploration was asked for."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from harness.config import Config
from harness.kube import placement
from harness.probes.availability import AvailabilityProbe, ProbeHistory
from harness.errors import CapabilityMissing
from harness.providers.base import Environment, EtcdCluster, SeedEtcdDruid, SeedResourceManager
from harness.timeline import Timeline
from harness.topology import Seed

if TYPE_CHECKING:
    from harness.reference.render import ReferenceSpec
    from harness.steps.scenario import Shoot


@dataclass(frozen=True)
class Exploration:
    """What `--explore-seed` and `--explore-seconds` ask of an @explore scenario, and where it says so."""

    seed: int | None
    seconds: float | None
    say: Callable[[str], None]


class Shoots:
    """Reference control planes deployed by one scenario; removed at its teardown."""

    def __init__(self, config: Config, timeline: Timeline | None = None,
                 make_room: Callable[[ReferenceSpec], None] | None = None) -> None:
        # make_room(spec) before a deployment: what must go for it first (the plugin's stand-in).
        self.config, self.timeline, self.make_room = config, timeline, make_room
        self.deployed: list[tuple[Seed, str]] = []
        self.shoots: list[Shoot] = []
        self.started: list[Callable[[], Any]] = []  # stops, run after the control planes are removed

    def deploy(self, seed: Seed, spec: ReferenceSpec, backup_store: Any = None, env: Environment | None = None) -> Shoot:
        """`env`: where a form needs more of the seed than the seed's API (Gardener's webhook)."""
        from harness.reference.deploy import deploy
        from harness.reference.render import DECIDED_BY_WEBHOOK
        from harness.steps.scenario import Shoot

        if spec.form in DECIDED_BY_WEBHOOK:
            if not isinstance(env, SeedResourceManager):
                raise CapabilityMissing(f"the {spec.form} form needs Gardener's gardener-resource-manager on the seed, "
                                        f"which the {getattr(env, 'provider', 'given')} environment cannot run")
            if env.start_resource_manager():
                self.started.append(env.stop_resource_manager)
        if spec.druid:
            if not isinstance(env, SeedEtcdDruid):
                raise CapabilityMissing(f"etcd-druid is to run the etcds, which the {getattr(env, 'provider', 'given')} "
                                        "environment cannot run on its seed")
            if env.start_etcd_druid():
                self.started.append(env.stop_etcd_druid)
        if self.make_room is not None:
            self.make_room(spec)
        self.deployed.append((seed, spec.namespace))
        placed = deploy(seed, spec, self.config.timeouts.deploy, backup_store)
        if self.timeline is not None:  # the placement table, for the report
            self.timeline.mark("placement", spec.namespace, pods=placement.records(placed))
        self.shoots.append(Shoot(seed, spec, placed))
        return self.shoots[-1]

    def remove_all(self) -> None:
        from harness.reference.deploy import undeploy

        for shoot in self.shoots:  # views that hold connections (port-forwards) let go of them
            for view in shoot.etcds.values():
                getattr(view, "close", lambda: None)()
        try:
            while self.deployed:
                seed, namespace = self.deployed.pop()
                undeploy(seed, namespace, self.config.timeouts.deploy, wait_namespace=False)
        finally:
            while self.started:
                self.started.pop()()


class Probes:
    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.running: list[Any] = []
        self.histories: list[ProbeHistory] = []
        self.records: list[dict[str, Any]] = []  # what probes without a history kept (a load balancer's reads)

    def start(self, etcd: EtcdCluster, via_zone: str, interval: float, value_size: int = 0,
              timeout: float | None = None) -> AvailabilityProbe:
        return self.add(AvailabilityProbe(etcd, self.timeline, via_zone, interval, value_size, timeout).start())

    def add(self, probe: Any) -> Any:
        """Keep a started probe (anything with stop() -> a history, a record for the run's file,
        or None when its samples are timeline events) until the scenario ends."""
        self.running.append(probe)
        return probe

    def stop_all(self) -> None:
        while self.running:
            history = self.running.pop().stop()
            if isinstance(history, dict):
                self.records.append(history)
            elif history is not None:
                self.histories.append(history)


class Loads:
    """Load runs a scenario started (locust, in client zones); stopped at its teardown, their
    statistics on the timeline and their histories kept with the run's output. Runs that watch
    are stopped behind one fence write, once every run's writers have stopped."""

    def __init__(self, directory: Path, timeline: Timeline) -> None:
        self.directory, self.timeline = directory, timeline
        self.runs: list[Any] = []
        self.fence_writer: Callable[[str, str], int] | None = None
        self.fence: dict[str, Any] | None = None

    def start(self, spec: Any, netns: str | None, fence: Callable[[str, str], int] | None = None) -> Any:
        """Start a run; `fence(key, value) -> revision` writes the fence its watchers are judged by."""
        from harness.load.runner import LoadRun

        workdir = self.directory / f"load-{len(self.runs)}"
        shutil.rmtree(workdir, ignore_errors=True)  # an earlier run of the same scenario
        run = LoadRun(spec, netns, workdir, self.timeline).start()
        self.runs.append(run)
        self.fence_writer = fence or self.fence_writer
        run.wait_started()
        return run

    def stop_all(self) -> list[dict[str, Any]]:
        from harness.load.runner import stop_behind_fence

        for run in self.runs:
            run.stop_writers()
        if self.fence is None and self.fence_writer is not None and any(r.watch_proc for r in self.runs):
            self.fence = stop_behind_fence(self.runs, self.fence_writer)
        return [run.finish() for run in self.runs]
