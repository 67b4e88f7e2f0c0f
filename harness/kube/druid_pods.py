"""etcd-druid's pods, run for real by the node agent (harness.kube.agent), each in a sandbox of its
own (harness.kube.sandbox), with the configuration druid generated read from the objects it made.

What each part of a druid pod becomes:

| in the pod | here |
|---|---|
| the `etcd` container (image etcd-wrapper) | harness.kube.etcd_wrapper, standing in for etcd-wrapper, with druid's arguments; it runs the real etcd with the configuration the sidecar serves |
| the `backup-restore` container (image etcdbrctl) | the real etcd-backup-restore (harness.kube.backup_restore), with druid's arguments |
| PersistentVolumeClaim volumes | the node's directory of the bound volume |
| Secret and ConfigMap volumes | their keys written out, as a kubelet mounts them |
| the environment | the containers' values, and `fieldRef` metadata.name / metadata.namespace |
| projected volumes (the service account's `kube-api-access-*`) | a token of the pod's service account (TokenRequest), the cluster's CA from `kube-root-ca.crt`, the namespace; KUBERNETES_SERVICE_HOST/PORT name the seed API's own address |
| cluster DNS | the pod's /etc/hosts: its hostAliases, and every name of its namespace's pods and Services (`<pod>.<subdomain>.<ns>.svc`, `<service>[.<ns>[.svc]]`) with the addresses DNS would answer, refreshed while it runs; no name server (another name fails at once) |

Everything runs as root (the pods' securityContext asks for a non-root user); the readiness probe
is checked from the first moment, not after its initial delay.
"""

from __future__ import annotations

import base64
import os
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.kube import sandbox

MANAGED_BY = ("app.kubernetes.io/managed-by", "etcd-druid")  # on every pod of druid's StatefulSets
ETCD_CONTAINER, BACKUP_CONTAINER = "etcd", "backup-restore"  # druid's container names
TOKEN_SECONDS = 24 * 3600
# Each API call fails fast, as the agent's own: from a cut zone every call times out, and the agent's
# loop must go on to its other pods.
REQUEST_TIMEOUT_S = 2.0
HOSTS_REFRESH_S = 2.0
DOMAIN = "cluster.local"


class PodError(Exception):
    """The pod cannot be run as druid made it; the message says what is missing."""


@dataclass(frozen=True)
class Programs:
    etcd: str  # the etcd the wrapper runs
    backup_restore: str  # etcdbrctl


def is_druid_pod(pod: Any) -> bool:
    return (pod.metadata.labels or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]


def address_base(pod: Any) -> int | None:
    """Where the addresses of the pod's etcd begin in its zone's subnet (member k at base + k), as
    for the reference's members: a member made again, after its zone came back or its node
    failed, gets the address it had (its volume keeps it in its zone), so the harness's view of the
    members stays true. None for a pod of no etcd the harness knows."""
    from harness.components import COMPONENTS, component_of

    name = component_of(pod.metadata.labels or {})
    return COMPONENTS[name].ip_base if name else None


def _container(pod: Any, name: str) -> Any:
    found = next((c for c in pod.spec.containers if c.name == name), None)
    if found is None:
        raise PodError(f"etcd-druid's pod {pod.metadata.name} has no {name!r} container "
                       f"(it has {', '.join(c.name for c in pod.spec.containers)})")
    return found


def _fields(pod: Any) -> dict[str, str]:
    """What a `fieldRef` may name (env or downwardAPI), as the agent gives it."""
    return {"metadata.name": pod.metadata.name, "metadata.namespace": pod.metadata.namespace}


def _env(pod: Any, container: Any) -> dict[str, str]:
    fields = _fields(pod)
    env = {}
    for e in container.env or []:
        if e.value is not None:
            env[e.name] = e.value
        elif e.value_from is not None and e.value_from.field_ref is not None:
            path = e.value_from.field_ref.field_path
            if path not in fields:
                raise PodError(f"container {container.name}: env {e.name} takes fieldRef {path}; the agent gives "
                               f"{', '.join(fields)}")
            env[e.name] = fields[path]
        else:
            raise PodError(f"container {container.name}: env {e.name} comes from a source the agent does not give "
                           "(value and fieldRef only)")
    return env


