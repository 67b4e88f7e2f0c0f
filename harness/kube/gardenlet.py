"""A shoot control plane's objects as gardenlet's own component code makes them.

`gardener shoot-etcd` (the program of kube/gomod/gardener) runs gardenlet's etcd deployer
(pkg/component/etcd/etcd) with the values botanist.DefaultEtcd gives it for a shoot, into an
in-memory client, and prints the `Etcd` resources etcd-druid reconciles on the seed and the
Secrets they name; `gardener shoot-kube-apiserver` does the same with its kube-apiserver deployer
(pkg/component/kubernetes/apiserver); `gardener druid-crds` prints etcd-druid's CRDs as gardenlet
deploys them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from harness.kube import resource_manager


class GardenletError(resource_manager.ResourceManagerError):
    """Gardener's component code did not make the objects."""


def _run(program: Path | None, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run([str(program or resource_manager.binary()), *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise GardenletError(f"gardenlet's component code did not make the objects (`gardener {args[0]}`): "
                             f"{(done.stderr or done.stdout).strip()[-600:]}")
    return json.loads(done.stdout)


def etcd_objects(namespace: str, tolerance: str = "zone", program: Path | None = None) -> list[dict[str, Any]]:
    """etcd-main's and etcd-events' `Etcd` resources and the Secrets they name (CAs, server, peer and
    client certificates), for a shoot whose control plane namespace is `namespace` and whose failure
    tolerance is `tolerance` (zone, node, or none: no HA; the program refuses anything else, saying
    what it takes)."""
    return _run(program, "shoot-etcd", f"--namespace={namespace}", f"--failure-tolerance={tolerance}")


def etcd_resources(namespace: str, tolerance: str = "zone", program: Path | None = None) -> dict[str, dict[str, Any]]:
    """The `Etcd` resources of etcd_objects, by name."""
    return {o["metadata"]["name"]: o for o in etcd_objects(namespace, tolerance, program) if o["kind"] == "Etcd"}


def kube_apiserver_objects(namespace: str, tolerance: str = "zone", program: Path | None = None) -> list[dict[str, Any]]:
    """kube-apiserver's Deployment, PodDisruptionBudget and HorizontalPodAutoscaler for the same shoot
    (gardenlet deploys it after etcd, whose client certificate it mounts; without the VPN to the
    shoot's nodes, which needs a seed's VPN server)."""
    return _run(program, "shoot-kube-apiserver", f"--namespace={namespace}", f"--failure-tolerance={tolerance}")


def druid_crds(program: Path | None = None) -> list[dict[str, Any]]:
    """etcd-druid's CustomResourceDefinitions (Etcd, EtcdCopyBackupsTask, EtcdOpsTask)."""
    return _run(program, "druid-crds")
