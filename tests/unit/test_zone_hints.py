"""The load balancer's Given waits for the zone hints kube-proxy needs before PreferSameZone holds."""

from __future__ import annotations

from kubernetes.client import (V1EndpointConditions, V1EndpointHints, V1EndpointSlice, V1ForZone, V1ObjectMeta)
from kubernetes.client import V1Endpoint

from harness.steps.load_balancers import hinted_zones


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
