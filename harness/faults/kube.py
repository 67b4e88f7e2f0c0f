"""Faults through the Kubernetes API of the environment's cluster: pod deletion, node cordon
and drain. They work wherever the environment has a cluster (local seed, existing cluster, kind)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from harness.config import Timeouts
from harness.errors import ConfigError, WaitTimeout
from harness.faults.base import Injection
from harness.kube import cluster
from harness.providers.base import Environment
from harness.wait import wait_for

BIND_SETTLE_S = 1.0  # a scheduling decision made before a cordon is bound well within this


def _no_cluster(env: Environment) -> str | None:
    if env.kube() is None:
        return f"the {env.provider} environment has no Kubernetes cluster running (locally: harness up --kubernetes)"
    return None


class PodDelete:
    """Delete one pod, as a crashed or evicted replica; its controller makes a new one.

    Nothing stays applied, so heal has nothing to undo."""

    kind: ClassVar[str] = "pod-delete"

    def available(self, env: Environment) -> str | None:
        return _no_cluster(env)

    def validate(self, env: Environment, target: str) -> str:
        namespace, _, name = target.partition("/")
        if not namespace or not name:
            raise ConfigError(f"pod-delete needs NAMESPACE/POD, got {target!r}")
        from kubernetes import client as k8s

        with cluster.api_errors(f"looking up pod {target}"):
            try:
                k8s.CoreV1Api(cluster.connect(env.kube())).read_namespaced_pod(name, namespace)  # type: ignore[arg-type]
            except k8s.ApiException as e:
                if e.status == 404:
                    raise ConfigError(f"no pod {name!r} in namespace {namespace!r}") from None
                raise
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        namespace, _, name = target.partition("/")
        cluster.delete_pod(cluster.connect(env.kube()), namespace, name)
        return {}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        pass


class NodeCordon:
    """Mark a node unschedulable (and, with drain, evict its pods through the Eviction API,
    so PodDisruptionBudgets decide what may leave)."""

    kind: ClassVar[str] = "node-cordon"

    def __init__(self, drain: bool = False) -> None:
        self.drain = drain

    def waits_up_to(self, timeouts: Timeouts) -> float:
        """How long inject may retry evictions a PodDisruptionBudget blocks."""
        return timeouts.drain if self.drain else 0.0

    def available(self, env: Environment) -> str | None:
        return _no_cluster(env)

    def validate(self, env: Environment, target: str) -> str:
        names = [n.name for n in cluster.node_views(cluster.connect(env.kube()))]
        if target not in names:
            raise ConfigError(f"unknown node {target!r}; the cluster's nodes: {', '.join(names)}")
        return target

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        api = cluster.connect(env.kube())
        cluster.set_cordon(api, target, True)
        if not self.drain:
            return {}
        evicted: list[str] = []
        blocked: list[str] = []

        def evict_what_is_left() -> list[str]:
            # Listed again on every pass: a pod bound just before the cordon took hold shows up
            # only after the first list, and a drained node must end up empty all the same.
            blocked[:] = []
            for pod in cluster.pods_on(api, target):
                owners = pod.metadata.owner_references or []
                if pod.metadata.deletion_timestamp is not None or any(o.kind == "DaemonSet" for o in owners):
                    continue
                name = f"{pod.metadata.namespace}/{pod.metadata.name}"
                (evicted if cluster.evict(api, pod.metadata.namespace, pod.metadata.name) else blocked).append(name)
            return list(blocked)

        cordoned = time.monotonic()
        try:
            # Until a pass finds nothing left, and not before the cordon is BIND_SETTLE_S old: the
            # scheduler may have chosen this node just before the cordon and bind its pod after a
            # pass that found the node empty (a replacement evicted from the zone's other node).
            wait_for(evict_what_is_left, lambda left: not left and time.monotonic() - cordoned >= BIND_SETTLE_S,
                     f"evictions from {target} that PodDisruptionBudgets refuse", env.config.timeouts.drain, interval=0.5)
        except WaitTimeout:
            pass  # what a PodDisruptionBudget kept is an observation, not a failure of the fault
        return {"evicted": evicted, "blocked_by_pdb": blocked}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        if env.kube() is not None:
            cluster.set_cordon(cluster.connect(env.kube()), target, False)


class NodeDelete:
    """Delete a node object, as the cloud's node lifecycle controller does for a machine that is
    gone (KEP-3458: a deleted node leaves every load balancer's node set). The pod garbage
    collector then removes the node's pods, as on any cluster.

    Heal makes the node again from what it was (labels, annotations, taints, provider ID), recorded
    in the ledger before the delete; its kubelet (kwok's, on the local seed) takes it up again."""

    kind: ClassVar[str] = "node-delete"

    def available(self, env: Environment) -> str | None:
        return _no_cluster(env)

    def validate(self, env: Environment, target: str) -> str:
        return NodeCordon().validate(env, target)

    def plan(self, env: Environment, target: str) -> str:
        return f"delete node {target} (made again from its recorded labels, annotations, taints and provider ID at heal)"

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        from kubernetes import client as k8s

        api = cluster.connect(env.kube())  # type: ignore[arg-type]
        kept = cluster.node_record(api, target)
        ctx.record({"node": kept})  # before the delete: a crash after it still knows what to make again
        with cluster.api_errors(f"deleting node {target}"):
            k8s.CoreV1Api(api).delete_node(target)
        return {"node": kept}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        return None if target in [n.name for n in cluster.node_views(cluster.connect(env.kube()))] else {"deleted": target}

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        if env.kube() is None or "node" not in data:
            return  # nothing was deleted (or no cluster left to make it in)
        cluster.make_node(cluster.connect(env.kube()), data["node"])  # type: ignore[arg-type]
