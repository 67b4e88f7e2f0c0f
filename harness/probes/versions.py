"""Versions the running servers report: what a run's verdicts are about, which can differ from
what the harness pinned (a cluster brought by the user, a binary swapped on PATH)."""

from __future__ import annotations

from typing import Any

from harness.kube import cluster
from harness.topology import KubeAccess

KUBE_API = "seed API /version"
KUBE_PINNED = "pinned (the seed was not started in this run)"
ETCD_MEMBERS = "member status"
ETCD_BINARY = "etcd --version (no member answered status)"


def kubernetes_version(kube: KubeAccess) -> str:
    """The seed API server's gitVersion, e.g. "v1.36.3"."""
    from kubernetes import client as k8s

    with cluster.api_errors("reading the seed's /version"):
        return k8s.VersionApi(cluster.connect(kube)).get_code().git_version


def etcd_version(members: Any, fallback: str) -> dict[str, str]:
    """The version the members report in their status (several, comma-separated, mid-upgrade),
    else `fallback` (the binary's own); with a field saying which."""
    statuses = members.status()
    found = sorted({s.version for s in statuses.values() if not isinstance(s, str) and s.version})
    if found:
        return {"etcd_version": ", ".join(found), "etcd_version_source": ETCD_MEMBERS}
    return {"etcd_version": fallback, "etcd_version_source": ETCD_BINARY}
