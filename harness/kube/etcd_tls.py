"""etcd over TLS on a seed, as etcd-druid lays it out: the members' pods mount their CA, serving
and peer certificates from Secrets under etcd-druid's volume names, and a client certificate for
the members' clients (etcd-druid's backup sidecar, here the harness) sits beside them.

The reference deploys these Secrets (the shoot's CA signs them); the node agent hands a pod's
mounted Secrets to the process it runs, as a kubelet would; the harness finds its client
certificate through the same volumes, so it reaches a real etcd-druid's members the same way.
"""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path
from typing import Any

from harness.errors import EnvironmentStateError
from harness.topology import EtcdTls

# etcd-druid's volume names in a member's pod (its StatefulSet builder), and the keys inside.
CLIENT_CA_VOLUME = "client-url-ca-etcd"
SERVER_TLS_VOLUME = "client-url-etcd-server-tls"
CLIENT_TLS_VOLUME = "client-url-etcd-client-tls"
PEER_CA_VOLUME = "peer-url-ca-etcd"
PEER_TLS_VOLUME = "peer-url-etcd-server-tls"
CA_KEYS = ("ca.crt", "bundle.crt")  # the reference's; Gardener's CA bundle Secrets
# The client side's volumes (CA, serving certificate, client certificate) under both names: the
# ones above (etcd-druid v0.22's, the reference's) and those of etcd-druid v0.36, which runs
# gardenlet's Etcd resources on the local seed.
CLIENT_SIDE_VOLUMES = ((CLIENT_CA_VOLUME, SERVER_TLS_VOLUME, CLIENT_TLS_VOLUME),
                       ("etcd-ca", "etcd-server-tls", "etcd-client-tls"))
# The reference's Secrets: one CA (the shoot's), one of each certificate for etcd-main and etcd-events.
CA_SECRET, SERVER_SECRET, PEER_SECRET, CLIENT_SECRET = "etcd-ca", "etcd-server-tls", "etcd-peer-tls", "etcd-client-tls"
MEMBER_VOLUMES = {CLIENT_CA_VOLUME: CA_SECRET, SERVER_TLS_VOLUME: SERVER_SECRET, CLIENT_TLS_VOLUME: CLIENT_SECRET,
                  PEER_CA_VOLUME: CA_SECRET, PEER_TLS_VOLUME: PEER_SECRET}
# kube-apiserver's own: the CA it checks the members with and its client certificate.
APISERVER_VOLUMES = {"etcd-ca": CA_SECRET, "etcd-client-tls": CLIENT_SECRET}


def volumes(secrets_by_volume: dict[str, str]) -> list[dict[str, Any]]:
    return [{"name": v, "secret": {"secretName": s}} for v, s in secrets_by_volume.items()]


def secrets(namespace: str, directory: Path) -> list[dict[str, Any]]:
    """The reference's Secrets from the files harness.kube.pki wrote for etcd in `directory`."""
    from harness.kube.pki import etcd_pki_files

    f = etcd_pki_files(directory)

    def secret(name: str, files: dict[str, Path], kind: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "type": kind, "metadata": {"name": name, "namespace": namespace},
                "data": {k: base64.b64encode(p.read_bytes()).decode() for k, p in files.items()}}

    return [secret(CA_SECRET, {"ca.crt": f.ca}, "Opaque"),
            *(secret(name, {"tls.crt": cert, "tls.key": key}, "kubernetes.io/tls")
              for name, cert, key in ((SERVER_SECRET, f.server_cert, f.server_key), (PEER_SECRET, f.peer_cert, f.peer_key),
                                      (CLIENT_SECRET, f.client_cert, f.client_key)))]


def mounted(pod_spec: Any) -> dict[str, str]:
    """volume name -> Secret name, for a pod's (or pod template's) Secret volumes."""
    return {v.name: v.secret.secret_name for v in pod_spec.volumes or [] if v.secret is not None}


def client_side_volumes(by_volume: dict[str, str]) -> tuple[str, str, str] | None:
    """The names (CA, serving certificate, client certificate) of the client side's volumes, under
    the names of whichever etcd-druid release the pod's serving certificate volume has; None when
    it mounts none: its members serve plain HTTP."""
    return next((names for names in CLIENT_SIDE_VOLUMES if names[1] in by_volume), None)


def write_secret(core: Any, namespace: str, name: str, directory: Path, timeout: float | None = None) -> dict[str, Path]:
    """A Secret's keys as files in `directory` (private), as a kubelet mounts it; key -> path.

    Each file is replaced whole, never truncated in place, and left alone when it holds the
    Secret's bytes already: a starting member's files are written again at once (its sidecar's
    client certificate is the member's), and an etcd (v3.5.35, tried here) that reads its
    trusted CA file empty starts and then rejects every client with "certificate signed by
    unknown authority" for its whole life, as etcd-main-0 did after a zone came back."""
    secret = core.read_namespaced_secret(name, namespace, **({"_request_timeout": timeout} if timeout else {}))
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    out = {}
    for key, value in (secret.data or {}).items():
        path, data = directory / key, base64.b64decode(value)
        if not (path.is_file() and path.read_bytes() == data):
            staged = directory / f".{key}.{os.getpid()}.{threading.get_ident()}"
            with os.fdopen(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
                file.write(data)  # private from its first byte: a key is never readable by others
            os.replace(staged, path)
        out[key] = path
    return out


def ca_file(files: dict[str, Path], what: str) -> Path:
    found = next((files[k] for k in CA_KEYS if k in files), None)
    if found is None:
        raise EnvironmentStateError(f"{what} holds none of {', '.join(CA_KEYS)}")
    return found


def client_tls(api: Any, namespace: str, statefulset: str, directory: Path) -> EtcdTls | None:
    """The client TLS of an etcd StatefulSet whose pods serve TLS, from the Secrets its pods mount
    (written under `directory`); None when its members serve plain HTTP. The serving certificate is
    checked for the client Service's name: the harness dials the members through port-forwards."""
    from kubernetes import client as k8s

    template = k8s.AppsV1Api(api).read_namespaced_stateful_set(statefulset, namespace).spec.template.spec
    by_volume = mounted(template)
    names = client_side_volumes(by_volume)
    if names is None:
        return None
    ca_volume, _, client_volume = names
    missing = [v for v in (ca_volume, client_volume) if v not in by_volume]
    if missing:
        raise EnvironmentStateError(f"{namespace}/{statefulset} serves TLS but mounts no {', '.join(missing)}: "
                                    f"the harness finds its client certificate there")
    core = k8s.CoreV1Api(api)
    ca = write_secret(core, namespace, by_volume[ca_volume], directory / "ca")
    client = write_secret(core, namespace, by_volume[client_volume], directory / "client")
    return EtcdTls(ca_file(ca, f"Secret {namespace}/{by_volume[ca_volume]}"), client["tls.crt"], client["tls.key"],
                   server_name=service_name(statefulset, namespace))


def service_name(statefulset: str, namespace: str) -> str:
    """The client Service's name, which the serving certificate names (etcd-druid's <etcd>-client)."""
    return f"{statefulset}-client.{namespace}.svc"


def dns_names(statefulset: str, namespace: str) -> tuple[str, ...]:
    """What etcd-druid's serving certificates name for an etcd: its client Service, its peers."""
    return (f"{statefulset}-local", f"{statefulset}-client", f"{statefulset}-client.{namespace}",
            service_name(statefulset, namespace), f"*.{statefulset}-peer.{namespace}.svc")
