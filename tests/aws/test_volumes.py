"""An EBS volume lost for good (volume-loss on AWS) against moto's EC2 API: only an opted-in
volume, detached by force from its instance, then deleted; again, nothing more."""

from __future__ import annotations

from typing import Any

import pytest
from aws_support import OPTED_IN, Aws, Keys, World, unique

from harness.aws.volumes import EBS_CSI_DRIVER, check_volume, ebs_volume_id, lose_volume
from harness.errors import FaultError


@pytest.fixture
def ec2(aws: Aws, operator: Keys) -> Any:
    return aws.client("ec2", operator)


def _volume(aws: Aws, opted_in: bool, attach_to: str | None = None) -> str:
    admin = aws.client("ec2")
    tags = [{"Key": "Name", "Value": unique("etcd-data")}] + (OPTED_IN if opted_in else [])
    vid = str(admin.create_volume(AvailabilityZone="eu-west-1b", Size=1,
                                  TagSpecifications=[{"ResourceType": "volume", "Tags": tags}])["VolumeId"])
    if attach_to:
        admin.attach_volume(VolumeId=vid, InstanceId=attach_to, Device="/dev/sdf")
    return vid


def _exists(ec2: Any, vid: str) -> bool:
    return any(v["VolumeId"] == vid for v in ec2.describe_volumes()["Volumes"])


def test_an_attached_opted_in_volume_is_detached_and_deleted(aws: Aws, ec2: Any, world: World) -> None:
    vid = _volume(aws, True, attach_to=world.instances["b"])
    ledger: list[dict[str, Any]] = []

    data = lose_volume(ec2, vid, unique("vol"), ledger.append, interval=0.1)

    assert not _exists(ec2, vid)
    assert ledger[0]["state"] == "planned" and ledger[0]["attached_to"] == [world.instances["b"]]
    assert data["state"] == "deleted" and data["irreversible"] is True and data["zone"] == "eu-west-1b"
    assert lose_volume(ec2, vid, unique("vol"))["state"] == "gone"  # again: nothing more to do


def test_a_volume_that_did_not_opt_in_is_refused_and_left_as_it_was(aws: Aws, ec2: Any, world: World) -> None:
    vid = _volume(aws, False, attach_to=world.instances["c"])

    with pytest.raises(FaultError, match="not opted in.*nothing was changed"):
        check_volume(ec2, vid)
    with pytest.raises(FaultError, match="not opted in"):
        lose_volume(ec2, vid, unique("vol"))

    described = ec2.describe_volumes(VolumeIds=[vid])["Volumes"][0]
    assert described["State"] == "in-use" and described["Attachments"][0]["InstanceId"] == world.instances["c"]
    assert check_volume(ec2, vid, opted_in=[vid])["VolumeId"] == vid  # an explicit allow-list opts it in


def test_only_an_ebs_csi_volume_names_an_ebs_volume() -> None:
    assert ebs_volume_id({"csi_driver": EBS_CSI_DRIVER, "handle": "vol-0abc"}) == "vol-0abc"
    assert ebs_volume_id({"csi_driver": "pd.csi.storage.gke.io", "handle": "projects/x/disks/y"}) is None
    assert ebs_volume_id({"csi_driver": None, "handle": None}) is None
