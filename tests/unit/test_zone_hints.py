"""The load balancer's Givens wait until PreferSameZone holds: the zone hints kube-proxy needs, then
connections that each stay in the zone they went through."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes.client import (V1EndpointConditions, V1EndpointHints, V1EndpointSlice, V1ForZone, V1ObjectMeta)
from kubernetes.client import V1Endpoint

from harness.errors import WaitAbandoned, WaitTimeout
from harness.probes.connections import Connection
from harness.steps.load_balancers import held_in_zone, hinted_zones
from harness.timeline import Timeline


def _endpoint(zone: str, ready: bool = True, hints: list[str] | None = None) -> V1Endpoint:
    return V1Endpoint(addresses=["10.0.0.1"], zone=zone, conditions=V1EndpointConditions(ready=ready),
                      hints=None if hints is None else V1EndpointHints(for_zones=[V1ForZone(name=z) for z in hints]))


def _slice(*endpoints: V1Endpoint) -> V1EndpointSlice:
    return V1EndpointSlice(address_type="IPv4", metadata=V1ObjectMeta(name="web-x"), endpoints=list(endpoints))


def test_every_ready_endpoint_hinted_for_its_zone_gives_the_zones() -> None:
    slices = [_slice(_endpoint("zone-b", hints=["zone-b"]), _endpoint("zone-a", hints=["zone-a"])),
              _slice(_endpoint("zone-c", hints=["zone-c"]))]
    assert hinted_zones(slices) == ["zone-a", "zone-b", "zone-c"]


def test_an_endpoint_without_its_hint_yet_is_not_in_effect() -> None:
    assert hinted_zones([_slice(_endpoint("zone-a", hints=["zone-a"]), _endpoint("zone-b"))]) is None
    assert hinted_zones([_slice(_endpoint("zone-a", hints=["zone-a", "zone-b"]))]) is None
    assert hinted_zones([_slice(_endpoint("zone-a", hints=["zone-b"]))]) is None


def test_endpoints_not_ready_are_not_counted() -> None:
    slices = [_slice(_endpoint("zone-a", hints=["zone-a"]), _endpoint("zone-b", ready=False))]
    assert hinted_zones(slices) == ["zone-a"]
    assert hinted_zones([_slice()]) == []


class _Probe:
    """What held_in_zone asks of a ConnectionProbe: its service, its connections, stop()."""

    service = "web"

    def __init__(self, paths: dict[int, tuple[str, str]]) -> None:
        self.paths, self.stopped = paths, False

    def snapshot(self) -> list[Connection]:
        return [Connection(i, 0.0, f"pod-{reached}", "10.0.0.1") for i, (_, reached) in self.paths.items()]

    def stop(self) -> None:
        self.stopped = True


def test_connections_are_opened_again_until_each_stays_in_its_zone_and_the_crossed_ones_are_closed() -> None:
    attempts = [_Probe({0: ("zone-a", "zone-b"), 1: ("zone-b", "zone-b")}), _Probe({0: ("zone-a", "zone-a"),
                                                                                    1: ("zone-b", "zone-b")})]
    opened = iter(attempts)
    timeline = Timeline()
    probe, paths = held_in_zone(lambda: next(opened), lambda p: p.paths, timeline, "lb", 10.0)  # type: ignore[arg-type,return-value]
    assert probe is attempts[1] and not probe.stopped and attempts[0].stopped
    assert paths == {0: ("zone-a", "zone-a"), 1: ("zone-b", "zone-b")}
    marked = [e.data["paths"] for e in timeline.events if e.kind == "connection"]
    assert marked == [{0: ["pod-zone-b", "10.0.0.1", "zone-a", "zone-b"], 1: ["pod-zone-b", "10.0.0.1", "zone-b", "zone-b"]},
                      {0: ["pod-zone-a", "10.0.0.1", "zone-a", "zone-a"], 1: ["pod-zone-b", "10.0.0.1", "zone-b", "zone-b"]}]


def test_connections_that_keep_crossing_zones_time_out_naming_them() -> None:
    with pytest.raises(WaitTimeout, match=r"reach the pod of the zone it went through.*\{0: \('zone-a', 'zone-c'\)\}"):
        held_in_zone(lambda: _Probe({0: ("zone-a", "zone-c")}), lambda p: p.paths, Timeline(), "lb", 1.5)  # type: ignore[arg-type,return-value]


def test_a_connection_that_cannot_be_opened_ends_the_wait_at_once() -> None:
    def refused() -> Any:
        raise ConnectionRefusedError("connection refused")

    began = time.monotonic()
    with pytest.raises(WaitAbandoned, match="ConnectionRefusedError: connection refused"):
        held_in_zone(refused, lambda p: {}, Timeline(), "lb", 30.0)
    assert time.monotonic() - began < 5.0
