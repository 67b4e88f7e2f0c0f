"""gardener-resource-manager, real, on a local seed: Gardener's own command from the pinned
gardener/gardener module (kube/gomod/gardener), with the component config and the webhook
configurations gardenlet's seed reconciler makes for it (`gardener seed-resource-manager` runs
Gardener's component code into an in-memory client and prints them).

The local seed changes only what follows from where the process runs: on the seed's host, not
as a pod. Its webhooks are called at https://127.0.0.1:<port> (Gardener's configurations name
the Service in the garden namespace) with a CA of the harness's (Gardener's is the `ca-seed`
Secret); the config's ports, certificate directory and kubeconfig are the process's, and it
does not elect a leader (one instance). Every other field is Gardener's.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from harness import gobuild
from harness.errors import HarnessError, WaitAbandoned
from harness.kube import cluster
from harness.kube.apiclient import ApiClient, ApiError
from harness.kube.controlplane import free_ports
from harness.kube.kubeconfig import embedded
from harness.kube.pki import generate_webhook_pki
from harness.processes import log_tail
from harness.topology import KubeAccess
from harness.wait import wait_for

MODULE_DIR = Path(__file__).resolve().parent / "gomod" / "gardener"
PIN = "github.com/gardener/gardener"
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, "gardener", PIN, "Gardener", "gardener", "Gardener's components",
    "install Go 1.26 or newer (make setup does)", "python -m harness.kube.resource_manager", min_go=(1, 26))
NAME = "gardener-resource-manager"
HA_WEBHOOK = "high-availability-config.resources.gardener.cloud"
GARDEN_NAMESPACE = "garden"
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
READY_TIMEOUT_S = 60.0
# Fields a fake client sets that the seed's API server must set itself.
_SERVER_SET = ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation")


class ResourceManagerError(HarnessError):
    """gardener-resource-manager could not be set up on the seed."""


class Seed(Protocol):
    """What starting it needs of a seed: its admin kubeconfig, and a way to run one more
    component that stops with it (harness.kube.controlplane.ControlPlane is one)."""

    @property
    def kubeconfig(self) -> Path: ...

    @property
    def workdir(self) -> Path: ...  # its components' logs are in logs/<name>.log

    def start_component(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None: ...

    def running(self) -> list[str]: ...


def _say(message: str) -> None:
    print(f"[{NAME}] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """The program, built into the cache on first use."""
    return PROGRAM.path(cache_root, progress=_say)


def seed_objects(zones: Sequence[str], program: Path | None = None) -> list[dict[str, Any]]:
    """What gardenlet deploys for the seed's gardener-resource-manager with these seed zones:
    its ConfigMap, webhook configurations, CustomResourceDefinition and Deployment."""
    done = subprocess.run([str(program or binary()), "seed-resource-manager", f"--zones={','.join(zones)}"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise ResourceManagerError(f"Gardener's component code did not render the seed's {NAME}: "
                                   f"{(done.stderr or done.stdout).strip()[-600:]}")
    return json.loads(done.stdout)


def of_kind(objects: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def component_config(objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Gardener's ResourceManagerConfiguration, from the ConfigMap it mounts into the pod."""
    import yaml

    for cm in of_kind(objects, "ConfigMap"):
        text = (cm.get("data") or {}).get("config.yaml")
        if text:
            return yaml.safe_load(text)
    raise ResourceManagerError(f"no ConfigMap with config.yaml among {[o['metadata']['name'] for o in objects]}")


@dataclass(frozen=True)
class Ports:
    webhooks: int
    health: int
    metrics: int


def local_config(config: dict[str, Any], cert_dir: Path, ports: Ports) -> dict[str, Any]:
    """Gardener's config with the process's ports and certificates, and no leader election."""
    out = copy.deepcopy(config)
    server = out.setdefault("server", {})
    server["webhooks"] = {**server.get("webhooks", {}), "bindAddress": "127.0.0.1", "port": ports.webhooks,
                          "tls": {"serverCertDir": str(cert_dir)}}
    server["healthProbes"] = {"bindAddress": "127.0.0.1", "port": ports.health}
    server["metrics"] = {"bindAddress": "127.0.0.1", "port": ports.metrics}
    out.setdefault("leaderElection", {})["leaderElect"] = False
    return out


def local_webhooks(configuration: dict[str, Any], port: int, ca_bundle: bytes) -> dict[str, Any]:
    """A webhook configuration Gardener made, calling the process on this host instead of its Service."""
    out = as_new(configuration)
    for webhook in out.get("webhooks", []):
        path = (webhook.get("clientConfig", {}).get("service") or {}).get("path", "")
        webhook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}",
                                   "caBundle": base64.b64encode(ca_bundle).decode()}
    return out


