"""Node failure (its processes killed and restarted on heal, frozen, or its link down) and
host outage (every node of one physical host killed at once, seed 004's failure domain)."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, NodeFailures, Topology


class NodeFailure:
    kind: ClassVar[str] = "node-failure"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def available(self, env: Environment) -> str | None:
        reason = lacks(env, NodeFailures, "fail nodes")
        if reason is None and self.mode not in env.node_failure_modes:  # type: ignore[attr-defined]
            return f"the {env.provider} provider cannot fail a node by {self.mode}"
        return reason

    def validate(self, env: Environment, target: str) -> str:
        return env.node(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, NodeFailures)
        return env.fail_node(target, self.mode)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, NodeFailures)
        return env.node_failure_effect(target, {"mode": self.mode} | data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, NodeFailures)
        env.restore_node(target, {"mode": self.mode} | data)


class HostOutage:
    kind: ClassVar[str] = "host-outage"

    def available(self, env: Environment) -> str | None:
        reason = NodeFailure("kill").available(env)
        if reason is None and not (isinstance(env, Topology) and env.hosts()):
            return "this environment models no hosts (bring it up with hosts per zone)"
        return reason

    def validate(self, env: Environment, target: str) -> str:
        if not isinstance(env, Topology):
            raise ConfigError(f"the {env.provider} provider models no hosts")
        env.host(target)
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, NodeFailures) and isinstance(env, Topology)
        done: dict[str, Any] = {}
        for node in env.host(target):
            done[node.name] = env.fail_node(node.name, "kill")
        return {"nodes": done}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, NodeFailures)
        seen = {name: env.node_failure_effect(name, node_data) for name, node_data in data.get("nodes", {}).items()}
        return seen if seen and all(seen.values()) else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, NodeFailures) and isinstance(env, Topology)
        # After a half-done inject `data` is empty: restore every node of the host.
        nodes = data.get("nodes") or {n.name: {"mode": "kill"} for n in env.host(target)}
        for name, node_data in nodes.items():
            env.restore_node(name, node_data)
