"""Faults chosen by name from one table, imported lazily.

A new fault is one small class (available / inject / heal) plus one entry here; the
shared behaviour (timeline, health checks, timeout, heal registry, ledger) is in runner.py.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from harness.errors import ConfigError, see_docs
from harness.faults.base import Fault

FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "zone-outage": ("harness.faults.zone:ZoneOutage", {}),
    "node-kill": ("harness.faults.node:NodeFailure", {"mode": "kill"}),
    "node-freeze": ("harness.faults.node:NodeFailure", {"mode": "freeze"}),
    "node-link-down": ("harness.faults.node:NodeFailure", {"mode": "link-down"}),
    "member-kill": ("harness.faults.member:MemberKill", {}),
    "member-pause": ("harness.faults.etcd:MemberPause", {}),
    "member-failpoint": ("harness.faults.etcd:MemberFailpoint", {}),
    "peer-blackhole": ("harness.faults.etcd:PeerBlackhole", {}),
    "member-disk-full": ("harness.faults.etcd:MemberDiskFull", {}),
    "member-power-loss": ("harness.faults.etcd:MemberPowerLoss", {}),
    "volume-loss": ("harness.faults.etcd:VolumeLoss", {}),
    "member-corruption": ("harness.faults.etcd:MemberCorruption", {}),
    "member-value-corruption": ("harness.faults.etcd:MemberValueCorruption", {}),
    "backup-store-outage": ("harness.faults.backup:BackupStoreOutage", {}),
    "resource-manager-down": ("harness.faults.operator:ResourceManagerDown", {}),
    "etcd-druid-down": ("harness.faults.operator:EtcdDruidDown", {}),
    "zone-link-cut": ("harness.faults.link:ZoneLink", {}),
    "zone-link-loss": ("harness.faults.link:ZoneLink", {"needs": "loss_percent"}),
    "zone-link-mtu": ("harness.faults.link:ZoneLink", {"needs": "larger_than"}),
    "zone-link-rate": ("harness.faults.link:ZoneLink", {"needs": "rate_kbytes"}),
    "zone-link-delay": ("harness.faults.link:ZoneLink", {"needs": "delay_ms"}),
    "zone-link-flap": ("harness.faults.flapping:Flapping", {"inner": "zone-link-cut"}),
    "node-flap": ("harness.faults.flapping:Flapping", {"inner": "node-kill"}),
    "host-outage": ("harness.faults.node:HostOutage", {}),
    "pod-delete": ("harness.faults.kube:PodDelete", {}),
    "node-cordon": ("harness.faults.kube:NodeCordon", {}),
    "node-drain": ("harness.faults.kube:NodeCordon", {"drain": True}),
    "node-delete": ("harness.faults.kube:NodeDelete", {}),
    "aws-zone-outage": ("harness.faults.aws:AwsZoneOutage", {}),
    "aws-revoke-credentials": ("harness.faults.aws:AwsRevokeCredentials", {}),
    "aws-instance-stop": ("harness.faults.aws:AwsInstanceFailure", {"mode": "stop"}),
    "aws-instance-terminate": ("harness.faults.aws:AwsInstanceFailure", {"mode": "terminate"}),
    "aws-instance-reboot": ("harness.faults.aws:AwsInstanceFailure", {"mode": "reboot"}),
}


def fault_class(kind: str) -> type:
    """The class registered for `kind`; raises ConfigError naming the accepted kinds."""
    try:
        target = FAULTS[kind][0]
    except KeyError:
        raise ConfigError(f"unknown fault {kind!r}; accepted: {', '.join(sorted(FAULTS))} "
                          f"({see_docs('reference/faults.md')})") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def get_fault(kind: str, **options: Any) -> Fault:
    """The fault `kind`; `options` (e.g. scope="availability-zone") go to its constructor."""
    factory, kwargs = fault_class(kind), FAULTS[kind][1]
    try:
        return factory(**kwargs, **options)  # type: ignore[no-any-return]
    except TypeError:
        takes = [p for p in inspect.signature(factory).parameters if p not in kwargs]
        raise ConfigError(f"fault {kind} takes no option(s) {sorted(options)}; it takes: {', '.join(takes) or 'none'} "
                          f"({see_docs('reference/faults.md')})") from None
