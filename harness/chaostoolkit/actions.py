"""chaostoolkit actions: faults (through the FaultRunner), their recovery, load, and `heal`.

A fault stays applied when its action returns; a later action (`zone_recovery`, ...) or the
experiment's rollback (`heal`) removes it, found in the heal ledger of the region's state file.
Every fault also heals itself after `max_duration` seconds (its watchdog), whatever happens to
`chaos run`. Targets are checked before anything is applied: an unknown zone or node is a
ConfigError that names what is accepted.
"""

from __future__ import annotations

import logging
from typing import Any

from harness.chaostoolkit import loads
from harness.chaostoolkit.context import bounded, environment, positive
from harness.errors import ConfigError
from harness.faults import get_fault
from harness.faults.runner import ActiveFault, FaultRunner, heal_everything
from harness.providers.base import Environment
from harness.timeline import Timeline

__all__ = ["zone_outage", "zone_recovery", "node_failure", "node_recovery", "aws_zone_outage", "aws_zone_recovery",
           "revoke_credentials", "restore_credentials", "load_start", "load_stop", "heal"]

logger = logging.getLogger("chaostoolkit")

NODE_MODES = ("kill", "freeze", "link-down")
AWS_SCOPES = ("all", "availability-zone")
CREDENTIAL_METHODS = ("deny-policy", "deactivate-keys")
DEFAULT_MAX_DURATION = 300.0  # a fault an experiment forgot heals itself after this long


def _leader_member(env: Environment) -> str:
    leader = getattr(env, "leader", None)
    if leader is None:
        raise ConfigError(f"\"leader\" needs etcd members the harness can see; the {env.provider} provider has none: "
                          "name a zone or node")
    name = leader()
    if name is None:
        raise ConfigError("\"leader\": the etcd members agree on no leader right now; name a zone or node")
    return str(name)


def _zone(env: Environment, zone: str) -> str:
    """A zone name, or "leader": the zone of the current etcd leader."""
    if zone == "leader":
        return env.member(_leader_member(env)).zone
    return env.zone(zone)


def _node(env: Environment, node: str) -> str:
    """A node name, or "leader": the node the current etcd leader runs on."""
    if node == "leader":
        return env.member(_leader_member(env)).node
    return env.node(node).name


def _choice(value: str, accepted: tuple[str, ...], what: str) -> str:
    if value not in accepted:
        raise ConfigError(f"unknown {what} {value!r}; accepted: {', '.join(accepted)}")
    return value


def _inject(env: Environment, kind: str, target: str, options: dict[str, Any] | None, max_duration: float) -> dict[str, Any]:
    limit = positive(max_duration, "max_duration", env.config.timeouts.fault_max_duration)
    runner = FaultRunner(env, Timeline())
    t = env.config.timeouts
    # The runner bounds the inject itself; around it the health check before may wait member_ready.
    active = bounded(lambda: runner.inject(kind, target, options, limit), t.fault_apply + t.member_ready + t.drain + 5,
                     f"inject {kind} on {target}")
    logger.info(f"harness: applied {active.id}; it heals itself after {limit:g}s if nothing heals it before")
    return {"id": active.id, "kind": kind, "target": active.target, "max_duration": limit}


def _recover(env: Environment, kinds: tuple[str, ...], target: str | None) -> list[str]:
    """Heal the ledger's faults of these kinds (on `target`, or all of them), through the FaultRunner."""
    entries = [e for e in env.faults() if e["kind"] in kinds and (target is None or e["target"] == target)]
    others = [e for e in env.faults() if e not in entries]
    runner, timeline = FaultRunner(env, Timeline()), Timeline()
    for e in entries:
        fault = get_fault(e["kind"], **(e.get("options") or {}))
        event = timeline.begin("fault", e["kind"], target=e["target"], id=e["id"])
        runner.active.append(ActiveFault(e["id"], e["kind"], e["target"], fault, e.get("data") or {}, event))
    if not entries:
        logger.info(f"harness: no {' or '.join(kinds)} fault{' on ' + target if target else ''} to heal")
        return []
    t = env.config.timeouts
    # With other faults still applied the region is not expected healthy: heal without waiting.
    bounded(lambda: runner.heal(wait=not others), t.heal * len(entries) + t.recovery + 5,
            f"heal {', '.join(e['id'] for e in entries)}")
    return [e["id"] for e in entries]