class DruidPod:
    """One druid pod's files and commands, under `workdir` (the agent's directory for the pod)."""

    def __init__(self, core: Any, pod: Any, workdir: Path, programs: Programs, volume_dir: Any) -> None:
        self.core, self.pod, self.workdir, self.programs = core, pod, workdir, programs
        self.volume_dir = volume_dir  # claim name -> the node's directory of its bound volume
        self.hosts = workdir / "hosts"
        # No name server: a name /etc/hosts does not have fails at once, as cluster DNS answers
        # NXDOMAIN (the host's server, unreachable from a pod, made each lookup wait out its timeout).
        self.resolv = workdir / "resolv.conf"

    # -- volumes ---------------------------------------------------------------------------------
    def _volume_sources(self) -> dict[str, Path]:
        """Every volume of the pod as a directory on the host, written out as a kubelet would."""
        ns, out = self.pod.metadata.namespace, {}
        for v in self.pod.spec.volumes or []:
            target = self.workdir / "volumes" / v.name
            if v.persistent_volume_claim is not None:
                out[v.name] = self.volume_dir(v.persistent_volume_claim.claim_name)
            elif v.secret is not None:
                data = self.core.read_namespaced_secret(v.secret.secret_name, ns, _request_timeout=REQUEST_TIMEOUT_S).data or {}
                out[v.name] = _write_keys(target, {k: base64.b64decode(x) for k, x in data.items()}, v.secret.items)
            elif v.config_map is not None:
                data = self.core.read_namespaced_config_map(v.config_map.name, ns, _request_timeout=REQUEST_TIMEOUT_S).data or {}
                out[v.name] = _write_keys(target, {k: x.encode() for k, x in data.items()}, v.config_map.items)
            elif v.projected is not None:
                out[v.name] = self._projected(v.projected, target)
            elif v.host_path is not None:
                Path(v.host_path.path).mkdir(parents=True, exist_ok=True)
                out[v.name] = Path(v.host_path.path)
            elif v.empty_dir is not None:
                target.mkdir(parents=True, exist_ok=True)
                out[v.name] = target
            else:
                raise PodError(f"volume {v.name} is of a kind the agent does not mount (persistentVolumeClaim, "
                               "secret, configMap, projected, hostPath and emptyDir are)")
        return out

    def _projected(self, projected: Any, target: Path) -> Path:
        """A projected volume (the service account's `kube-api-access-*` the API adds to every pod):
        a token of the pod's service account (TokenRequest), ConfigMap keys (the cluster's CA) and
        the pod's namespace."""
        from kubernetes import client as k8s

        ns, files = self.pod.metadata.namespace, {}
        for source in projected.sources or []:
            if source.service_account_token is not None:
                token = source.service_account_token
                made = self.core.create_namespaced_service_account_token(
                    self.pod.spec.service_account_name or "default", ns, k8s.AuthenticationV1TokenRequest(
                        spec=k8s.V1TokenRequestSpec(audiences=[token.audience] if token.audience else [],
                                                    expiration_seconds=max(token.expiration_seconds or 0, TOKEN_SECONDS))),
                    _request_timeout=REQUEST_TIMEOUT_S)
                files[token.path] = made.status.token.encode()
            elif source.config_map is not None:
                data = self.core.read_namespaced_config_map(source.config_map.name, ns, _request_timeout=REQUEST_TIMEOUT_S).data or {}
                for item in source.config_map.items or [{"key": k, "path": k} for k in data]:
                    key, path = (item["key"], item["path"]) if isinstance(item, dict) else (item.key, item.path)
                    files[path] = data[key].encode()
            elif source.downward_api is not None:
                fields = _fields(self.pod)
                for item in source.downward_api.items or []:
                    if item.field_ref is None or item.field_ref.field_path not in fields:
                        raise PodError(f"a projected downwardAPI item {item.path} asks for what the agent does not give "
                                       f"(fieldRef {', '.join(fields)})")
                    files[item.path] = fields[item.field_ref.field_path].encode()
            else:
                raise PodError("a projected volume's source is not one the agent gives (serviceAccountToken, configMap, "
                               "downwardAPI are)")
        return _write_keys(target, files, None)

    def _api(self) -> dict[str, str]:
        """Where the seed's API is, as KUBERNETES_SERVICE_HOST/PORT tell a pod (its own address: no
        service proxy runs for the pods on the local seed)."""
        server = urllib.parse.urlsplit(self.core.api_client.configuration.host)
        return {"KUBERNETES_SERVICE_HOST": server.hostname or "", "KUBERNETES_SERVICE_PORT": str(server.port or 443)}

    # -- the containers --------------------------------------------------------------------------
    def commands(self, pause: Any) -> tuple[list[str], list[str]]:
        """The etcd container's and the backup-restore container's commands in the sandbox."""
        sources, api = self._volume_sources(), self._api()
        self.refresh_hosts()
        self.resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")
        out = []
        for name, program in ((ETCD_CONTAINER, [sys.executable, "-m", "harness.kube.etcd_wrapper",
                                                f"--etcd={self.programs.etcd}"]),
                              (BACKUP_CONTAINER, [self.programs.backup_restore])):
            container = _container(self.pod, name)
            binds = [sandbox.Bind(str(self.hosts), "/etc/hosts", read_only=True),
                     sandbox.Bind(str(self.resolv), "/etc/resolv.conf", read_only=True)]
            for m in container.volume_mounts or []:
                if m.name not in sources:
                    raise PodError(f"container {name} mounts {m.name!r}, which is no volume of the pod")
                source = sources[m.name] / m.sub_path if m.sub_path else sources[m.name]
                binds.append(sandbox.Bind(str(source), m.mount_path, bool(m.read_only)))
            home = self.workdir / f"home-{name}"
            home.mkdir(parents=True, exist_ok=True)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                   "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **api, **_env(self.pod, container)}
            scratch = self.workdir / f"scratch-{name}"
            scratch.mkdir(parents=True, exist_ok=True)
            out.append(sandbox.container_argv(pause, scratch, binds, env,
                                              [*program, *(container.command or [])[1:], *(container.args or [])]))
        return out[0], out[1]

    def readiness_url(self, ip: str) -> str | None:
        """The etcd container's readiness probe (druid's: etcd-wrapper's /readyz) at the pod's address."""
        probe = _container(self.pod, ETCD_CONTAINER).readiness_probe
        if probe is None or probe.http_get is None:
            return None
        get = probe.http_get
        return f"{(get.scheme or 'HTTP').lower()}://{ip}:{get.port}{get.path or '/'}"

    # -- cluster DNS -------------------------------------------------------------------------------
    def refresh_hosts(self) -> bool:
        """The pod's /etc/hosts from its namespace's pods and Services as they are now; True when changed."""
        ns = self.pod.metadata.namespace
        pods = self.core.list_namespaced_pod(ns, _request_timeout=REQUEST_TIMEOUT_S).items
        services = self.core.list_namespaced_service(ns, _request_timeout=REQUEST_TIMEOUT_S).items
        return sandbox.write_hosts(self.hosts, hosts_entries(self.pod, pods, services))


