"""Where an etcd on a seed backs up to, read as its sidecar reads it: the prefix from the backup
container's `--store-prefix`, the bucket and key pair from the Secret mounted as its backup volume
(etcd-druid's S3 Secret keys). The same for the reference's etcd-main and a real etcd-druid's."""

from __future__ import annotations

import base64
from typing import Any

from harness.backup.store import StoreSpec
from harness.errors import EnvironmentStateError
from harness.kube import cluster
from harness.kube.agent import BACKUP_CONTAINER, BACKUP_VOLUME


def store_of(api: Any, namespace: str, statefulset: str) -> StoreSpec:
    from kubernetes import client as k8s

    with cluster.api_errors(f"reading {namespace}/{statefulset}"):
        template = k8s.AppsV1Api(api).read_namespaced_stateful_set(statefulset, namespace).spec.template.spec
    container = next((c for c in template.containers if c.name == BACKUP_CONTAINER), None)
    if container is None:
        raise EnvironmentStateError(f"{namespace}/{statefulset} has no {BACKUP_CONTAINER} container: it takes no backups")
    prefixes = [a.split("=", 1)[1] for a in container.args or [] if a.startswith("--store-prefix=")]
    secrets = [v.secret.secret_name for v in template.volumes or [] if v.name == BACKUP_VOLUME and v.secret]
    if len(prefixes) != 1 or len(secrets) != 1:
        raise EnvironmentStateError(f"{namespace}/{statefulset}'s {BACKUP_CONTAINER} needs one --store-prefix and the "
                                    f"Secret volume {BACKUP_VOLUME!r}; it has args {container.args} and secrets {secrets}")
    with cluster.api_errors(f"reading Secret {namespace}/{secrets[0]}"):
        data = k8s.CoreV1Api(api).read_namespaced_secret(secrets[0], namespace).data or {}
    return StoreSpec.from_secret({k: base64.b64decode(v).decode() for k, v in data.items()}, prefixes[0])