def zone_outage(zone: str = "leader", max_duration: float = DEFAULT_MAX_DURATION,
                configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Cut `zone` off the network (the router denies all its traffic); "leader": the leader's zone."""
    env = environment(configuration)
    return _inject(env, "zone-outage", _zone(env, zone), None, max_duration)


def zone_recovery(zone: str | None = None, configuration: dict[str, Any] | None = None) -> list[str]:
    """Heal the zone outage of `zone` (default: every zone outage); returns the faults healed."""
    env = environment(configuration)
    return _recover(env, ("zone-outage",), env.zone(zone) if zone else None)


def node_failure(node: str = "leader", mode: str = "kill", max_duration: float = DEFAULT_MAX_DURATION,
                 configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fail a node (`mode`: kill, freeze or link-down); "leader": the node of the etcd leader."""
    _choice(mode, NODE_MODES, "node failure mode")
    env = environment(configuration)
    return _inject(env, f"node-{mode}", _node(env, node), None, max_duration)


def node_recovery(node: str | None = None, configuration: dict[str, Any] | None = None) -> list[str]:
    """Bring failed nodes back (`node`, default: every failed node)."""
    env = environment(configuration)
    return _recover(env, tuple(f"node-{m}" for m in NODE_MODES), env.node(node).name if node else None)


def aws_zone_outage(zone: str = "leader", scope: str = "all", max_duration: float = DEFAULT_MAX_DURATION,
                    configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Swap the zone's subnets onto a deny network ACL (the local cloud, or `[aws]`'s account)."""
    _choice(scope, AWS_SCOPES, "scope")
    env = environment(configuration)
    return _inject(env, "aws-zone-outage", _zone(env, zone), {"scope": scope}, max_duration)


def aws_zone_recovery(zone: str | None = None, configuration: dict[str, Any] | None = None) -> list[str]:
    """Put the zone's subnets back on their own network ACLs (default: every zone)."""
    env = environment(configuration)
    return _recover(env, ("aws-zone-outage",), env.zone(zone) if zone else None)


def revoke_credentials(principal: str = "machine-controller", method: str = "deny-policy",
                       max_duration: float = DEFAULT_MAX_DURATION,
                       configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Revoke a principal's AWS credentials (default: the machine controller's)."""
    _choice(method, CREDENTIAL_METHODS, "revocation method")
    env = environment(configuration)
    return _inject(env, "aws-revoke-credentials", principal, {"method": method}, max_duration)


def restore_credentials(principal: str | None = None, configuration: dict[str, Any] | None = None) -> list[str]:
    """Undo credential revocations (of `principal`, default: all)."""
    env = environment(configuration)
    target = get_fault("aws-revoke-credentials").validate(env, principal) if principal else None
    return _recover(env, ("aws-revoke-credentials",), target)


def load_start(profile: str = "gep-put-leader", max_duration: float = 120.0,
               configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start a named etcd load (harness.load.profiles) from its client zone; it stops by
    `load_stop`, `heal`, the end of `chaos run`, or after `max_duration` seconds."""
    env = environment(configuration)
    limit = positive(max_duration, "max_duration", env.config.timeouts.fault_max_duration)
    return bounded(lambda: loads.start(env, profile, limit), 40.0, f"start load {profile}")


def load_stop(profile: str | None = None, configuration: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Stop the load(s) started by `load_start` (`profile`, default: all); returns locust's figures."""
    env = environment(configuration)
    return bounded(lambda: loads.stop(env, profile), 60.0, "stop load")


def heal(configuration: dict[str, Any] | None = None) -> list[str]:
    """Undo everything: stop loads, heal every ledger entry, sweep, wait until the region is healthy."""
    env = environment(configuration)
    t = env.config.timeouts
    stopped = [f"stopped load {s['profile']}" for s in bounded(lambda: loads.stop(env, None), 60.0, "stop loads")]
    done = bounded(lambda: heal_everything(env), t.heal * max(1, len(env.faults())) + 10, "heal everything")
    bounded(lambda: env.wait_healthy(t.recovery), t.recovery + 5, "the environment healthy after heal")
    logger.info(f"harness: healed: {', '.join(stopped + done) or 'nothing was applied'}")
    return stopped + done
