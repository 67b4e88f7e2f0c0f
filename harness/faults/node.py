"""Node failure: the node's processes are killed (and restarted on heal), frozen, or its link goes down."""

from __future__ import annotations

import signal
from typing import Any, ClassVar

from harness.errors import ConfigError
from harness.providers.local import netns
from harness.providers.local.etcd import signal_pid
from harness.providers.local.region import LocalEnvironment

MODES = ("kill", "freeze", "link-down")


class NodeFailure:
    kind: ClassVar[str] = "node-failure"

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown node failure mode {mode!r}; accepted: {', '.join(MODES)}")
        self.mode = mode

    def available(self, env: LocalEnvironment) -> str | None:
        return None

    def validate(self, env: LocalEnvironment, target: str) -> str:
        return env.node(target).name

    def inject(self, env: LocalEnvironment, target: str) -> dict[str, Any]:
        ns = env.names.node_ns(target)
        member = env.member_on(target)
        data: dict[str, Any] = {"mode": self.mode, "member": member.name if member else None}
        if self.mode == "kill":
            if member is not None:
                env.signal_member(member.name, signal.SIGKILL)
            for pid in netns.netns_pids(ns):
                signal_pid(pid, signal.SIGKILL)
        elif self.mode == "freeze":
            for pid in netns.netns_pids(ns):
                signal_pid(pid, signal.SIGSTOP)
        else:
            netns.run(["ip", "-n", ns, "link", "set", "eth0", "down"], timeout=env.config.timeouts.command)
        return data

    def heal(self, env: LocalEnvironment, target: str, data: dict[str, Any]) -> None:
        ns = env.names.node_ns(target)
        mode = data.get("mode", self.mode)
        if mode == "kill":
            # The node comes back: its member restarts with the data it had.
            if data.get("member"):
                env.start_member(data["member"])
        elif mode == "freeze":
            for pid in netns.netns_pids(ns):
                signal_pid(pid, signal.SIGCONT)
        else:
            zone = env.node(target).zone
            t = env.config.timeouts.command
            netns.run(["ip", "-n", ns, "link", "set", "eth0", "up"], timeout=t)
            # The default route went away with the link.
            netns.run(["ip", "-n", ns, "route", "replace", "default", "via", env.names.gateway(zone)], timeout=t)
