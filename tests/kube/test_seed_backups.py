"""etcd-main on the local seed backed up by etcd-druid's sidecar layout: a backup-restore container
in each member's pod, run by the node agent beside the member; and volume-loss on a seed's pod
(claim and volume deleted with it), after which the agent adds the member back on its new volume."""

from __future__ import annotations

from typing import Iterator

import pytest
from kubernetes import client as k8s

from harness.errors import ConfigError
from harness.faults.runner import FaultRunner
from harness.kube import cluster
from harness.kube.agent import volume_path
from harness.topology import Seed
from harness.providers.local.seed.kubernetes import volumes_root
from harness.providers.local.region import LocalEnvironment, LocalRegion
from harness.providers.local.seed.shoot import ShootEtcd
from harness.reference.deploy import deploy
from harness.reference.render import ReferenceSpec
from harness.timeline import Timeline
from harness.wait import wait_for
from tests.integration.conftest import config_for
from tests.kube.kube_support import processes_mentioning

pytestmark = [pytest.mark.kube, pytest.mark.region]
NS = "shoot--backed-up"


@pytest.fixture(scope="module")
def running() -> Iterator[tuple[LocalEnvironment, Seed]]:
    region = LocalRegion(config_for("sk"))
    region.down()
    env = region.up()
    try:
        seed = region.seed(env)
        spec = ReferenceSpec("zone", env.zones, "gep20", NS, seed.storage_class, real=True, delta_snapshot_period_s=1)
        deploy(seed, spec, 120, env.seed_backup_store())
        yield env, seed
    finally:
        region.down()
        assert processes_mentioning("harness.backup.sidecar") == [], "no backup sidecar left"


def _sidecar_pid(etcd: ShootEtcd, member: str) -> int:
    import json

    node = k8s.CoreV1Api(cluster.connect(etcd.seed.kube)).read_namespaced_pod(member, NS).spec.node_name
    state = json.loads((etcd.config.state_dir / "sk" / "kube" / "agents" / f"agent-{node}.json").read_text())
    return int(next(r for r in state.values() if r["name"] == member)["sidecar"]["pid"])


def test_the_leading_members_sidecar_writes_and_a_killed_one_is_restarted(running: tuple[LocalEnvironment, Seed]) -> None:
    env, seed = running
    etcd = ShootEtcd(env, seed, NS, "etcd-main")
    leader = etcd.leader(etcd.wait_healthy())
    statuses = wait_for(etcd.backup_sidecars, lambda s: all(isinstance(v, dict) for v in s.values())
                        and any(v["last_delta"] for v in s.values() if isinstance(v, dict)),
                        "the sidecars answering, one with a delta snapshot", 30)
    assert [m for m, s in statuses.items() if isinstance(s, dict) and s["leading"]] == [leader]
    client = etcd.client(leader)
    revision = client.put("/backed-up/key", "value")
    wait_for(lambda: etcd.backup_store().latest_revision(), lambda r: r >= revision, f"the store at revision {revision}", 10)

    import os
    import signal

    os.kill(_sidecar_pid(etcd, leader), signal.SIGKILL)
    pod = wait_for(lambda: k8s.CoreV1Api(cluster.connect(seed.kube)).read_namespaced_pod(leader, NS),
                   lambda p: any(c.name == "backup-restore" and c.restart_count == 1 for c in p.status.container_statuses),
                   f"{leader}'s backup-restore restarted", 15)
    assert next(c for c in pod.status.container_statuses if c.name == "etcd").restart_count == 0
    later = client.put("/backed-up/key", "again")
    wait_for(lambda: etcd.backup_store().latest_revision(), lambda r: r >= later, f"the store at revision {later}", 10)
    # Applied again to the running control plane: its backups stay (only a new one starts empty).
    spec = ReferenceSpec("zone", env.zones, "gep20", NS, seed.storage_class, real=True, delta_snapshot_period_s=1)
    deploy(seed, spec, 120, env.seed_backup_store())
    assert etcd.backup_store().latest_revision() >= later


def test_volume_loss_on_a_pod_deletes_its_claim_and_volume_and_the_member_joins_again(
        running: tuple[LocalEnvironment, Seed]) -> None:
    env, seed = running
    core = k8s.CoreV1Api(cluster.connect(seed.kube))
    etcd = ShootEtcd(env, seed, NS, "etcd-main")
    etcd.wait_healthy()
    claim = core.read_namespaced_persistent_volume_claim("etcd-main-etcd-main-2", NS)
    pv = core.read_persistent_volume(claim.spec.volume_name)
    backing = volume_path(volumes_root(env), pv.metadata.name, pv.metadata.uid)
    assert (backing / "etcd-main-2" / "member").is_dir()
    runner = FaultRunner(env, Timeline())

    with pytest.raises(ConfigError, match="no persistent volume claim"):  # refused before anything is deleted
        runner.inject("volume-loss", f"{NS}/{core.list_namespaced_pod(NS, label_selector='app=kubernetes').items[0].metadata.name}")
    active = runner.inject("volume-loss", f"{NS}/etcd-main-2")

    assert active.data["irreversible"] is True and active.data["volumes"][0]["volume"] == pv.metadata.name
    assert not backing.exists()
    new_claim = wait_for(lambda: core.read_namespaced_persistent_volume_claim("etcd-main-etcd-main-2", NS),
                         lambda c: c.spec.volume_name is not None, "the new claim bound", 30)
    assert new_claim.metadata.uid != claim.metadata.uid and new_claim.spec.volume_name != pv.metadata.name
    etcd.wait_healthy(timeout=60)  # removed, added back and caught up, on the new volume
    members = etcd.client("etcd-main-0").members()
    assert sorted(m["name"] for m in members) == ["etcd-main-0", "etcd-main-1", "etcd-main-2"]
    runner.heal(active)  # nothing to undo: the data is gone for good
    assert env.faults() == []


def test_volume_loss_on_a_pod_needs_the_environments_cluster() -> None:
    from harness.faults.etcd import VolumeLoss

    class NoCluster:
        provider = "none"

        def kube(self) -> None:
            return None

    with pytest.raises(ConfigError, match="has no etcd members of its own|NAMESPACE/POD"):
        VolumeLoss().validate(NoCluster(), "ns/pod")  # type: ignore[arg-type]
    assert VolumeLoss().available(NoCluster()) == "the none provider cannot destroy a member's volume (no members, no cluster)"  # type: ignore[arg-type]
