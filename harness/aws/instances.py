"""EC2 node failure: one instance stopped, rebooted or terminated.

Heal starts a stopped instance again (once it has finished stopping); a reboot has nothing to
undo; a termination cannot be undone (replacing the machine is the machine controller's job) and
heal says so. The instance is tagged ``ha-harness/run`` and ``ha-harness/fault`` before the
change, so heal finds it from the run id alone.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Collection, Literal, Mapping

from harness.aws.errors import aws_call, is_not_found
from harness.aws.tags import (
    TAG_FAULT,
    TAG_RUN,
    Record,
    check_run_id,
    no_record,
    not_opted_in,
    snapshot,
    tag_list,
    tag_map,
)
from harness.errors import ConfigError, FaultError, HarnessError

Mode = Literal["stop", "terminate", "reboot"]
MODES: tuple[str, ...] = ("stop", "terminate", "reboot")
KIND = "aws-instance"
TAG_BEFORE = "ha-harness/state-before"
FAULT_PREFIX = "instance-"
# The states each mode accepts: failing an instance that is not up would make heal start what was down.
ACCEPTED = {"stop": ("running",), "reboot": ("running",), "terminate": ("running", "stopped")}


def fail_instance(
    ec2: Any,
    instance_id: str,
    mode: Mode,
    run_id: str,
    record: Record | None = None,
    *,
    opted_in: Collection[str] | None = None,
) -> dict[str, Any]:
    """Stop, reboot or terminate `instance_id`; returns what `heal_instance` needs.

    Only an instance that opted in (tag ha-harness/chaos=allowed, or listed in `opted_in`) and is
    running (stopped too, for terminate) is touched. `record(data)` gets the data before the change.
    Idempotent per run id: failing it again in the same mode changes nothing more.
    """
    run_id = check_run_id(run_id)
    record = record or no_record
    if mode not in MODES:
        raise ConfigError(f"unknown instance failure mode {mode!r}: use one of {', '.join(MODES)}")
    instance = _describe(ec2, instance_id)
    tags = tag_map(instance.get("Tags"))
    reason = not_opted_in(instance_id, tags, opted_in)
    if reason:
        raise FaultError(f"refusing to {mode} {instance_id}: {reason}; nothing was changed")
    state = instance["State"]["Name"]
    fault = FAULT_PREFIX + mode
    if tags.get(TAG_RUN) == run_id and tags.get(TAG_FAULT) == fault:  # this run already did it
        before = tags.get(TAG_BEFORE, "running")
    elif state not in ACCEPTED[mode]:
        raise FaultError(f"refusing to {mode} {instance_id}: it is {state}, not {' or '.join(ACCEPTED[mode])}; "
                         "nothing was changed")
    else:
        before = state
    data: dict[str, Any] = {"kind": KIND, "run_id": run_id, "instance_id": instance_id, "mode": mode,
                            "state_before": before, "zone": instance.get("Placement", {}).get("AvailabilityZone", ""),
                            "state": "planned"}
    record(snapshot(data))
    with aws_call(f"tagging {instance_id} before the {mode}", "nothing was changed"):
        ec2.create_tags(Resources=[instance_id], Tags=tag_list(
            {TAG_RUN: run_id, TAG_FAULT: fault, TAG_BEFORE: before}))
    try:
        if mode == "stop" and state in ("running", "pending"):
            with aws_call(f"stopping {instance_id}"):
                ec2.stop_instances(InstanceIds=[instance_id])
        elif mode == "reboot" and not (tags.get(TAG_RUN) == run_id and tags.get(TAG_FAULT) == fault):
            with aws_call(f"rebooting {instance_id}"):
                ec2.reboot_instances(InstanceIds=[instance_id])
        elif mode == "terminate" and state not in ("shutting-down", "terminated"):
            with aws_call(f"terminating {instance_id}"):
                ec2.terminate_instances(InstanceIds=[instance_id])
    except HarnessError as exc:
        try:
            untag(ec2, instance_id)
        except HarnessError as again:
            raise FaultError(f"{exc}; removing its ha-harness tags failed too: {again}") from exc
        raise FaultError(f"{exc}; rolled back: its ha-harness tags were removed, nothing else was changed") from exc
    data["state"] = "applied"
    record(snapshot(data))
    return snapshot(data)


REACHED = {"stop": ("stopping", "stopped"), "terminate": ("shutting-down", "terminated")}


def state_reached(ec2: Any, data: Mapping[str, Any], mode: str) -> dict[str, Any] | None:
    """EC2's state of the failed instance once it shows the fault (None before); a reboot shows
    no state of its own in EC2's API, so it is taken as done once requested, and says so."""
    instance_id = data.get("instance_id")
    if not instance_id:
        return None
    state = _describe(ec2, instance_id, missing_ok=True)
    name = state["State"]["Name"] if state else "terminated"
    if mode == "reboot":
        return {"instance_state": name, "note": "a reboot has no state in EC2's API; taken as done once requested"}
    return {"instance_state": name} if name in REACHED.get(mode, ()) else None


