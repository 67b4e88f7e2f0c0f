"""The region's backup store: a bucket of the local cloud's S3 (moto's, outside every zone and
reached through the router, as a region's S3 endpoint is) that the backup sidecars write to with a
key pair of their own (an IAM user allowed the bucket and nothing else), never the harness's. The
same bucket holds the backups of the seed's etcds (`ensure_store`, Gardener's BackupBucket): each
shoot's etcd-main under a prefix of its own. Cutting the store off from zones is a fault here too.
"""

from __future__ import annotations

import json
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness import netns
from harness.aws.errors import aws_call
from harness.backup.store import BackupStore, StoreSpec
from harness.errors import ConfigError, EnvironmentStateError
from harness.providers.local.network.fault_tables import FAULT_TABLE_PREFIX, dropped_packets, remove_table

if TYPE_CHECKING:
    from harness.providers.local.core import RegionRecord


BACKUP_USER = "etcd-backup"
CLUSTER_PREFIX = "etcd"  # the region's one etcd cluster
STORE_PROBE_S = 0.1  # a connection to the store unanswered this long: the store is cut off


def bucket_name(region: str) -> str:
    return f"ha-harness-{region.lower()}-etcd-backups"


def ensure_store(env: RegionRecord) -> StoreSpec:
    """The region's backup bucket in its cloud and the key pair of its backup user (an IAM user
    allowed that bucket and nothing else), made on first use; the prefix is left to each cluster."""
    from harness.providers.local.cloud.account import ensure_cloud

    if env.state.get("backup_store"):
        return StoreSpec.from_dict(env.state["backup_store"])
    access = ensure_cloud(env)
    bucket = bucket_name(env.spec.name)
    s3 = access.client("s3")
    iam = access.client("iam")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": [
        f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}
    with aws_call(f"creating the backup bucket {bucket} and its user {BACKUP_USER}"):
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": access.region})
        iam.create_user(UserName=BACKUP_USER)
        iam.put_user_policy(UserName=BACKUP_USER, PolicyName="backup-bucket", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=BACKUP_USER)["AccessKey"]
    spec = StoreSpec(access.endpoint_url, access.region, bucket, "", key["AccessKeyId"], key["SecretAccessKey"])
    env.update(lambda st: st.update(backup_store=spec.to_dict()))
    return spec


def store_spec(env: RegionRecord) -> StoreSpec:
    record = env.state.get("backups")
    if not record:
        raise ConfigError(f"region {env.spec.name!r} takes no backups: bring it up with [region] backups "
                          "(`harness up --backups`)")
    return StoreSpec.from_dict(record["store"])


def store(env: RegionRecord) -> BackupStore:
    return BackupStore(store_spec(env))


def _store_address(env: RegionRecord) -> tuple[str, int]:
    """The store of the region's backups and of its seed's etcds alike."""
    recorded = env.state.get("backup_store")
    if not recorded:
        raise EnvironmentStateError(f"region {env.spec.name!r} has no backup store yet: it is made with the region's "
                                    "backups (`harness up --backups`) or the first seed etcd backed up")
    parts = urlsplit(recorded.get("endpoint_url") or "")
    if not parts.hostname or not parts.port:
        raise EnvironmentStateError(f"the backup store's endpoint {recorded.get('endpoint_url')!r} has no address and port")
    return parts.hostname, parts.port


def store_cut_table(run_id: str) -> str:
    return f"{FAULT_TABLE_PREFIX}store_{run_id.replace('-', '_')}"


def cut_backup_store(env: RegionRecord, zones: list[str], run_id: str) -> dict[str, Any]:
    """The router drops what the zones send to the store's address and port (the harness, outside
    every zone, still reaches it)."""
    address, port = _store_address(env)
    table = store_cut_table(run_id)
    subnets = ", ".join(env.names.subnet(z) for z in zones)
    netns.nft(env.names.router, f"""add table inet {table}
flush table inet {table}
add chain inet {table} forward {{ type filter hook forward priority -10; policy accept; }}
add rule inet {table} forward ip saddr {{ {subnets} }} ip daddr {address} tcp dport {port} counter drop
""", env.config.timeouts.command)
    return {"table": table, "zones": zones, "store": f"{address}:{port}"}


def backup_store_cut_effect(env: RegionRecord, data: dict[str, Any]) -> dict[str, Any] | None:
    """In effect once a connection to the store from each cut zone goes unanswered (tried from the
    zones' client namespaces at once; the store answers a zone it can hear in well under 0.1 s)."""
    address, port = _store_address(env)

    def answered(zone: str) -> bool:
        try:
            with netns.entered(env.names.client_ns(zone)):
                socket.create_connection((address, port), timeout=STORE_PROBE_S).close()
            return True
        except OSError:
            return False

    with ThreadPoolExecutor(len(data["zones"])) as pool:
        if any(pool.map(answered, data["zones"])):
            return None
    return {"unreachable_from": data["zones"], "dropped_packets": dropped_packets(env.names.router, data["table"])}


def restore_backup_store(env: RegionRecord, data: dict[str, Any]) -> None:
    """Idempotent; from the run id alone when inject never returned (the table is named after it)."""
    table = data.get("table") or store_cut_table(data["run_id"])
    netns.nft(env.names.router, remove_table(table), env.config.timeouts.command)


def compact_backups(env: RegionRecord) -> dict[str, Any]:
    from harness.backup.compaction import compact_and_upload

    record = env.state["backups"]
    return compact_and_upload(store(env), Path(env.state["etcd"]["path"]), Path(record["etcdutl"]),
                              Path(record["workdir"]) / "compaction")


# -- the operator tasks' executor on the local seed ----------------------------------------------
