"""The backup store: an S3 bucket holding an etcd cluster's full and delta snapshots, named as
etcd-backup-restore names them (`<prefix>/Full-<start>-<end>-<unix time>`, `Incr-...`: the
revisions a snapshot covers and when it was taken), so what a restore needs is read off the listing:
the newest full snapshot and the deltas after it, each starting where the one before ended.

A delta snapshot is the watch events of its revisions, as JSON with a digest of them:
`{"start", "end", "sha256", "events": [{"revision", "type", "key", "value"}]}` (key and value in
base64), so a damaged or cut object is refused rather than replayed.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from harness.errors import EnvironmentStateError

FULL, DELTA = "Full", "Incr"
_NAME = re.compile(r"^(Full|Incr)-(\d{8,})-(\d{8,})-(\d+)$")


@dataclass(frozen=True, order=True)
class SnapshotName:
    """One object of the store: the kind, the first and last revision it covers, when taken."""

    end: int
    start: int
    kind: str
    taken: int  # unix seconds

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.start:08d}-{self.end:08d}-{self.taken}"

    @classmethod
    def parse(cls, name: str) -> SnapshotName | None:
        m = _NAME.match(name)
        return cls(int(m[3]), int(m[2]), m[1], int(m[4])) if m else None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "start": self.start, "end": self.end, "taken": self.taken}


def full_name(revision: int, taken: float | None = None) -> SnapshotName:
    return SnapshotName(revision, 0, FULL, int(taken if taken is not None else time.time()))


def delta_name(start: int, end: int, taken: float | None = None) -> SnapshotName:
    return SnapshotName(end, start, DELTA, int(taken if taken is not None else time.time()))


@dataclass(frozen=True)
class StoreSpec:
    """Where a cluster's backups go: an S3 endpoint, a bucket, a prefix, and the key pair of the
    backup's own user (never the harness's)."""

    endpoint_url: str | None
    region: str
    bucket: str
    prefix: str
    access_key_id: str | None = None
    secret_access_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint_url, "region": self.region, "bucket": self.bucket, "prefix": self.prefix,
                "access_key_id": self.access_key_id, "secret_access_key": self.secret_access_key}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StoreSpec:
        return cls(data.get("endpoint_url"), data["region"], data["bucket"], data["prefix"],
                   data.get("access_key_id"), data.get("secret_access_key"))

    def public(self) -> dict[str, Any]:
        """What may be printed: no secret."""
        return {k: v for k, v in self.to_dict().items() if k != "secret_access_key"}

    def secret_data(self) -> dict[str, str]:
        """The store as etcd-druid's backup Secret of an S3 provider holds it (the prefix is the
        Etcd resource's, so it goes in the sidecar's `--store-prefix`, not here)."""
        data = {"bucketName": self.bucket, "region": self.region, "accessKeyID": self.access_key_id or "",
                "secretAccessKey": self.secret_access_key or "", "s3ForcePathStyle": "true"}
        return data | ({"endpoint": self.endpoint_url} if self.endpoint_url else {})

    @classmethod
    def from_secret(cls, data: Mapping[str, str], prefix: str) -> StoreSpec:
        missing = [k for k in ("bucketName", "region", "accessKeyID", "secretAccessKey") if not data.get(k)]
        if missing:
            raise EnvironmentStateError(f"the backup Secret has no {', '.join(missing)}; it holds "
                                        f"{', '.join(sorted(data)) or 'nothing'}")
        return cls(data.get("endpoint") or None, data["region"], data["bucketName"], prefix, data["accessKeyID"],
                   data["secretAccessKey"])


class BackupStore:
    """The snapshots of one cluster in one bucket (boto3 over the store's endpoint)."""

    def __init__(self, spec: StoreSpec, timeout: float = 10.0, attempts: int = 2) -> None:
        from botocore.config import Config as BotoConfig

        from harness.aws.access import session

        self.spec = spec
        self.s3 = session().client(
            "s3", region_name=spec.region, endpoint_url=spec.endpoint_url, aws_access_key_id=spec.access_key_id,
            aws_secret_access_key=spec.secret_access_key,
            config=BotoConfig(retries={"max_attempts": attempts, "mode": "standard"}, connect_timeout=timeout,
                              read_timeout=timeout * 6, s3={"addressing_style": "path"}))

    def _key(self, name: SnapshotName) -> str:
        return f"{self.spec.prefix}/{name.name}"

    def put(self, name: SnapshotName, body: bytes | BinaryIO) -> None:
        self.s3.put_object(Bucket=self.spec.bucket, Key=self._key(name), Body=body)

    def get(self, name: SnapshotName) -> bytes:
        return bytes(self.s3.get_object(Bucket=self.spec.bucket, Key=self._key(name))["Body"].read())

    def download(self, name: SnapshotName, into: Path) -> Path:
        into.parent.mkdir(parents=True, exist_ok=True)
        self.s3.download_file(self.spec.bucket, self._key(name), str(into))
        return into

    def delete(self, name: SnapshotName) -> None:
        self.s3.delete_object(Bucket=self.spec.bucket, Key=self._key(name))

    def list(self) -> list[SnapshotName]:
        """Every snapshot of the cluster, oldest revision first (a full before deltas ending with it)."""
        names: list[SnapshotName] = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.spec.bucket,
                                                                       Prefix=f"{self.spec.prefix}/"):
            for obj in page.get("Contents", []):
                parsed = SnapshotName.parse(obj["Key"].rsplit("/", 1)[-1])
                if parsed is not None:
                    names.append(parsed)
        return sorted(names, key=lambda n: (n.end, n.kind != FULL, n.taken))

    def latest_revision(self) -> int:
        """The newest revision any snapshot covers (0: the store holds none)."""
        return max((n.end for n in self.list()), default=0)


