"""The machine-API probe with the machine controller's own credentials, while they are revoked and after."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_support import Aws, Keys, World, allow, deny, unique

from harness.aws.credentials import restore, revoke
from harness.aws.machines import MachineApiProbe, cleanup_probe_instances
from harness.timeline import Timeline
from harness.wait import wait_for


def probe_instances(ec2: Any, run_id: str) -> dict[str, str]:
    pages = ec2.describe_instances(Filters=[{"Name": "tag:ha-harness/run", "Values": [run_id]},
                                            {"Name": "tag:ha-harness/probe", "Values": ["machine"]}])
    return {i["InstanceId"]: i["State"]["Name"] for r in pages["Reservations"] for i in r["Instances"]}


def test_probe_sees_machines_fail_while_credentials_are_revoked_and_work_after_restore(
        aws: Aws, operator: Keys, world: World) -> None:
    iam, sts, ec2 = aws.client("iam", operator), aws.client("sts", operator), aws.client("ec2", operator)
    timeline = Timeline()
    run_id = unique("probe")
    probe = MachineApiProbe(aws.client("ec2", world.controller_keys), world.subnets["b"], world.image_id,
                            run_id=run_id, clock=timeline.now, interval=0.05, cleanup_ec2=ec2)

    def count(ok: bool, kind: str = "create") -> int:
        return sum(1 for s in probe.samples if s["kind"] == kind and s["ok"] is ok)

    with probe:
        wait_for(lambda: count(True), lambda n: n >= 2, "the probe's first successful creates", 30)
        revoked_at = timeline.now()
        data = revoke(iam, sts, world.controller, "deny-policy", run_id)
        wait_for(lambda: count(False), lambda n: n >= 2, "the probe's failed creates while revoked", 30)
        restored_at = timeline.now()
        restore(iam, data)
        before = count(True)
        wait_for(lambda: count(True), lambda n: n >= before + 2, "the probe's creates after restore", 30)
    samples = probe.samples

    failed = [s for s in samples if not s["ok"]]
    assert failed and {s["error"] for s in failed} == {"AccessDenied"}
    assert all(revoked_at <= s["start"] and s["end"] <= timeline.now() for s in failed)
    assert all("not authorized to perform: ec2:" in s["message"] for s in failed)
    assert any(s["ok"] and s["kind"] == "create" and s["start"] > restored_at for s in samples)
    assert any(s["ok"] and s["kind"] == "delete" and s["start"] > restored_at for s in samples)
    assert all(set(s) == {"kind", "start", "end", "ok", "error", "message", "instance_id"} for s in samples)
    assert all(s["start"] <= s["end"] for s in samples)
    assert set(probe_instances(ec2, run_id).values()) <= {"shutting-down", "terminated"}
    assert probe.undeleted == []
    text = repr(samples)
    assert world.controller_keys.secret not in text and operator.secret not in text


def test_an_instance_the_controller_may_not_delete_is_cleaned_up_with_the_harness_credentials(
        aws: Aws, operator: Keys, world: World) -> None:
    ec2 = aws.client("ec2", operator)
    timeline = Timeline()
    run_id = unique("leftover")
    name = unique("no-delete-controller")
    keys = aws.user(name, allow("ec2:*"), deny("ec2:TerminateInstances"))
    probe = MachineApiProbe(aws.client("ec2", keys), world.subnets["c"], world.image_id, run_id=run_id,
                            clock=timeline.now, interval=60, cleanup_ec2=ec2)

    probe.cycle()

    kinds = [(s["kind"], s["ok"], s["error"]) for s in probe.samples]
    assert kinds == [("create", True, None), ("delete", False, "AccessDenied")]
    (left,) = probe.undeleted
    assert probe_instances(ec2, run_id) == {left: "running"}

    said = probe.stop()

    assert said == [f"{left}: terminated with the harness's credentials"]
    assert set(probe_instances(ec2, run_id).values()) <= {"shutting-down", "terminated"}


def test_cleanup_by_run_id_finds_what_a_crashed_probe_left(aws: Aws, operator: Keys, world: World) -> None:
    ec2 = aws.client("ec2", operator)
    run_id = unique("crashed")
    keys = aws.user(unique("no-delete"), allow("ec2:*"), deny("ec2:TerminateInstances"))
    probe = MachineApiProbe(aws.client("ec2", keys), world.subnets["a1"], world.image_id, run_id=run_id,
                            clock=Timeline().now)
    probe.cycle()
    (left,) = probe.undeleted  # the process "dies" here: no stop()

    assert cleanup_probe_instances(ec2, run_id) == [f"{left}: terminated (left by the machine probe of run {run_id})"]
    assert cleanup_probe_instances(ec2, run_id) == [f"machine probe of run {run_id}: no instance left"]


@pytest.mark.parametrize("interval", [0.05])
def test_probe_samples_are_stamped_with_the_callers_clock(aws: Aws, world: World, interval: float) -> None:
    ticks = iter(range(1000))
    probe = MachineApiProbe(aws.client("ec2", world.controller_keys), world.subnets["b"], world.image_id,
                            run_id=unique("clock"), clock=lambda: float(next(ticks)), interval=interval)
    probe.cycle()
    assert [(s["kind"], s["start"], s["end"]) for s in probe.samples] == [("create", 0.0, 1.0), ("delete", 2.0, 3.0)]


def test_keeping_one_machine_standing_observes_deletes_while_creates_fail(aws: Aws, operator: Keys, world: World) -> None:
    ec2 = aws.client("ec2", operator)
    run_id = unique("standing")
    user = unique("revocable")
    keys = aws.user(user, allow("ec2:*"))
    probe = MachineApiProbe(aws.client("ec2", keys), world.subnets["b"], world.image_id, run_id=run_id,
                            clock=Timeline().now, interval=60, cleanup_ec2=ec2, keep_one=True)
    probe.cycle()
    probe.cycle()
    (standing,) = probe.undeleted
    aws.client("iam", operator).put_user_policy(UserName=user, PolicyName="deny", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [deny("*")]}))
    probe.cycle()

    kinds = [(s["kind"], s["ok"]) for s in probe.samples]
    assert kinds == [("create", True), ("create", True), ("delete", True), ("create", False), ("delete", False)]
    assert probe.undeleted == [standing]
    assert probe.stop() == [f"{standing}: terminated with the harness's credentials"]
