"""Machine-API probe: can the machine controller still create and delete machines?

With the machine controller's credentials (an EC2 client the caller builds from them), a thread
runs one small instance in a zone's subnet and terminates it again every `interval` seconds. Each
call becomes a sample ``{kind: "create"|"delete", start, end, ok, error, ...}`` stamped with the
caller's clock (the harness passes its timeline's ``now``); a denied call is ``ok: False`` with
AWS's error code (AccessDenied, UnauthorizedOperation). A probe observes, it never asserts.

Every instance it creates is tagged ``ha-harness/run`` and ``ha-harness/probe=machine``; one it
could not delete is retried every cycle and at `stop()` (with `cleanup_ec2`, the harness's own
client, when the controller's credentials are still revoked); `cleanup_probe_instances` finds
leftovers of a crashed run by those tags.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal

from botocore.exceptions import BotoCoreError, ClientError

from harness.aws.errors import aws_call, error_code
from harness.aws.tags import TAG_RUN, check_run_id, tag_list
from harness.errors import HarnessError

TAG_PROBE = "ha-harness/probe"
PROBE = "machine"


@dataclass(frozen=True)
class MachineSample:
    kind: Literal["create", "delete"]
    start: float
    end: float
    ok: bool
    error: str | None = None  # AWS's error code (or the exception's type when AWS was not reached)
    message: str | None = None
    instance_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class MachineApiProbe:
    """Create-and-delete cycles against the EC2 API with the machine controller's client."""

    def __init__(
        self,
        ec2: Any,
        subnet_id: str,
        image_id: str,
        *,
        run_id: str,
        clock: Callable[[], float],
        interval: float = 10.0,
        instance_type: str = "t3.micro",
        cleanup_ec2: Any | None = None,
        keep_one: bool = False,
    ) -> None:
        self.ec2 = ec2
        self.subnet_id = subnet_id
        self.image_id = image_id
        self.run_id = check_run_id(run_id)
        self.clock = clock
        self.interval = interval
        self.instance_type = instance_type
        self.cleanup_ec2 = cleanup_ec2
        self.keep_one = keep_one
        self._samples: list[MachineSample] = []
        self._undeleted: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def samples(self) -> list[dict[str, Any]]:
        with self._lock:
            return [s.to_dict() for s in self._samples]

    @property
    def undeleted(self) -> list[str]:
        """Instances it created and could not delete yet."""
        with self._lock:
            return list(self._undeleted)

    def cycle(self) -> None:
        """One round: retry earlier deletes, create one instance, delete it.

        With `keep_one`, the round creates one instance and deletes those before it: one machine
        always stands, so a deletion is tried (and observed) even while creation fails.
        """
        if not self.keep_one:
            for instance_id in self.undeleted:
                self._delete(instance_id)
        start = self.clock()
        try:
            answer = self.ec2.run_instances(
                ImageId=self.image_id, InstanceType=self.instance_type, MinCount=1, MaxCount=1,
                SubnetId=self.subnet_id, TagSpecifications=[{"ResourceType": "instance", "Tags": tag_list(
                    {TAG_RUN: self.run_id, TAG_PROBE: PROBE, "Name": f"ha-harness-machine-probe-{self.run_id}"})}])
        except Exception as exc:  # a sample of failure, whatever it was
            self._add(MachineSample("create", start, self.clock(), False, *_error(exc)))
            if self.keep_one:
                for instance_id in self.undeleted:
                    self._delete(instance_id)
            return
        instance_id = answer["Instances"][0]["InstanceId"]
        older = self.undeleted
        with self._lock:
            self._undeleted.append(instance_id)
        self._add(MachineSample("create", start, self.clock(), True, instance_id=instance_id))
        for old in older if self.keep_one else [instance_id]:
            self._delete(old)

    def start(self) -> MachineApiProbe:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name=f"machine-probe-{self.run_id}", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 60.0) -> list[str]:
        """Stop the thread and delete what it left; returns what the cleanup did."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        return self.cleanup()

    def cleanup(self) -> list[str]:
        said = []
        for instance_id in self.undeleted:
            if self._delete(instance_id, sample=False):
                said.append(f"{instance_id}: terminated with the machine controller's credentials")
                continue
            if self.cleanup_ec2 is not None:
                try:
                    with aws_call(f"terminating the probe's instance {instance_id}"):
                        self.cleanup_ec2.terminate_instances(InstanceIds=[instance_id])
                    with self._lock:
                        self._undeleted.remove(instance_id)
                    said.append(f"{instance_id}: terminated with the harness's credentials")
                    continue
                except HarnessError as exc:
                    said.append(f"{instance_id}: left running ({exc}); cleanup_probe_instances with run id "
                                f"{self.run_id} removes it")
                    continue
            said.append(f"{instance_id}: left running (the machine controller may not delete it); "
                        f"cleanup_probe_instances with run id {self.run_id} removes it")
        return said

    def __enter__(self) -> MachineApiProbe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.cycle()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def _delete(self, instance_id: str, sample: bool = True) -> bool:
        start = self.clock()
        try:
            self.ec2.terminate_instances(InstanceIds=[instance_id])
        except Exception as exc:
            if sample:
                self._add(MachineSample("delete", start, self.clock(), False, *_error(exc), instance_id=instance_id))
            return False
        with self._lock:
            if instance_id in self._undeleted:
                self._undeleted.remove(instance_id)
        if sample:
            self._add(MachineSample("delete", start, self.clock(), True, instance_id=instance_id))
        return True

    def _add(self, sample: MachineSample) -> None:
        with self._lock:
            self._samples.append(sample)


def cleanup_probe_instances(ec2: Any, run_id: str) -> list[str]:
    """Terminate every instance a machine probe of `run_id` left (found by its tags)."""
    run_id = check_run_id(run_id)
    with aws_call(f"finding the machine probe's instances of run {run_id}", "nothing was deleted"):
        pages = ec2.get_paginator("describe_instances").paginate(Filters=[
            {"Name": f"tag:{TAG_RUN}", "Values": [run_id]}, {"Name": f"tag:{TAG_PROBE}", "Values": [PROBE]},
            {"Name": "instance-state-name", "Values": ["pending", "running", "stopping", "stopped"]}])
        ids = [i["InstanceId"] for page in pages for r in page.get("Reservations", []) for i in r.get("Instances", [])]
    if not ids:
        return [f"machine probe of run {run_id}: no instance left"]
    with aws_call(f"terminating the machine probe's instances {', '.join(ids)}"):
        ec2.terminate_instances(InstanceIds=ids)
    return [f"{i}: terminated (left by the machine probe of run {run_id})" for i in ids]


def _error(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, ClientError):
        return error_code(exc) or "Unknown", str(exc.response.get("Error", {}).get("Message") or "")
    if isinstance(exc, BotoCoreError):
        return type(exc).__name__, str(exc)
    return type(exc).__name__, str(exc)