@dataclass(frozen=True)
class Chain:
    """What a restore replays: a full snapshot, then deltas each starting where the last ended.
    `broken` names the first delta that does not follow on (it and the rest are left out)."""

    full: SnapshotName
    deltas: tuple[SnapshotName, ...]
    broken: SnapshotName | None = None

    @property
    def revision(self) -> int:
        return self.deltas[-1].end if self.deltas else self.full.end


def chain(names: Iterable[SnapshotName]) -> Chain:
    """The newest full snapshot and the unbroken run of deltas after it. Deltas may overlap (a
    sidecar taking the lead carries on from the store's newest revision while the last leader's
    final delta is still on its way): each step takes the delta that reaches furthest."""
    names = list(names)
    fulls = [n for n in names if n.kind == FULL]
    if not fulls:
        raise EnvironmentStateError("the backup store holds no full snapshot to restore from "
                                    f"({len(names)} delta snapshot(s) alone cannot make a cluster)")
    full = max(fulls, key=lambda n: (n.end, n.taken))
    later = [n for n in names if n.kind == DELTA and n.end > full.end]
    deltas: list[SnapshotName] = []
    at = full.end
    while True:
        follow = [d for d in later if d.start <= at + 1 and d.end > at]
        if not follow:
            break
        deltas.append(max(follow, key=lambda d: (d.end, d.taken)))
        at = deltas[-1].end
    beyond = [d for d in later if d.end > at]
    return Chain(full, tuple(deltas), min(beyond, key=lambda d: (d.start, d.taken)) if beyond else None)


def encode_delta(events: list[dict[str, Any]], start: int) -> tuple[SnapshotName, bytes]:
    """A delta snapshot of `events` (revision-ordered, as the watch gave them), covering revisions
    `start` (where its watch began: the revision after the store's newest) to its last event."""
    if not events or int(events[0]["revision"]) < start:
        raise ValueError(f"a delta snapshot from revision {start} needs events from that revision on")
    body = json.dumps(events, separators=(",", ":"), sort_keys=True)
    end = int(events[-1]["revision"])
    doc = {"start": start, "end": end, "sha256": hashlib.sha256(body.encode()).hexdigest(), "events": events}
    return delta_name(start, end), json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def decode_delta(name: SnapshotName, data: bytes) -> list[dict[str, Any]]:
    """The events of a delta snapshot, checked against its digest and its name."""
    try:
        doc = json.loads(data)
        events = doc["events"]
        body = json.dumps(events, separators=(",", ":"), sort_keys=True)
    except (ValueError, KeyError, TypeError) as e:
        raise EnvironmentStateError(f"delta snapshot {name.name} is not readable: {e}") from None
    if hashlib.sha256(body.encode()).hexdigest() != doc.get("sha256"):
        raise EnvironmentStateError(f"delta snapshot {name.name} does not match its digest: damaged, not replayed")
    if (doc.get("start"), doc.get("end")) != (name.start, name.end):
        raise EnvironmentStateError(f"delta snapshot {name.name} covers revisions {doc.get('start')}-{doc.get('end')}, "
                                    "not those its name says")
    return list(events)
