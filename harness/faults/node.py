"""Node failure (its processes killed and restarted on heal, frozen, or its link down) and
host outage (every node of one physical host killed at once, seed 004's failure domain).

An environment that cannot fail a node itself but lives in an AWS account kills it the cloud's
way: its EC2 instance stopped, and started again on heal (aws-instance, mode stop)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, NodeFailures
from harness.topology import Topology

if TYPE_CHECKING:
    from harness.faults.aws import AwsInstanceFailure


class NodeFailure:
    """A node failing: `node-kill` (SIGKILL of every process in the node's namespace, its member
    and, on the local seed, its kwok and node agent), `node-freeze` (SIGSTOP to each of them, again
    until none runs) or `node-link-down` (its link set down). Target: a node. In effect once no
    process of the node runs, each is stopped, or the link says down; on a cluster with `[aws]`, a
    kill stops the node's EC2 instance. Heal starts, continues or links it again."""

    kind: ClassVar[str] = "node-failure"

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def _cloud(self, env: Environment) -> AwsInstanceFailure | None:
        """The cloud's way, for a kill where the environment has none of its own (boto3 imported
        only then: the CLI runs rootless without it)."""
        if self.mode != "kill" or isinstance(env, NodeFailures):
            return None
        from harness.faults.aws import AwsInstanceFailure

        return AwsInstanceFailure("stop")

    def available(self, env: Environment) -> str | None:
        reason = lacks(env, NodeFailures, "fail nodes")
        if reason is None and self.mode not in env.node_failure_modes:  # type: ignore[attr-defined]
            return f"the {env.provider} provider cannot fail a node by {self.mode}"
        cloud = self._cloud(env)
        if reason is not None and cloud is not None:
            through_aws = cloud.available(env)
            return None if through_aws is None else f"{reason}, and {through_aws}"
        return reason

    def validate(self, env: Environment, target: str) -> str:
        name = env.node(target).name
        cloud = self._cloud(env)
        return cloud.validate(env, name) if cloud is not None else name

    def plan(self, env: Environment, target: str) -> str | None:
        cloud = self._cloud(env)
        return cloud.plan(env, target) if cloud is not None else None

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        cloud = self._cloud(env)
        if cloud is not None:
            return cloud.inject(env, target, ctx)
        assert isinstance(env, NodeFailures)
        return env.fail_node(target, self.mode)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        cloud = self._cloud(env)
        if cloud is not None:
            return cloud.effect(env, target, data)
        assert isinstance(env, NodeFailures)
        return env.node_failure_effect(target, {"mode": self.mode} | data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        cloud = self._cloud(env)
        if cloud is not None:
            return cloud.heal(env, target, data)
        assert isinstance(env, NodeFailures)
        env.restore_node(target, {"mode": self.mode} | data)


class HostOutage:
    """Every node of one physical host killed at once (seed 004's host failure). Target: a host of a
    region brought up with hosts per zone. In effect once no process of any of its nodes runs; heal
    starts every node of the host again."""

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
