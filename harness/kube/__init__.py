"""A real local Kubernetes control plane (etcd, kube-apiserver, controller manager, scheduler)
with kwok-faked nodes, one kwok controller per zone, for the embedded region."""

from __future__ import annotations

from harness.kube.binaries import (
    KUBERNETES_VERSION,
    KWOK_VERSION,
    KubeBinaries,
    ensure_binaries,
    sources_from_env,
)
from harness.kube.controlplane import (
    ControlPlane,
    ControlPlaneError,
    ControlPlaneSpec,
    NodeSpec,
    default_nodes,
    load_state,
    start_control_plane,
    stop_from_state,
)
from harness.kube.timings import DEFAULT_TIMINGS, KubeTimings

__all__ = [
    "DEFAULT_TIMINGS",
    "KUBERNETES_VERSION",
    "KWOK_VERSION",
    "ControlPlane",
    "ControlPlaneError",
    "ControlPlaneSpec",
    "KubeBinaries",
    "KubeTimings",
    "NodeSpec",
    "default_nodes",
    "ensure_binaries",
    "load_state",
    "sources_from_env",
    "start_control_plane",
    "stop_from_state",
]
