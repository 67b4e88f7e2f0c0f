"""The local Kubernetes control plane beside the region: one kwok node per region node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.config import Config
from harness.providers.local.region import LocalEnvironment


def workdir(config: Config, region: str) -> Path:
    return config.state_dir / region / "kube"


def start_for(env: LocalEnvironment) -> dict[str, Any]:
    """Start the control plane with the region's nodes and zones; record it in the region state."""
    from harness.kube import ControlPlaneSpec, NodeSpec, start_control_plane

    spec = ControlPlaneSpec(nodes=tuple(NodeSpec(n.name, n.zone) for n in env.nodes))
    cp = start_control_plane(spec, workdir(env.config, env.spec.name))
    record = {"workdir": str(cp.workdir), "kubeconfig": str(cp.kubeconfig), "apiserver": cp.apiserver_url}
    env.update(lambda st: st.update(kubernetes=record))
    return record


def stop_for(config: Config, region: str) -> list[str]:
    """Stop whatever control plane the region's work directory records (a crashed run's too)."""
    wd = workdir(config, region)
    if not (wd / "controlplane.json").exists():
        return []
    from harness.kube import load_state, stop_from_state

    state = load_state(wd)
    if state is None:
        return []
    stop_from_state(state)
    (wd / "controlplane.json").unlink(missing_ok=True)
    return [f"kubernetes control plane in {wd}"]


def restore_silenced(env: LocalEnvironment) -> list[str]:
    """Resume every zone whose kwok was left frozen (a run that died mid-silence)."""
    record = env.state.get("kubernetes")
    if not record:
        return []
    from harness.kube import ControlPlane, load_state

    state = load_state(Path(record["workdir"]))
    if state is None:
        return []
    cp = ControlPlane.from_state(state)
    silenced = sorted(cp.silenced)
    for zone in silenced:
        cp.restore_zone(zone)
    return [f"restored kubernetes nodes of {zone}" for zone in silenced]
