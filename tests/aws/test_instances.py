"""EC2 node failure against moto's EC2 API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_support import Aws, Keys, World, allow, deny, unique

from harness.aws.instances import fail_instance, heal_instance
from harness.errors import ConfigError, FaultError


@pytest.fixture
def ec2(aws: Aws, operator: Keys) -> Any:
    return aws.client("ec2", operator)


def state(ec2: Any, instance_id: str) -> str:
    return str(ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]["Name"])


def harness_tags(ec2: Any, instance_id: str) -> dict[str, str]:
    tags = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0].get("Tags", [])
    return {t["Key"]: t["Value"] for t in tags if t["Key"].startswith("ha-harness/") and t["Key"] != "ha-harness/chaos"}


def test_stop_then_heal_starts_it_again(ec2: Any, world: World) -> None:
    node = world.instances["b"]
    run_id = unique("stop")
    ledger: list[dict[str, Any]] = []

    data = fail_instance(ec2, node, "stop", run_id, ledger.append)

    assert state(ec2, node) in ("stopping", "stopped")
    assert ledger[0]["state"] == "planned" and data["state"] == "applied" and data["zone"] == "eu-west-1b"
    assert json.loads(json.dumps(data)) == data
    assert harness_tags(ec2, node) == {"ha-harness/run": run_id, "ha-harness/fault": "instance-stop",
                                       "ha-harness/state-before": "running"}
    assert fail_instance(ec2, node, "stop", run_id)["state_before"] == "running"  # again: nothing more

    said = heal_instance(ec2, data, interval=0.1)

    assert said[0].startswith(f"{node}: started again")
    assert state(ec2, node) in ("pending", "running")
    assert harness_tags(ec2, node) == {}
    assert heal_instance(ec2, data) == [f"{node}: already {state(ec2, node)}"]


def test_heal_by_run_id_alone_finds_the_stopped_instance(ec2: Any, world: World) -> None:
    node = world.instances["c"]
    run_id = unique("stop-id")
    fail_instance(ec2, node, "stop", run_id)

    said = heal_instance(ec2, run_id, interval=0.1)

    assert said[0].startswith(f"{node}: started again")
    assert state(ec2, node) in ("pending", "running")
    assert heal_instance(ec2, run_id) == [f"instances of run {run_id}: nothing to heal "
                                          f"(no instance tagged ha-harness/run={run_id})"]


def test_reboot_has_nothing_to_undo(ec2: Any, world: World) -> None:
    node = world.instances["a1"]
    data = fail_instance(ec2, node, "reboot", unique("reboot"))
    assert heal_instance(ec2, data) == [f"{node}: rebooted; nothing to undo"]
    assert state(ec2, node) == "running" and harness_tags(ec2, node) == {}


def test_terminate_cannot_be_undone_and_heal_says_so(ec2: Any, world: World) -> None:
    node = world.instances["c"]
    run_id = unique("terminate")

    data = fail_instance(ec2, node, "terminate", run_id)

    assert state(ec2, node) in ("shutting-down", "terminated")
    said = heal_instance(ec2, run_id)
    assert said[0].startswith(f"{node}: terminated; that cannot be undone (replacing the machine is the machine "
                              "controller's job)")
    assert heal_instance(ec2, data)[0].startswith(f"{node}: terminated; that cannot be undone")


def test_only_opted_in_running_instances_are_failed(ec2: Any, world: World) -> None:
    bystander = world.instances["a3"]
    with pytest.raises(FaultError, match=rf"refusing to stop {bystander}: not opted in: no tag "
                                         r"ha-harness/chaos=allowed; nothing was changed"):
        fail_instance(ec2, bystander, "stop", unique("no"))
    assert state(ec2, bystander) == "running" and harness_tags(ec2, bystander) == {}

    data = fail_instance(ec2, bystander, "stop", unique("listed"), opted_in=[bystander])
    heal_instance(ec2, data, interval=0.1)

    node = world.instances["b"]
    ec2.stop_instances(InstanceIds=[node])
    with pytest.raises(FaultError, match=rf"refusing to stop {node}: it is (stopping|stopped), not running"):
        fail_instance(ec2, node, "stop", unique("down"))
    with pytest.raises(ConfigError, match="unknown instance failure mode 'melt'"):
        fail_instance(ec2, node, "melt", unique("melt"))  # type: ignore[arg-type]


def test_a_planned_record_without_the_stop_heals_to_nothing(ec2: Any, world: World) -> None:
    node = world.instances["a1"]
    planned = {"kind": "aws-instance", "run_id": unique("never"), "instance_id": node, "mode": "stop",
               "state_before": "running", "state": "planned"}
    assert heal_instance(ec2, planned) == [f"{node}: the stop never happened; nothing to heal"]
    assert state(ec2, node) == "running"


def test_a_denied_stop_is_rolled_back(aws: Aws, world: World) -> None:
    keys = aws.user(unique("no-stop"), allow("ec2:*"), deny("ec2:StopInstances"))
    node = world.instances["b"]
    ec2 = aws.client("ec2", keys)

    with pytest.raises(FaultError, match=rf"AWS denied stopping {node} \(AccessDenied: .*ec2:StopInstances\).*; "
                                         r"rolled back: its ha-harness tags were removed, nothing else was changed"):
        fail_instance(ec2, node, "stop", unique("denied"))

    assert state(ec2, node) == "running" and harness_tags(ec2, node) == {}
