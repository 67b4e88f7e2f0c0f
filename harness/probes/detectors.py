"""What the control plane's own detectors say while a fault runs: etcd's /health of each member,
whether each member has a leader and how many of its peer streams are up (its own metrics), each
kube-apiserver's /readyz, the shoot API load balancer's verdict on each target, each seed node's Ready
condition, and per zone of the seed GEP-20's "Identify a Zone outage" state. Each source is read in a thread of its own every `interval` s (a read that hangs
delays only its own detectors); a "detector" event goes on the timeline when a detector's
verdict changes, so the timeline says when each one first saw the fault. Observes only:
harness.validate.detection judges.

Verdicts: "ok"; "failing" (the detector itself says unhealthy, or its own check got no answer,
as a kubelet's probe counts a timeout); "unreadable" (the harness could not read the detector:
a gap, never taken for either verdict).
"""

from __future__ import annotations

import http.client
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.errors import CapabilityMissing, HarnessError
from harness.netns import NsHTTPSConnection
from harness.providers.base import EtcdCluster, LoadBalancerTargets, reach
from harness.topology import Seed
from harness.timeline import Timeline

EVENT = "detector"
INTERVAL = 0.1  # s: a tenth of the tightest bound a feature states on a detector
OK, FAILING, UNREADABLE = "ok", "failing", "unreadable"
KINDS = ("etcd-health", "etcd-leader", "etcd-peers", "apiserver-readyz", "load-balancer", "node-ready", "zone-outage")
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable:NoSchedule"


@dataclass(frozen=True)
class Verdict:
    kind: str  # one of KINDS
    subject: str  # the member, pod, target address or node it judges
    zone: str | None
    verdict: str  # OK | FAILING | UNREADABLE
    detail: str = ""

    @property
    def name(self) -> str:
        return f"{self.kind} {self.subject}"


@dataclass(frozen=True)
class Source:
    """One read that yields the verdicts of one or more detectors; `detectors` names them up front
    (name -> kind, subject, zone), so that a read that fails marks each of them unreadable."""

    name: str
    detectors: dict[str, tuple[str, str, str | None]]
    read: Callable[[], dict[str, tuple[bool, str]]]  # detector name -> (healthy, what it said)


def source(name: str, kind: str, subjects: dict[str, str | None],
           read: Callable[[], dict[str, tuple[bool, str]]]) -> Source:
    """A source of detectors of one kind, `read` keyed by subject."""
    def by_name() -> dict[str, tuple[bool, str]]:
        return {f"{kind} {subject}": said for subject, said in read().items()}

    return Source(name, {f"{kind} {s}": (kind, s, z) for s, z in subjects.items()}, by_name)


def etcd_sources(etcd: EtcdCluster) -> list[Source]:
    """Per member: etcd's /health; and from its metrics, whether it has a leader and how many of
    its peers' streams are active."""
    out = []
    for m in etcd.members:
        out.append(source(f"etcd-health {m.name}", "etcd-health", {m.name: m.zone},
                          lambda name=m.name: {name: etcd.member_health(name)}))
        out.append(Source(f"etcd-metrics {m.name}", {f"etcd-leader {m.name}": ("etcd-leader", m.name, m.zone),
                                                     f"etcd-peers {m.name}": ("etcd-peers", m.name, m.zone)},
                          lambda name=m.name: _from_metrics(etcd, name)))
    return out


def _from_metrics(etcd: EtcdCluster, member: str) -> dict[str, tuple[bool, str]]:
    """etcd_server_has_leader (a leader that lost its majority steps down: 0), and
    etcd_network_active_peers summed over the member's peers (a stream counts while it is up)."""
    has_leader, active = None, 0.0
    for line in etcd.metrics(member).splitlines():
        if line.startswith("etcd_server_has_leader "):
            has_leader = float(line.rsplit(" ", 1)[1])
        elif line.startswith("etcd_network_active_peers{"):
            active += float(line.rsplit(" ", 1)[1])
    want = len(etcd.members) - 1
    out = {f"etcd-peers {member}": (active >= want, f"{active:g} of {want} peers active")}
    if has_leader is not None:  # missing: unreadable, not healthy
        out[f"etcd-leader {member}"] = (has_leader == 1, f"etcd_server_has_leader {has_leader:g}")
    return out


def shoot_sources(seed: Seed, namespace: str, env: object) -> list[Source]:
    """The shoot's kube-apiservers' /readyz, each read from its own zone as its kubelet would, the
    load balancer's verdict on them (where the environment can say it), and the seed's nodes."""
    from harness.kube import cluster
    from harness.kube import placement

    api = cluster.connect(seed.kube)
    pods = [p for p in placement.observe(api, namespace) if p.component == "kube-apiserver" and p.ip and p.serving]
    if not pods:
        raise HarnessError(f"no kube-apiserver of {namespace} is Running and Ready to watch")
    out = [source(f"apiserver-readyz {p.name}", "apiserver-readyz", {p.name: p.zone},
                  lambda p=p: {p.name: _readyz(env, p.zone, p.ip or "")}) for p in pods]
    if isinstance(env, LoadBalancerTargets):
        zones = {p.ip: p.zone for p in pods}
        out.append(source("load-balancer", "load-balancer", zones,
                          lambda: {ip: (state == "UP", state) for ip, state in env.load_balancer_targets().items()
                                   if ip in zones}))
    nodes = _nodes(api)
    out.append(source("node-ready", "node-ready", {n: z for n, (z, _) in nodes.items()},
                      lambda: {n: ready for n, (_, ready) in _nodes(api).items()}))
    return out