def heal_instance(
    ec2: Any,
    data_or_run_id: Mapping[str, Any] | str,
    *,
    timeout: float = 300.0,
    interval: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Undo `fail_instance` where it can: start a stopped instance (waiting up to `timeout` for it to
    finish stopping); say that a reboot needs nothing and that a termination cannot be undone.

    Works from fail_instance's data, or the run id alone (instances tagged ha-harness/run). Idempotent.
    """
    if isinstance(data_or_run_id, str):
        run_id = check_run_id(data_or_run_id)
        with aws_call(f"finding the instances failed by run {run_id}", "nothing was healed"):
            pages = ec2.get_paginator("describe_instances").paginate(
                Filters=[{"Name": f"tag:{TAG_RUN}", "Values": [run_id]}])
            found = [i for page in pages for r in page.get("Reservations", []) for i in r.get("Instances", [])]
        items = [{"run_id": run_id, "instance_id": i["InstanceId"],
                  "mode": tag_map(i.get("Tags")).get(TAG_FAULT, "")[len(FAULT_PREFIX):]}
                 for i in found if tag_map(i.get("Tags")).get(TAG_FAULT, "").startswith(FAULT_PREFIX)]
        if not items:
            return [f"instances of run {run_id}: nothing to heal (no instance tagged {TAG_RUN}={run_id})"]
    else:
        items = [dict(data_or_run_id)]
    said: list[str] = []
    failed: list[str] = []
    for item in items:
        try:
            said.append(_heal_one(ec2, item, timeout, interval, sleep))
        except HarnessError as exc:
            failed.append(str(exc))
    if failed:
        raise FaultError(f"instance heal is incomplete: {'; '.join(failed)}; done: {'; '.join(said) or 'nothing'}")
    return said


def _heal_one(ec2: Any, item: Mapping[str, Any], timeout: float, interval: float,
              sleep: Callable[[float], None]) -> str:
    instance_id = str(item["instance_id"])
    mode = str(item.get("mode", ""))
    run_id = check_run_id(str(item["run_id"]))
    instance = _describe(ec2, instance_id, missing_ok=True)
    if instance is None:
        return f"{instance_id}: no longer exists; nothing to heal"
    tags = tag_map(instance.get("Tags"))
    state = instance["State"]["Name"]
    if mode == "stop":
        if tags.get(TAG_RUN) != run_id and item.get("state") == "planned":
            result = f"{instance_id}: the stop never happened; nothing to heal"
        elif state in ("terminated", "shutting-down"):
            result = f"{instance_id}: {state} meanwhile; cannot be started again"
        elif state in ("running", "pending"):
            result = f"{instance_id}: already {state}"
        else:
            deadline = time.monotonic() + timeout
            while state == "stopping":
                if time.monotonic() >= deadline:
                    raise FaultError(f"{instance_id} is still stopping after {timeout:.0f}s; heal again later")
                sleep(interval)
                state = _describe(ec2, instance_id)["State"]["Name"]
            with aws_call(f"starting {instance_id} again"):
                ec2.start_instances(InstanceIds=[instance_id])
            result = f"{instance_id}: started again (was {state})"
    elif mode == "reboot":
        result = f"{instance_id}: rebooted; nothing to undo"
    elif mode == "terminate":
        result = (f"{instance_id}: terminated; that cannot be undone (replacing the machine is the machine "
                  f"controller's job); it is {state}")
    else:
        raise ConfigError(f"instance heal data for {instance_id} has unknown mode {mode!r}")
    if tags.get(TAG_RUN) == run_id and state not in ("terminated", "shutting-down"):
        untag(ec2, instance_id)
    return result


def untag(ec2: Any, instance_id: str) -> None:
    with aws_call(f"removing the harness's tags from {instance_id}"):
        ec2.delete_tags(Resources=[instance_id], Tags=[{"Key": TAG_RUN}, {"Key": TAG_FAULT}, {"Key": TAG_BEFORE}])


def _describe(ec2: Any, instance_id: str, missing_ok: bool = False) -> Any:
    try:
        with aws_call(f"describing {instance_id}", "nothing was changed"):
            reservations = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
    except HarnessError as exc:
        if missing_ok and is_not_found(exc.__cause__ or exc):
            return None
        raise
    instances = [i for r in reservations for i in r.get("Instances", [])]
    if not instances:
        if missing_ok:
            return None
        raise ConfigError(f"no EC2 instance {instance_id}")
    return instances[0]
