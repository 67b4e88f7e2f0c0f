"""etcd-druid, real, beside a local seed: its own command, built from the gardener module
(kube/gomod/gardener pins etcd-druid v0.36.4, the release whose Etcd API gardener v1.145.0
requires), with its CRDs as gardenlet deploys them. Given the `Etcd` resources gardenlet makes
(harness.kube.gardenlet), it creates what a seed's etcd-druid creates: the StatefulSet, its
Services, PodDisruptionBudget, ConfigMap, member Leases, ServiceAccount and Role.

The process runs on the seed's host, not as a pod: its metrics and webhook ports are free ones
of the host's and it elects no leader (one instance). Every other setting is its default.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import gobuild
from harness.kube import cluster, gardenlet
from harness.kube.controlplane import free_ports
from harness.kube.kubeconfig import embedded
from harness.kube.resource_manager import MODULE_DIR, ResourceManagerError, Seed, as_new, wait_serving
from harness.topology import KubeAccess

NAME = "etcd-druid"
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, NAME, "github.com/gardener/etcd-druid", "etcd-druid", "etcd-druid", "etcd-druid",
    "install Go 1.26 or newer (make setup does)", "python -m harness.kube.druid", min_go=(1, 26),
    sources=("go.mod", "go.sum", "druidclient/go.mod"), package="github.com/gardener/etcd-druid/cmd")
READY_TIMEOUT_S = 60.0


class DruidError(gardenlet.GardenletError):
    """etcd-druid could not be set up on the seed."""


def _say(message: str) -> None:
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The program, built into the cache on first use."""
    return PROGRAM.path(cache_root, progress=_say)


@dataclass(frozen=True)
class Druid:
    """A running etcd-druid."""

    metrics_port: int
    workdir: Path


def start(seed: Seed, workdir: Path, *, program: Path | None = None, timeout: float = READY_TIMEOUT_S) -> Druid:
    """Its CRDs applied to `seed`, then the controller started beside it, once its metrics serve."""
    crds = gardenlet.druid_crds()
    api = cluster.connect(KubeAccess(seed.kubeconfig))
    cluster.apply(api, [as_new(crd) for crd in crds])
    metrics, webhooks = free_ports(2)
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = str(embedded(seed.kubeconfig, workdir / "kubeconfig"))
    seed.start_component(NAME, [str(program or binary()), "--enable-leader-election=false",
                                "--metrics-bind-address=127.0.0.1", f"--metrics-port={metrics}",
                                "--webhook-server-bind-address=127.0.0.1", f"--webhook-server-port={webhooks}"],
                         env={"KUBECONFIG": kubeconfig})
    try:
        wait_serving(seed, NAME, metrics, "/metrics", timeout)
    except ResourceManagerError as exc:
        raise DruidError(str(exc)) from None
    return Druid(metrics, workdir)


def with_gateway(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """gardenlet's objects with every `Etcd`'s gRPC gateway on (`spec.etcd.enableGRPCGateway`),
    the one field the harness changes: its etcd client speaks etcd's JSON gateway, which gardenlet
    leaves off (druid's default), so its probes could not reach the members otherwise."""
    out = copy.deepcopy(objects)
    for o in out:
        if o.get("kind") == "Etcd":
            o["spec"].setdefault("etcd", {})["enableGRPCGateway"] = True
    return out


if __name__ == "__main__":
    print(binary())
