"""Schedules of faults drawn from a seed: the same seed the same schedule; never more than two
faults at once, never two on one zone, all within the exploration's time."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from harness import explore
from harness.faults import FAULTS
from harness.topology import Member

ZONES = ("zone-a", "zone-b", "zone-c")
ETCD = SimpleNamespace(zones=ZONES, members=tuple(
    Member(f"etcd-{i}", f"{z}-1", z, f"http://10.0.{i}.1:2379", f"http://10.0.{i}.1:2380") for i, z in enumerate(ZONES)))


def test_a_seed_names_one_schedule() -> None:
    assert explore.schedule(7, 120, ETCD) == explore.schedule(7, 120, ETCD)  # type: ignore[arg-type]
    assert explore.schedule(7, 120, ETCD) != explore.schedule(8, 120, ETCD)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(30))
def test_faults_never_share_a_zone_nor_exceed_two_at_once(seed: int) -> None:
    planned = explore.schedule(seed, 300, ETCD)  # type: ignore[arg-type]
    assert planned and all(p.kind in FAULTS for p in planned)
    for p in planned:
        assert 0 < p.at < 300 and 0 < p.seconds and p.at + p.seconds <= 300.01
        meanwhile = [q for q in planned if q is not p and q.at <= p.at < q.at + q.seconds]
        assert len(meanwhile) < explore.MAX_AT_ONCE
        assert not {z for q in meanwhile for z in q.zones} & set(p.zones), (p, meanwhile)


def test_the_catalogue_is_drawn_from_whole() -> None:
    kinds = {p.kind for seed in range(20) for p in explore.schedule(seed, 300, ETCD)}  # type: ignore[arg-type]
    assert kinds == {"zone-outage", "zone-link-cut", "zone-link-loss", "zone-link-delay", "node-kill", "node-freeze",
                     "peer-blackhole", "member-kill"}


def test_the_replay_command_names_seed_and_time() -> None:
    assert explore.replay_command(12, 600) == "harness explore --seed 12 --seconds 600"
    assert explore.replay_command(12, None) == "harness explore --seed 12"
