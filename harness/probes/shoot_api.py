"""Write and read probes of a shoot's API, through the load balancer in front of its kube-apiservers.

Every `interval` the writer creates a new ConfigMap (one per sequence number, so each acknowledged
write can be looked for at the end) and reads the last acknowledged one back; requests leave from
the client namespace of `via_zone`, as a client in that zone would reach the shoot. A read-back
answered 404 is recorded as such (READ_BACK_GONE): the acknowledged write is gone. Samples go on
the scenario's timeline in the same shape as the etcd probes' (harness.probes.samples), so the
same validators compute the shoot API's write gaps and lost writes.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import CapabilityMissing, HarnessError
from harness.kube import cluster
from harness.probes import heap
from harness.probes.availability import ProbeHistory, canary
from harness.probes.samples import Sample
from harness.providers.base import reach
from harness.topology import Seed
from harness.netns import NsHTTPSConnection
from harness.timeline import Timeline

NAMESPACE = "default"
PROBE_LABEL = "ha-harness/probe"
MEMBER = "shoot-api"
# How a read sample's error starts when the read-back found no such object: a lost write.
READ_BACK_GONE = "gone (HTTP 404)"


class ShootApiError(HarnessError):
    """A request to the shoot API failed (unreachable, timed out or refused); `status`: the HTTP
    status when the API answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ShootApiClient:
    """The shoot's admin identity over one persistent HTTPS connection, reopened after a failure."""

    def __init__(self, address: str, netns: str | None, pki_dir: Path, timeout: float,
                 dial: tuple[str, int] | None = None) -> None:
        self.address, self.netns, self.timeout, self.dial = address, netns, timeout, dial
        self.context = ssl.create_default_context(cafile=str(pki_dir / "ca.crt"))
        self.context.load_cert_chain(str(pki_dir / "admin.crt"), str(pki_dir / "admin.key"))
        self._conn: NsHTTPSConnection | None = None

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        if self._conn is None:
            self._conn = NsHTTPSConnection(self.address, 443, self.timeout, self.netns, self.context, self.dial)
        try:
            self._conn.request(method, path, json.dumps(body) if body is not None else None,
                               {"Content-Type": "application/json", "Accept": "application/json"})
            resp = self._conn.getresponse()
            payload = json.loads(resp.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            raise ShootApiError(f"{method} {path}: {type(e).__name__}: {e}") from None
        if resp.status >= 300:
            raise ShootApiError(f"{method} {path}: HTTP {resp.status}: {payload.get('message', '')}", resp.status)
        return resp.status, payload

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def shoot_pki(seed: Seed, namespace: str, into: Path) -> Path:
    """The shoot's CA and admin credentials, from the Secret its deployment made."""
    from kubernetes import client as k8s

    from harness.kube.agent import PKI_SECRET

    with cluster.api_errors(f"reading {namespace}/{PKI_SECRET}"):
        secret = k8s.CoreV1Api(cluster.connect(seed.kube)).read_namespaced_secret(PKI_SECRET, namespace)
    for key in ("ca.crt", "admin.crt", "admin.key"):
        (into / key).write_bytes(base64.b64decode(secret.data[key]))
        (into / key).chmod(0o600)
    return into


def load_balancer(seed: Seed, namespace: str) -> str:
    """The shoot API's load balancer address: the seed's own (local provider), or the one its
    cloud published on the control plane's kube-apiserver Service."""
    address = seed.shoot_api or cluster.load_balancer_address(cluster.connect(seed.kube), namespace, "kube-apiserver")
    if address is None:
        raise CapabilityMissing(f"the Service {namespace}/kube-apiserver has no load balancer address "
                                "(status.loadBalancer.ingress is empty): the seed published none")
    return address


class ShootApiProbe:
    """`vantages`: what stands in `via_zone` (an environment or an etcd view, Vantages.reach)."""

    def __init__(self, seed: Seed, namespace: str, timeline: Timeline, vantages: object, via_zone: str,
                 interval: float = 0.1, timeout: float = 1.0) -> None:
        address = load_balancer(seed, namespace)
        host, port, netns = reach(vantages, via_zone, address, 443)
        self._tmp = tempfile.TemporaryDirectory(prefix="shoot-pki-")
        pki = shoot_pki(seed, namespace, Path(self._tmp.name))
        dial = None if (host, port) == (address, 443) else (host, port)
        self.client = lambda: ShootApiClient(address, netns, pki, timeout, dial)
        self.timeline = timeline
        self.interval = interval
        self.timeout = timeout
        self.history = ProbeHistory(f"probe-{uuid.uuid4().hex[:8]}-", via_zone, {}, path=MEMBER)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="probe-shoot-api", daemon=True)
        # Its own record of the harness's stalls, for the write gaps and latencies judged on it.
        self._canary = threading.Thread(target=canary, args=(self._stop, self.history.samples.append, timeline.now),
                                        name="probe-shoot-api-canary", daemon=True)
        self._thaw: Callable[[], None] = lambda: None

    def start(self) -> ShootApiProbe:
        self._thaw = heap.hold()
        self._thread.start()
        self._canary.start()
        self.timeline.mark("probe", "start", target=MEMBER, via_zone=self.history.via_zone, interval=self.interval)
        return self

    def stop(self) -> ProbeHistory:
        self._stop.set()
        self._thread.join(timeout=5)
        self._canary.join(timeout=5)
        self._thaw()
        self.timeline.mark("probe", "stop", target=MEMBER, samples=len(self.history.samples))
        return self.history

    def _loop(self) -> None:
        client, seq, acked, record = self.client(), 0, 0, self.history.samples.append
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                seq += 1
                name = configmap_name(self.history.prefix, seq)
                body = {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {PROBE_LABEL: self.history.prefix[:-1]}},
                        "data": {"t": f"{self.timeline.now():.6f}"}}
                t0 = self.timeline.now()
                try:
                    _, created = client.call("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", body)
                    rev = int(created["metadata"]["resourceVersion"])
                    record(Sample("write", MEMBER, t0, self.timeline.now(), True, seq=seq, revision=rev))
                    acked = seq
                except ShootApiError as e:
                    record(Sample("write", MEMBER, t0, self.timeline.now(), False, seq=seq, error=str(e)[-160:]))
                if acked:
                    t0 = self.timeline.now()
                    try:
                        client.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps/"
                                           f"{configmap_name(self.history.prefix, acked)}")
                        record(Sample("read", MEMBER, t0, self.timeline.now(), True, seq=acked))
                    except ShootApiError as e:
                        error = f"{READ_BACK_GONE}: {str(e)[-120:]}" if e.status == 404 else str(e)[-160:]
                        record(Sample("read", MEMBER, t0, self.timeline.now(), False, seq=acked, error=error))
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))
        finally:
            client.close()

    def present(self) -> set[int]:
        """Sequence numbers of the probe's ConfigMaps the shoot holds now (a quorum read)."""
        client = self.client()
        try:
            _, listed = client.call("GET", f"/api/v1/namespaces/{NAMESPACE}/configmaps"
                                           f"?labelSelector={PROBE_LABEL}%3D{self.history.prefix[:-1]}")
        finally:
            client.close()
        names = [item["metadata"]["name"] for item in listed.get("items", [])]
        return {int(n[len(self.history.prefix):]) for n in names if n[len(self.history.prefix):].isdigit()}

    def close(self) -> None:
        self._tmp.cleanup()


def configmap_name(prefix: str, seq: int) -> str:
    return f"{prefix}{seq:08d}"


def gone_on_read_back(history: ProbeHistory) -> list[int]:
    """Acknowledged writes a read-back found missing (404): each is a lost write, even if the
    object were back by the end."""
    return sorted({s.seq for s in history.samples
                   if s.kind == "read" and not s.ok and s.seq is not None and (s.error or "").startswith(READ_BACK_GONE)})


def read_back_errors(history: ProbeHistory) -> list[str]:
    """Read-backs that failed without an answer about the object (timeout, 5xx, refused): they
    show the API unavailable, not the write lost; the final listing decides about those writes."""
    return [f"{configmap_name(history.prefix, s.seq or 0)}: {s.error}" for s in history.samples
            if s.kind == "read" and not s.ok and not (s.error or "").startswith(READ_BACK_GONE)]
