"""The local cloud's reconciler: what the AWS API says, applied to the local region.

    python -m harness.providers.local.reconciler --state-dir=DIR --data-dir=DIR --region=NAME

It reads the VPC's network ACLs and instances with the harness's admin credentials at once when
the cloud answered a request that may change them (the cloud touches a file then,
cloud/server.py's mark_changes; looked at every WATCH s), every `interval` seconds for `busy_for`
seconds after that, and every `idle_interval` seconds otherwise: a change takes effect within
about WATCH s plus a pass, and an idle region's cloud costs little CPU (polled every 0.15 s, moto
alone took a third of a core). Then it
- makes the router's `cloud_acl` table the translation of each zone subnet's current ACL
  (cloud/acl.py's acl_ruleset), replaced in one nft transaction, only when it changes;
- kills the node of an instance that is stopping, stopped or terminated (the region's node-kill
  effect), and brings it back when the instance runs again, if it was the reconciler that killed it;
- runs an HAProxy for each classic ELB, its servers following the ELB's instances (cloud_elb).

Its memory (the ruleset it applied, the nodes it killed) lives in the status file, so a restarted
reconciler neither applies twice nor forgets a node it has to bring back. Errors (moto away, nft
failing) are logged and retried on the next pass; the loop never stops for them. It exits when
told to (SIGTERM) or when the region's state file is gone (the region was taken down).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import netns
from harness.aws.errors import aws_call
from harness.aws.nacl import AclEntry
from harness.config import Config, RegionSpec, Timeouts
from harness.kube import loadbalancer
from harness.processes import ProcessRecord
from harness.providers.local import effects
from harness.providers.local.cloud import elb as cloud_elb
from harness.providers.local.cloud.account import changed_path, cloud_access, status_path, workdir
from harness.providers.local.cloud.acl import TABLE, SubnetAcl, acl_ruleset, chain_rules
from harness.providers.local.region import LocalEnvironment
from harness.providers.state import read_state, state_path
from harness.files import replace_text

# An instance in one of these is a machine that is off: its node runs nothing.
DOWN_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})
WATCH = 0.05
log = logging.getLogger("cloud-reconciler")


@dataclass
class Status:
    """The reconciler's memory and what a test or benchmark observes (the status file)."""

    pid: int = 0
    ready_at: float | None = None  # wall time of this process's first complete pass
    ruleset: str | None = None  # sha256 of the nft script last applied
    acls: dict[str, dict[str, Any]] = field(default_factory=dict)  # zone -> acl_id, digest, applied_at
    killed: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> fail_node data, killed_at
    error: str | None = None  # the last pass's error, None once a pass succeeds again
    # ELB name -> its HAProxy (cloud_elb): index, address, shape, record, registered nodes,
    # started_at, changed_at (its instances last applied), restarts
    elbs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Status:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls()
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def save(self, path: Path) -> None:
        replace_text(path, json.dumps(asdict(self), indent=1), 0o644)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class Reconciler:
    def __init__(self, env: LocalEnvironment) -> None:
        self.env = env
        record = env.state["cloud"]
        access = cloud_access(env.state)
        if access is None:
            raise SystemExit(f"region {env.spec.name!r} has no populated local cloud in its state file")
        self.vpc_id = access.vpc_id
        self.subnets: dict[str, str] = record["subnets"]
        self.instances: dict[str, str] = record["instances"]
        self.ec2 = access.client("ec2", attempts=1)
        self.elb = access.client("elb", attempts=1)
        self.path = status_path(env.config, env.spec.name)
        self.status = Status.load(self.path)
        self.status.pid, self.status.ready_at = os.getpid(), None
        # Trust the remembered ruleset only if the table is still there (a router rebuilt has none).
        listed = netns.ns_run(env.names.router, ["nft", "list", "tables"], check=False)
        if f"table ip {TABLE}" not in listed:
            self.status.ruleset = None

    def save(self) -> None:
        self.status.save(self.path)

    # -- one pass ------------------------------------------------------------
    def tick(self) -> None:
        with aws_call(f"reading the network ACLs of {self.vpc_id}"):
            acls = [a for page in self.ec2.get_paginator("describe_network_acls").paginate(
                Filters=[{"Name": "vpc-id", "Values": [self.vpc_id]}]) for a in page["NetworkAcls"]]
        self.apply_acls(acls)
        with aws_call(f"reading the instances of {self.vpc_id}"):
            found = [i for page in self.ec2.get_paginator("describe_instances").paginate(
                Filters=[{"Name": "vpc-id", "Values": [self.vpc_id]}])
                for r in page["Reservations"] for i in r["Instances"]]
        # A node may have been given a new instance (cloud.replace_instance) since the last pass.
        self.instances = (self.env.refresh().get("cloud") or {}).get("instances", self.instances)
        self.apply_instances({i["InstanceId"]: i["State"]["Name"] for i in found})
        with aws_call("reading the load balancers"):
            elbs = [d for page in self.elb.get_paginator("describe_load_balancers").paginate()
                    for d in page["LoadBalancerDescriptions"]]
        self.apply_load_balancers(elbs)

    def apply_acls(self, acls: Sequence[dict[str, Any]]) -> None:
        by_subnet = {a["SubnetId"]: acl for acl in acls for a in acl.get("Associations") or ()}
        wanted = []
        for zone, subnet_id in self.subnets.items():
            acl = by_subnet.get(subnet_id)
            entries = tuple(AclEntry.from_aws(e) for e in (acl or {}).get("Entries") or ())
            wanted.append(SubnetAcl(zone, self.env.names.subnet(zone), acl["NetworkAclId"] if acl else None, entries))
        script = acl_ruleset(wanted)
        digest = _digest(script)
        if digest == self.status.ruleset:
            return
        netns.nft(self.env.names.router, script, self.env.config.timeouts.command)
        now = time.time()
        for s in wanted:
            rules = [chain_rules(s, egress) for egress in (True, False)] if s.acl_id else []
            zone_digest = _digest(json.dumps([s.acl_id, s.cidr, rules]))
            if (self.status.acls.get(s.zone) or {}).get("digest") != zone_digest:
                self.status.acls[s.zone] = {"acl_id": s.acl_id, "digest": zone_digest, "applied_at": now}
                words = "; ".join(f"{'out' if e.egress else 'in'} {e.words()}" for e in s.entries) or "no entry"
                log.info("%s: network ACL %s applied to %s (%s)", s.zone, s.acl_id or "(none: unfiltered)", s.cidr, words)
        self.status.ruleset = digest
        self.save()

    def apply_instances(self, states: dict[str, str]) -> None:
        for node, instance_id in self.instances.items():
            state = states.get(instance_id)
            if state is None:
                # Not listed (an API that lost its data?): no evidence the machine is off, so leave it.
                continue
            if state in DOWN_STATES:
                if node not in self.status.killed:
                    member = self.env.member_on(node)
                    # What restore_node needs, remembered before the kill: a restarted reconciler
                    # then finishes the kill, and never forgets to bring the node back.
                    self.status.killed[node] = {"instance_id": instance_id, "state": state, "killed_at": time.time(),
                                                "data": {"mode": "kill", "member": member.name if member else None}}
                    self.save()
                    self._kill(node, f"instance {instance_id} is {state}")
                elif netns.netns_pids(self.env.names.node_ns(node)):
                    # A kill a crashed reconciler left half done, or the node started again by hand.
                    self._kill(node, f"instance {instance_id} is still {state} but its node runs processes")
            elif state == "running" and node in self.status.killed:
                self.env.refresh()
                effects.restore_node(self.env, node, self.status.killed[node]["data"])
                del self.status.killed[node]
                self.save()
                log.info("%s: instance %s runs again: node restored", node, instance_id)

    def apply_load_balancers(self, descriptions: Sequence[dict[str, Any]]) -> None:
        """Each classic ELB a real HAProxy (cloud_elb): started when it appears, restarted when its
        listeners or health check change, its servers following its instances, stopped when it
        is deleted."""
        by_instance = {i: node for node, i in self.instances.items()}
        servers = {node.name: node.address for node in self.env.nodes}
        seen = set()
        for d in descriptions:
            name, shape = d["LoadBalancerName"], cloud_elb.ElbShape.of(d)
            if not shape.listeners:
                continue
            seen.add(name)
            elb = self.status.elbs.get(name)
            restarts = 0
            kept = _plain(asdict(shape))  # as the status file holds it (lists, not tuples)
            if elb is not None and (elb["shape"] != kept or not ProcessRecord.from_dict(elb["record"]).alive()):
                why = "its haproxy exited" if elb["shape"] == kept else "its listeners or health check changed"
                self._stop_elb(name, why)
                restarts, elb = elb["restarts"] + 1, None
            if elb is None:
                elb = self._start_elb(name, shape, servers, restarts)
            wanted = sorted({by_instance[i["InstanceId"]] for i in d.get("Instances") or ()
                             if i["InstanceId"] in by_instance})
            if wanted != elb["registered"]:
                added = [n for n in wanted if n not in elb["registered"]]
                removed = [n for n in elb["registered"] if n not in wanted]
                cloud_elb.set_registered(elb["record"], shape, added, removed)
                elb.update(registered=wanted, changed_at=time.time())
                self.save()
                log.info("load balancer %s: registered %s, deregistered %s", name, added or "-", removed or "-")
        for name in [n for n in self.status.elbs if n not in seen]:
            self._stop_elb(name, "it was deleted")

    def _start_elb(self, name: str, shape: cloud_elb.ElbShape, servers: dict[str, str], restarts: int) -> dict[str, Any]:
        from harness.providers.local.seed.kubernetes import LB_BRIDGE, LB_SUBNET

        taken = {e["index"] for e in self.status.elbs.values()}
        index = min(i for i in range(len(taken) + 1) if i not in taken)
        prefix = f"{self.env.spec.subnet_prefix}.{LB_SUBNET}"
        address = f"{prefix}.{cloud_elb.FIRST_HOST + index}"
        record = cloud_elb.start(
            index, address, shape, servers, netns=f"{self.env.names.prefix}-elb{index}", router=self.env.names.router,
            bridge=LB_BRIDGE, gateway=f"{prefix}.1", workdir=self.path.parent / "elb" / str(index))
        elb = {"index": index, "address": address, "shape": _plain(asdict(shape)), "record": record, "registered": [],
               "started_at": time.time(), "changed_at": None, "restarts": restarts}
        self.status.elbs[name] = elb
        self.save()
        log.info("load balancer %s: haproxy %d on %s, listeners %s", name, record["pid"], address, shape.listeners)
        return elb

    def _stop_elb(self, name: str, why: str) -> None:
        loadbalancer.stop(self.status.elbs.pop(name)["record"])
        self.save()
        log.info("load balancer %s: haproxy stopped: %s", name, why)

    def _kill(self, node: str, why: str) -> None:
        self.env.refresh()
        effects.fail_node(self.env, node, "kill")
        log.info("%s: %s: node killed", node, why)

    # -- the loop --------------------------------------------------------------
    def run(self, interval: float, stop: threading.Event, idle_interval: float | None = None,
            busy_for: float = 10.0) -> None:
        idle_interval = interval if idle_interval is None else idle_interval
        log.info("reconciling region %s with VPC %s every %.2fs for %.0fs after a change, every %.2fs otherwise",
                 self.env.spec.name, self.vpc_id, interval, busy_for, idle_interval)
        changed = changed_path(workdir(self.env.config, self.env.spec.name))
        seen, busy_until = _mtime(changed), 0.0
        while not stop.is_set():
            if not self.env.path.exists():
                log.info("the region's state file is gone: the region was taken down; exiting")
                return
            started = time.monotonic()
            try:
                self.tick()
            except Exception as exc:  # noqa: BLE001 - logged and retried: the loop must outlive moto hiccups
                message = f"{type(exc).__name__}: {exc}"
                if message != self.status.error:
                    log.warning("pass failed (retrying): %s", message)
                    self.status.error = message
                    self.save()
            else:
                if self.status.error is not None or self.status.ready_at is None:
                    if self.status.error is not None:
                        log.info("passes succeed again")
                    self.status.error = None
                    self.status.ready_at = self.status.ready_at or time.time()
                    self.save()
            _reap_children()
            pace = interval if time.monotonic() < busy_until else idle_interval
            while not stop.wait(min(WATCH, max(0.0, started + pace - time.monotonic()))):
                now = _mtime(changed)
                if now != seen:  # a pass at once: this change may have come after the last pass read
                    seen, busy_until = now, time.monotonic() + busy_for
                    break
                if time.monotonic() >= started + pace:
                    break
        log.info("stopped")


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _reap_children() -> None:
    """Members this process restarted are its children: collect them when they die (a later kill)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Apply the local cloud's network ACLs and instance states to the region.")
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--region", required=True)
    ap.add_argument("--interval", type=float, default=0.15, help="seconds between passes after a change")
    ap.add_argument("--idle-interval", type=float, default=2.0, help="seconds between passes otherwise")
    ap.add_argument("--command-timeout", type=float, default=Timeouts.command)
    args = ap.parse_args(argv)
    for name in ("interval", "idle_interval"):
        if not 0.01 <= getattr(args, name) <= 60:
            ap.error(f"--{name.replace('_', '-')} must be between 0.01 and 60 seconds, got {getattr(args, name)}")
    config = Config(region=RegionSpec(name=args.region), state_dir=args.state_dir, data_dir=args.data_dir,
                    timeouts=Timeouts(command=args.command_timeout))
    state = read_state(state_path(config.state_dir, args.region))
    if state is None or not state.get("cloud"):
        raise SystemExit(f"region {args.region!r} has no local cloud in {config.state_dir}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    Reconciler(LocalEnvironment(config, state)).run(args.interval, stop, args.idle_interval)


if __name__ == "__main__":
    main()
