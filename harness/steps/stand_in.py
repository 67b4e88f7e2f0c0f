"""The region's etcd where the environment has none of its own (an existing cluster whose seed runs
control planes): the reference control plane's etcd-main, running for real, stands in for it. Also
the reference deployments of a scenario, which make room for themselves by removing the stand-in."""

from __future__ import annotations

from typing import Iterator

import pytest

from harness.config import Config
from harness.errors import CapabilityMissing
from harness.providers.base import EtcdCluster, Environment, ShootEtcds, shoot_etcd
from harness.reference.deploy import deploy, undeploy
from harness.reference.render import ReferenceSpec
from harness.soundness import diverged
from harness.steps.holders import Shoots
from harness.steps.terminal import say
from harness.timeline import Timeline
from harness.topology import Seed


class RegionStandIn:
    """On an environment without an etcd of its own whose seed runs control planes (an existing
    cluster), the features' region is the reference control plane's etcd-main, running for real:
    deployed on first use and shared by the session's scenarios like the local region (checked
    before each, deployed afresh when an earlier scenario left it diverged), removed at the end."""

    NAMESPACE = "shoot--harness--region"

    def __init__(self, pytestconfig: pytest.Config, config: Config) -> None:
        self.pytestconfig, self.config = pytestconfig, config
        self.view: EtcdCluster | None = None
        self.seed: Seed | None = None

    def etcd(self, env: Environment, seed: Seed) -> EtcdCluster:
        if self.view is not None:
            why = diverged(self.view)
            if why is None:
                return self.view
            say(self.pytestconfig, f"[harness] the control plane standing in for the region is not consistent after "
                                   f"the last scenario ({why}); deploying it afresh")
            self.remove()
        say(self.pytestconfig, f"[harness] the {env.provider} environment has no etcd of its own: the region's etcd is "
                               f"etcd-main of the reference control plane in {self.NAMESPACE}, running for real")
        spec = ReferenceSpec("zone", env.zones, "gep20", namespace=self.NAMESPACE, storage_class=seed.storage_class,
                             real=True)
        self.seed = seed
        deploy(seed, spec, self.config.timeouts.deploy)
        view = shoot_etcd(env, seed, self.NAMESPACE, "etcd-main")
        setattr(view, "stands_in_for_region", True)  # a scenario naming the region's members says it cannot run
        self.view = view
        view.wait_healthy()
        return view

    def remove(self) -> None:
        if self.seed is None:
            return
        if self.view is not None:
            getattr(self.view, "close", lambda: None)()  # its port-forwards
        undeploy(self.seed, self.NAMESPACE, self.config.timeouts.deploy)
        self.view = self.seed = None


_STAND_IN = pytest.StashKey[RegionStandIn]()


@pytest.fixture(scope="session")
def region_stand_in(session_env: Environment, pytestconfig: pytest.Config,
                    harness_config: Config) -> Iterator[RegionStandIn]:
    stand_in = pytestconfig.stash[_STAND_IN] = RegionStandIn(pytestconfig, harness_config)
    try:
        yield stand_in
    finally:
        stand_in.remove()


@pytest.fixture
def region_etcd(env: Environment, request: pytest.FixtureRequest) -> EtcdCluster:
    """The features' region etcd: the environment's own, or on an environment without one whose
    seed runs control planes, the reference's etcd-main standing in for it (RegionStandIn)."""
    if env.members and isinstance(env, EtcdCluster):
        return env
    if not isinstance(env, ShootEtcds):
        raise CapabilityMissing(f"the {env.provider} provider has no etcd members the harness can reach")
    return request.getfixturevalue("region_stand_in").etcd(env, request.getfixturevalue("seed"))


@pytest.fixture
def shoots(harness_config: Config, timeline: Timeline, pytestconfig: pytest.Config) -> Iterator[Shoots]:
    """The reference deployments of a scenario, removed at its end."""
    def make_room(spec: ReferenceSpec) -> None:
        stand_in = pytestconfig.stash.get(_STAND_IN, None)
        if spec.real and stand_in is not None and stand_in.view is not None:
            # The local seed gives members fixed addresses and has one load balancer for shoot APIs:
            # one control plane runs for real at a time. The stand-in comes back when next needed.
            say(pytestconfig, f"[harness] removing the control plane standing in for the region: "
                              f"{spec.namespace} runs for real now")
            stand_in.remove()

    s = Shoots(harness_config, timeline, make_room)
    try:
        yield s
    finally:
        s.remove_all()