def hosts_entries(pod: Any, pods: list[Any], services: list[Any]) -> list[tuple[str, list[str]]]:
    """What cluster DNS answers in the pod's namespace, as /etc/hosts lines: the pod's hostAliases;
    each pod with a hostname and subdomain under a headless Service of that name (not-ready ones
    only when the Service publishes them); each Service with a selector by its ready pods'
    addresses (no service proxy runs for pods on the local seed, so a Service's name leads to its
    endpoints directly, as a headless Service's does)."""
    ns = pod.metadata.namespace
    entries = [(a.ip, list(a.hostnames)) for a in pod.spec.host_aliases or []]
    by_name = {s.metadata.name: s for s in services}

    def ready(p: Any) -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or []))

    alive = [p for p in pods if p.status and p.status.pod_ip and p.metadata.deletion_timestamp is None]
    for p in alive:
        service = by_name.get(p.spec.subdomain or "")
        if not p.spec.hostname or service is None or service.spec.cluster_ip != "None":
            continue
        if ready(p) or service.spec.publish_not_ready_addresses:
            fqdn = f"{p.spec.hostname}.{p.spec.subdomain}.{ns}.svc"
            entries.append((p.status.pod_ip, [fqdn, f"{fqdn}.{DOMAIN}"]))
    for s in services:
        selector = s.spec.selector or {}
        if not selector:
            continue
        names = [s.metadata.name, f"{s.metadata.name}.{ns}", f"{s.metadata.name}.{ns}.svc",
                 f"{s.metadata.name}.{ns}.svc.{DOMAIN}"]
        for p in alive:
            labels = p.metadata.labels or {}
            if all(labels.get(k) == v for k, v in selector.items()) and (
                    ready(p) or (s.spec.cluster_ip == "None" and s.spec.publish_not_ready_addresses)):
                entries.append((p.status.pod_ip, names))
    return entries


def _write_keys(directory: Path, data: dict[str, bytes], items: list[Any] | None) -> Path:
    """A Secret's or ConfigMap's keys as files (only `items`, at their paths, when the volume names some)."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    chosen = {i.key: i.path for i in items} if items else {k: k for k in data}
    for key, path in chosen.items():
        if key not in data:
            raise PodError(f"the volume's source has no key {key!r} (it has {', '.join(sorted(data))})")
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != data[key]:
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(data[key])
            tmp.chmod(0o600)
            os.replace(tmp, target)
    return directory


def probe_ready(url: str) -> bool:
    """The readiness probe's answer: an HTTP status below 400 (TLS not verified, as a kubelet's probes)."""
    import ssl
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=1.0, context=ssl._create_unverified_context()) as r:
            return r.status < 400
    except OSError:
        return False

