"""gardener's machine-controller-manager, real: its module pinned in kube/gomod/machine-controller,
built on first use into one program with two commands, `manager` (MCM's own MachineDeployment and
MachineSet controllers) and `machines` (the machine controller, MCM's provider library driving a
machine driver for an EC2 API). gardener's AWS provider is not served by the Go module proxy; the
driver in main.go stands in for it, small: one instance per Machine, found by its Name tag.

This module knows the objects and command lines, for any seed and any EC2 API (the local cloud or
AWS); the local region starts it (harness.providers.local.seed.machines).

The seed's own nodes become Machines: one Machine per node, named after it (its instance carries
the node's name as its Name tag), created before the MachineSets (one per zone, as Gardener has a
worker pool per zone) that adopt them by label. A Machine the MachineSets make later gets a new
instance, whose node never joins: GEP-20's machines Pending with no node.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

from harness import gobuild
from harness.errors import PrerequisiteError

MODULE_DIR = Path(__file__).resolve().parent / "gomod" / "machine-controller"
BINARY = "machine-controllers"
PIN = "github.com/gardener/machine-controller-manager"
GROUP = "machine.sapcloud.io"
VERSION = "v1alpha1"
POOL_LABEL = "ha-harness/pool"  # the zone a Machine belongs to: its MachineSet's selector
CLASS_TAG = "ha-harness/machine-class"  # on each instance a class claimed (main.go's classTag)
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, BINARY, PIN, "machine-controller-manager", "machine-controller", "machine-controller-manager",
    "install Go 1.26 or newer (make setup does)", "python -m harness.kube.machine_controller", min_go=(1, 26))


def _say(message: str) -> None:
    print(f"[machine-controller-manager] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The program, built into the cache on first use (about 2 minutes, 75 MiB)."""
    return PROGRAM.path(cache_root, progress=_say)


def crd_files() -> list[Path]:
    """The CustomResourceDefinitions of the pinned release, from its module in Go's module cache."""
    go = gobuild.require_go(PROGRAM.min_go, PROGRAM.hint, PROGRAM.what, MODULE_DIR)
    module = f"{PIN}@{PROGRAM.pinned_version()}"
    done = subprocess.run([str(go), "mod", "download", "-json", module], cwd=MODULE_DIR, capture_output=True, text=True,
                          timeout=600)
    found = json.loads(done.stdout or "{}").get("Dir") if done.returncode == 0 else None
    files = sorted((Path(found) / "kubernetes" / "crds").glob("*.yaml")) if found else []
    if not files:
        raise PrerequisiteError(f"the CRDs of {module} could not be read from Go's module cache: "
                                f"{(done.stderr or done.stdout).strip()[-400:]}")
    return files


def objects(namespace: str, zones: Mapping[str, Mapping[str, Any]], secret: Mapping[str, str],
            nodes: Mapping[str, str]) -> list[dict[str, Any]]:
    """The namespace, the cloud Secret, a MachineClass per zone (`zones`: zone -> {"subnet",
    "availability_zone", "image_id", "instance_type"}) and a Machine per node (`nodes`: node ->
    zone). The MachineSets come after the Machines exist (machine_sets), so they adopt them."""
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cloud", "namespace": namespace},
         "stringData": {**secret, "userData": "#!/bin/sh\n"}},
    ]
    for zone, where in zones.items():
        out.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "MachineClass",
                    "metadata": {"name": zone, "namespace": namespace},
                    "providerSpec": {"imageId": where["image_id"], "instanceType": where["instance_type"],
                                     "subnetId": where["subnet"], "availabilityZone": where["availability_zone"]},
                    "secretRef": {"name": "cloud", "namespace": namespace}, "provider": "ha-harness-ec2"})
    for node, zone in nodes.items():
        out.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": "Machine",
                    "metadata": {"name": node, "namespace": namespace, "labels": {POOL_LABEL: zone, "node": node}},
                    "spec": {"class": {"kind": "MachineClass", "name": zone}}})
    return out


def machine_sets(namespace: str, replicas: Mapping[str, int]) -> list[dict[str, Any]]:
    """A MachineSet per zone keeping `replicas[zone]` machines of that zone's class."""
    return [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "MachineSet",
             "metadata": {"name": zone, "namespace": namespace},
             "spec": {"replicas": count, "selector": {"matchLabels": {POOL_LABEL: zone}},
                      "template": {"metadata": {"labels": {POOL_LABEL: zone}},
                                   "spec": {"class": {"kind": "MachineClass", "name": zone}}}}}
            for zone, count in replicas.items()]


def command(program: Path, which: str, kubeconfig: Path, namespace: str, port: int, health_timeout_s: float,
            drain_timeout_s: float) -> list[str]:
    """`which`: "manager" or "machines". The seed is both the control cluster (the Machines) and the
    target (the nodes they become), as for a seed whose own machines MCM manages."""
    argv = [str(program), which, f"--control-kubeconfig={kubeconfig}", f"--target-kubeconfig={kubeconfig}",
            f"--namespace={namespace}", f"--port={port}", "--address=127.0.0.1", "--leader-elect=false", "--v=3"]
    if which == "machines":
        argv += [f"--machine-health-timeout={health_timeout_s:g}s", f"--machine-drain-timeout={drain_timeout_s:g}s",
                 f"--machine-creation-timeout={max(health_timeout_s, 60):g}s"]
    return argv


if __name__ == "__main__":
    print(binary())