def zone_sources(seed: Seed) -> list[Source]:
    """GEP-20's "Identify a Zone outage", per zone of the seed, from its nodes alone: failing while
    every node of the zone is NotReady or Unknown and tainted node.kubernetes.io/unreachable
    (NoSchedule). How long that must last to be called an outage is the judge's threshold."""
    from harness.kube import cluster

    api = cluster.connect(seed.kube)
    zones = sorted({v.zone for v in cluster.node_views(api) if v.zone})
    if not zones:
        raise CapabilityMissing("the seed's nodes carry no topology.kubernetes.io/zone label: no zone to watch")

    def read() -> dict[str, tuple[bool, str]]:
        views = cluster.node_views(api)
        out = {}
        for zone in zones:
            nodes = [v for v in views if v.zone == zone]
            cut = [v.name for v in nodes if not v.ready and UNREACHABLE_TAINT in v.taints]
            out[zone] = (not nodes or len(cut) < len(nodes), f"{len(cut)} of {len(nodes)} nodes NotReady and unreachable")
        return out

    return [source("zone-outage", "zone-outage", {z: z for z in zones}, read)]


_NO_VERIFY = ssl.create_default_context()
_NO_VERIFY.check_hostname, _NO_VERIFY.verify_mode = False, ssl.CERT_NONE  # as HAProxy's check-ssl verify none


def _readyz(env: object, zone: str | None, ip: str) -> tuple[bool, str]:
    host, port, ns = reach(env, zone, ip, 443)
    conn = NsHTTPSConnection(ip, port, 1.0, ns, _NO_VERIFY, dial=None if (host, port) == (ip, 443) else (host, port))
    try:
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        body = resp.read().decode(errors="replace").strip()
    except (OSError, http.client.HTTPException) as e:
        return False, f"{type(e).__name__}: {e}"[:200]
    finally:
        conn.close()
    return resp.status == 200 and body == "ok", f"HTTP {resp.status}: {body[-200:]}"


def _nodes(api: Any) -> dict[str, tuple[str | None, tuple[bool, str]]]:
    """node -> (zone, (Ready, its reason))."""
    from kubernetes import client as k8s

    from harness.kube import cluster

    with cluster.api_errors("listing the seed's nodes"):
        items = k8s.CoreV1Api(api).list_node().items
    out = {}
    for n in items:
        ready = next((c for c in n.status.conditions or [] if c.type == "Ready"), None)
        zone = (n.metadata.labels or {}).get("topology.kubernetes.io/zone")
        out[n.metadata.name] = (zone, (ready is not None and ready.status == "True",
                                       f"Ready={ready.status if ready else 'unknown'} {ready.reason if ready else ''}"))
    return out


class DetectorProbe:
    """Reads every source every `interval` s until stop(); its verdicts are the timeline's events
    (stop() returns no history)."""

    def __init__(self, sources: list[Source], timeline: Timeline, interval: float = INTERVAL) -> None:
        if not sources:
            raise CapabilityMissing("no detector to watch here")
        self.sources, self.timeline, self.interval = sources, timeline, interval
        self._last: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(s,), name=f"detector-{s.name}", daemon=True)
                         for s in sources]

    def start(self) -> DetectorProbe:
        self.timeline.mark("probe", "start", target=EVENT, interval=self.interval,
                           detectors=[name for s in self.sources for name in s.detectors])
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)
        self.timeline.mark("probe", "stop", target=EVENT)

    def sample(self, src: Source) -> list[Verdict]:
        """One read of `src`: a verdict per detector (unreadable ones when the read failed)."""
        try:
            said = src.read()
        except Exception as e:  # the seed's client raises many types: a gap, never a dead probe
            why = f"{type(e).__name__}: {e}"[-200:]
            return [Verdict(k, s, z, UNREADABLE, why) for k, s, z in src.detectors.values()]
        out = []
        for name, (kind, subject, zone) in src.detectors.items():
            if name not in said:
                out.append(Verdict(kind, subject, zone, UNREADABLE, "not in what the detector said"))
            else:
                healthy, detail = said[name]
                out.append(Verdict(kind, subject, zone, OK if healthy else FAILING, detail))
        return out

    def _record(self, verdicts: list[Verdict], at: float) -> None:
        with self._lock:
            for v in verdicts:
                if self._last.get(v.name) != v.verdict:
                    self._last[v.name] = v.verdict
                    self.timeline.mark(EVENT, v.name, detector=v.kind, subject=v.subject, zone=v.zone, verdict=v.verdict,
                                       detail=v.detail, asked=at)

    def _loop(self, src: Source) -> None:
        while not self._stop.is_set():
            began, asked = time.monotonic(), self.timeline.now()
            self._record(self.sample(src), asked)
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))
