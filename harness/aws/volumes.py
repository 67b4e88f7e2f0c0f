"""An EBS volume lost for good: the cloud disk behind an etcd member's PersistentVolume (its CSI
volume handle) detached by force from its instance and deleted, as a failed or deleted disk.

Irreversible: there is no heal, and the data says so. Only a volume that opted in (tag
ha-harness/chaos=allowed, or listed in `opted_in`) is touched; `check_volume` says beforehand
whether it may be, so that a fault refused here changes nothing anywhere else either.
"""

from __future__ import annotations

import time
from typing import Any, Collection

from harness.aws.errors import aws_call, is_not_found
from harness.aws.tags import Record, check_run_id, no_record, not_opted_in, snapshot, tag_map
from harness.errors import FaultError

KIND = "aws-volume-loss"
EBS_CSI_DRIVER = "ebs.csi.aws.com"


def ebs_volume_id(volume: dict[str, Any]) -> str | None:
    """The EBS volume behind a PersistentVolume (harness.kube.volumes.ClaimedVolume as a dict), if any."""
    return volume.get("handle") if volume.get("csi_driver") == EBS_CSI_DRIVER else None


def _describe(ec2: Any, volume_id: str) -> dict[str, Any] | None:
    from botocore.exceptions import ClientError

    with aws_call(f"describing {volume_id}", "nothing was changed"):
        try:
            return dict(ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0])
        except ClientError as e:
            if is_not_found(e):
                return None
            raise


def check_volume(ec2: Any, volume_id: str, opted_in: Collection[str] | None = None) -> dict[str, Any]:
    """The volume as described, if it may be destroyed; FaultError saying why not otherwise."""
    volume = _describe(ec2, volume_id)
    if volume is None:
        raise FaultError(f"no EBS volume {volume_id}; nothing was changed")
    reason = not_opted_in(volume_id, tag_map(volume.get("Tags")), opted_in)
    if reason:
        raise FaultError(f"refusing to delete {volume_id}: {reason}; nothing was changed")
    return dict(volume)


def lose_volume(ec2: Any, volume_id: str, run_id: str, record: Record | None = None, *,
                opted_in: Collection[str] | None = None, timeout: float = 120.0, interval: float = 1.0) -> dict[str, Any]:
    """Detach `volume_id` by force from every instance it is attached to, then delete it. Idempotent:
    a volume already gone is what was asked."""
    run_id = check_run_id(run_id)
    record = record or no_record
    if _describe(ec2, volume_id) is None:
        return {"kind": KIND, "run_id": run_id, "volume_id": volume_id, "state": "gone", "irreversible": True}
    volume = check_volume(ec2, volume_id, opted_in)
    data: dict[str, Any] = {"kind": KIND, "run_id": run_id, "volume_id": volume_id, "irreversible": True,
                            "zone": volume.get("AvailabilityZone", ""), "size_gib": volume.get("Size"),
                            "attached_to": [a["InstanceId"] for a in volume.get("Attachments") or []], "state": "planned"}
    record(snapshot(data))
    for instance in data["attached_to"]:
        with aws_call(f"detaching {volume_id} from {instance}"):
            ec2.detach_volume(VolumeId=volume_id, InstanceId=instance, Force=True)
    deadline = time.monotonic() + timeout
    while data["attached_to"]:
        now = _describe(ec2, volume_id)
        state = now["State"] if now else "gone"
        if state in ("available", "gone"):
            break
        if time.monotonic() > deadline:
            raise FaultError(f"{volume_id} is still {state} {timeout:g} s after its forced detach; it was not deleted")
        time.sleep(interval)
    from botocore.exceptions import ClientError

    with aws_call(f"deleting {volume_id}"):
        try:
            ec2.delete_volume(VolumeId=volume_id)
        except ClientError as e:
            if not is_not_found(e):
                raise
    data["state"] = "deleted"
    record(snapshot(data))
    return snapshot(data)
