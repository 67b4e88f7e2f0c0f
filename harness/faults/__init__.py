"""Faults chosen by name from one table, imported lazily.

A new fault is one small class (available / inject / heal) plus one entry here; the
shared behaviour (timeline, health checks, timeout, heal registry, ledger) is in runner.py.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.errors import ConfigError
from harness.faults.base import Fault

FAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "zone-outage": ("harness.faults.zone:ZoneOutage", {}),
    "node-kill": ("harness.faults.node:NodeFailure", {"mode": "kill"}),
    "node-freeze": ("harness.faults.node:NodeFailure", {"mode": "freeze"}),
    "node-link-down": ("harness.faults.node:NodeFailure", {"mode": "link-down"}),
    "member-kill": ("harness.faults.member:MemberKill", {}),
    "host-outage": ("harness.faults.node:HostOutage", {}),
    "pod-delete": ("harness.faults.kube:PodDelete", {}),
    "node-cordon": ("harness.faults.kube:NodeCordon", {}),
    "node-drain": ("harness.faults.kube:NodeCordon", {"drain": True}),
}


def get_fault(kind: str) -> Fault:
    try:
        target, kwargs = FAULTS[kind]
    except KeyError:
        raise ConfigError(f"unknown fault {kind!r}; accepted: {', '.join(sorted(FAULTS))}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
