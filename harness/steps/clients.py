"""When-steps for other clients: what a client outside the harness's histories does to the same
keys (an operator's script, another controller). The harness's checks must tell its own
acknowledged writes gone, or values it never wrote read back, whoever caused it."""

from __future__ import annotations

import uuid
from typing import Any

from pytest_bdd import parsers, when

from harness.probes.availability import AvailabilityProbe
from harness.providers.base import EtcdCluster
from harness.timeline import Timeline
from harness.steps.holders import Loads


def _client_of(etcd: EtcdCluster, zone: str | None = None) -> Any:
    zone = zone or etcd.zones[0]
    member = next((m for m in etcd.members if m.zone == zone), etcd.members[0])
    return etcd.client(member.name, zone, timeout=5.0)


@when("another client deletes the probe's keys")
def _(etcd: EtcdCluster, probe: AvailabilityProbe, timeline: Timeline) -> None:
    """A client beside the harness removes what the probe wrote: the must-fail suite's way to make
    an acknowledged write go missing."""
    client = _client_of(etcd, probe.via_zone)
    try:
        gone = client.delete_prefix(probe.history.prefix)
    finally:
        client.close()
    timeline.mark("client", "another client deleted the probe's keys", deleted=gone)


@when("another client deletes the load's keys")
def _(etcd: EtcdCluster, loads: Loads, timeline: Timeline) -> None:
    """A client beside the harness removes the load's keys (every prefix the loads wrote)."""
    client = _client_of(etcd)
    try:
        gone = sum(client.delete_prefix(p) for p in sorted({run.spec.key_prefix for run in loads.runs}))
    finally:
        client.close()
    timeline.mark("client", "another client deleted the load's keys", deleted=gone)


@when(parsers.parse("a client the history does not know writes the load's {keys:d} shared keys"))
def _(etcd: EtcdCluster, loads: Loads, timeline: Timeline, keys: int) -> None:
    """A client outside the load's recorded history writes its shared keys: values the history
    cannot explain."""
    prefix = loads.runs[0].spec.key_prefix
    client = _client_of(etcd)
    try:
        for i in range(keys):
            client.put(f"{prefix}shared/{i:04d}", f"unknown-{uuid.uuid4().hex[:8]}-x")
    finally:
        client.close()
    timeline.mark("client", "a client outside the history wrote the load's keys", keys=keys)


@when("another client deletes the shoot API probe's ConfigMaps")
def _(shoot_probe: Any, timeline: Timeline) -> None:
    """The shoot API probe's ConfigMaps removed by another client, through the shoot's API."""
    from harness.probes.shoot_api import NAMESPACE, PROBE_LABEL

    client = shoot_probe.client()
    try:
        client.call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/configmaps"
                              f"?labelSelector={PROBE_LABEL}%3D{shoot_probe.history.prefix[:-1]}")
    finally:
        client.close()
    timeline.mark("client", "another client deleted the shoot API probe's ConfigMaps")
