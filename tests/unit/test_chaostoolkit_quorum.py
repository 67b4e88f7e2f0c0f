"""The chaostoolkit quorum probe asks from the client's zone, so a zone outage shows as members
the client cannot reach; its tolerance judges what that client sees.

A small fake environment stands in for a region: three zones with one member each, and a
network in which a cut-off zone reaches only itself (as the local region's router does).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from harness.chaostoolkit import probes, tolerances
from harness.errors import ConfigError
from harness.etcd_gateway import Status
from harness.topology import Member, Topology

ZONES = ("zone-a", "zone-b", "zone-c")


class FakeRegion(Topology):
    """etcd-0..2 in zone-a..c; `cut` zones reach (and are reached from) only themselves. Members
    keep naming the leader they last knew, as followers cut off from it do until an election."""

    provider = "fake"

    def __init__(self, cut: tuple[str, ...] = (), leader: str = "etcd-0") -> None:
        self.config = SimpleNamespace(timeouts=SimpleNamespace(status_request=1.0))
        self.zones = ZONES
        self.nodes = ()
        self.members = tuple(Member(f"etcd-{i}", f"{z}-1", z, f"http://10.0.{i}.1:2379", f"http://10.0.{i}.1:2380")
                             for i, z in enumerate(ZONES))
        self.cut = cut
        self.leader_name = leader
        self.asked_from: list[str | None] = []

    def faults(self) -> list[dict[str, Any]]:
        return [{"id": f"f{i}", "kind": "zone-outage", "target": z} for i, z in enumerate(self.cut)]

    def _id(self, name: str) -> int:
        return 100 + int(name.rsplit("-", 1)[1])

    def status(self, via_zone: str | None = None) -> dict[str, Status | str]:
        self.asked_from.append(via_zone)
        out: dict[str, Status | str] = {}
        for m in self.members:
            client_zone = via_zone or m.zone
            reachable = client_zone == m.zone or (client_zone not in self.cut and m.zone not in self.cut)
            out[m.name] = (Status(self._id(m.name), self._id(self.leader_name), 2, 10, 10, 10, "3.5.0", 1)
                           if reachable else "timed out")
        return out

    def leader(self) -> str | None:
        return self.leader_name


def test_a_zone_outage_leaves_the_cut_off_member_unreachable_from_the_client() -> None:
    # zone-a (the old leader's) is cut; a new leader, etcd-1, was elected by the other two.
    env = FakeRegion(cut=("zone-a",), leader="etcd-1")
    seen = probes.quorum_from(env)
    assert seen["via_zone"] == "zone-b"  # the first zone no zone fault cut off
    assert seen["healthy"] == ["etcd-1", "etcd-2"]
    assert list(seen["unreachable"]) == ["etcd-0"]
    assert seen["leaders"] == ["etcd-1"]
    assert tolerances.quorum(value=seen)
    assert env.asked_from == ["zone-b"]  # never from each member's own zone


def test_two_zones_down_is_no_quorum_for_the_client() -> None:
    # Asked from each member's own zone, all three answered and named etcd-0: a quorum that was not.
    env = FakeRegion(cut=("zone-a", "zone-b"))
    seen = probes.quorum_from(env)
    assert (seen["via_zone"], seen["healthy"]) == ("zone-c", ["etcd-2"])
    assert not tolerances.quorum(value=seen)


def test_a_client_inside_the_cut_zone_sees_only_its_own_member() -> None:
    seen = probes.quorum_from(FakeRegion(cut=("zone-a",)), "zone-a")
    assert seen["healthy"] == ["etcd-0"]
    assert set(seen["unreachable"]) == {"etcd-1", "etcd-2"}
    assert not tolerances.quorum(value=seen)


def test_follower_asks_from_a_zone_without_the_leader() -> None:
    seen = probes.quorum_from(FakeRegion(leader="etcd-0"), "follower")
    assert seen["via_zone"] == "zone-b"
    assert tolerances.quorum(value=seen)


def test_a_leader_the_client_cannot_reach_is_out_of_tolerance() -> None:
    # Just after zone-a went: etcd-1 and etcd-2 answer but still name etcd-0, which is cut off.
    seen = probes.quorum_from(FakeRegion(cut=("zone-a",), leader="etcd-0"))
    assert seen["healthy"] == ["etcd-1", "etcd-2"] and seen["leaders"] == ["100"]
    assert not tolerances.quorum(value=seen)


def test_unknown_zone_and_every_zone_cut_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown zone 'zone-x'; this environment has zones: zone-a, zone-b, zone-c"):
        probes.quorum_from(FakeRegion(), "zone-x")
    with pytest.raises(ConfigError, match="every zone is cut off"):
        probes.quorum_from(FakeRegion(cut=ZONES))