def as_new(obj: dict[str, Any]) -> dict[str, Any]:
    """An object an in-memory client held, without the fields the seed's API server sets itself."""
    out = copy.deepcopy(obj)
    meta = out.get("metadata", {})
    for key in _SERVER_SET:
        meta.pop(key, None)
    return out


@dataclass(frozen=True)
class ResourceManager:
    """A running gardener-resource-manager and what it was started with."""

    config: dict[str, Any]  # Gardener's, before local_config
    webhooks: list[dict[str, Any]]  # as registered on the seed
    ports: Ports
    workdir: Path


def start(seed: Seed, zones: Sequence[str], workdir: Path, *, ports: Ports | None = None,
          program: Path | None = None, timeout: float = READY_TIMEOUT_S) -> ResourceManager:
    """Start it beside `seed` and register its webhooks once it serves them (as Gardener applies
    the configurations after the Deployment has rolled out: failurePolicy is Fail)."""
    import yaml

    ports = ports or Ports(*free_ports(3))
    program = program or binary()
    objects = seed_objects(zones, program)
    config = component_config(objects)
    workdir.mkdir(parents=True, exist_ok=True)
    cert_dir = workdir / "certs"
    ca = generate_webhook_pki(cert_dir, "ca-seed").read_bytes()
    config_file = workdir / "config.yaml"
    config_file.write_text(yaml.safe_dump(local_config(config, cert_dir, ports)))
    api = cluster.connect(KubeAccess(seed.kubeconfig))
    cluster.apply(api, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": GARDEN_NAMESPACE}},
                        *(as_new(crd) for crd in of_kind(objects, "CustomResourceDefinition"))])
    # It takes no kubeconfig naming files: one with them embedded, beside its config. Its defaults
    # give it a target cluster too, which in a pod is the in-cluster config like the source's.
    kubeconfig = str(embedded(seed.kubeconfig, workdir / "kubeconfig"))
    seed.start_component(NAME, [str(program), "resource-manager", f"--config={config_file}"],
                         env={"KUBECONFIG": kubeconfig, "TARGET_KUBECONFIG": kubeconfig})
    wait_serving(seed, NAME, ports.health, "/readyz", timeout)
    # Applied over any from an earlier start on this seed: they must name this process's port and CA.
    registered = [local_webhooks(c, ports.webhooks, ca) for kind in WEBHOOK_KINDS for c in of_kind(objects, kind)]
    cluster.apply(api, registered)
    return ResourceManager(config, registered, ports, workdir)


def wait_serving(seed: Seed, name: str, port: int, path: str, timeout: float) -> None:
    """Wait until component `name`, started beside `seed`, answers GET `path` on 127.0.0.1:`port`
    with 200; raises ResourceManagerError at once, with the end of its log, if it exits first."""
    probe = ApiClient(f"http://127.0.0.1:{port}", None, None, None)

    def ready() -> str | None:
        try:
            status, body = probe.request("GET", path, timeout=2.0)
        except (ApiError, OSError) as exc:
            return str(exc)
        return None if status == 200 else f"{path} {status}: {body[:200]}"

    def gone() -> str | None:
        if name in seed.running():
            return None
        log = seed.workdir / "logs" / f"{name}.log"
        return f"{name} exited; its log {log} ends with:\n{log_tail(log)}"

    try:
        wait_for(ready, lambda r: r is None, f"{name} {path} on 127.0.0.1:{port}", timeout, interval=0.5, give_up=gone)
    except WaitAbandoned as exc:
        raise ResourceManagerError(str(exc)) from None


def calls_ha_webhook(access: KubeAccess) -> bool:
    """Whether a seed's API server calls gardener-resource-manager's high-availability-config webhook."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    api = k8s.AdmissionregistrationV1Api(cluster.connect(access))
    try:
        found = api.read_mutating_webhook_configuration(NAME)
    except ApiException as e:
        if e.status == 404:
            return False
        raise ResourceManagerError(f"reading the webhook configuration {NAME}: HTTP {e.status} {e.reason}") from None
    return any(w.name == HA_WEBHOOK for w in found.webhooks or [])


def unregister(access: KubeAccess) -> list[str]:
    """Its webhook configurations removed from the seed, before it stops: with failurePolicy Fail,
    left behind they would refuse every workload of a namespace it considers. What was removed."""
    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    api = k8s.AdmissionregistrationV1Api(cluster.connect(access))
    done = []
    for kind, delete in (("MutatingWebhookConfiguration", api.delete_mutating_webhook_configuration),
                         ("ValidatingWebhookConfiguration", api.delete_validating_webhook_configuration)):
        try:
            delete(NAME)
            done.append(f"removed the {kind} {NAME}")
        except ApiException as e:
            if e.status != 404:
                raise ResourceManagerError(f"removing the {kind} {NAME}: HTTP {e.status} {e.reason}") from None
    return done


if __name__ == "__main__":
    print(binary())
