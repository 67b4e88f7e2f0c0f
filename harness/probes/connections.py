"""Long-lived TCP connections through a Service's load balancer (KEP-3458), each recorded with where
it went and how it ended.

The backend is harness.kube.echo: on connecting it names its pod and the peer it sees, then echoes
every line. Every `interval` s the probe sends each open connection a line and notes when the echo
comes back; a connection ends when the peer resets it ("reset"), closes it ("closed") or a send
fails ("error: ..."), and the moment is recorded. The probe observes only: which connections
count, and how long a silence may be, the judge decides (a silence still open at the end of a
window counts up to the window's end).
"""

from __future__ import annotations

import selectors
import socket
import threading
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from harness import netns
from harness.timeline import Timeline

INTERVAL = 0.5  # s between the lines sent on each connection
# The loop looks at least every 0.1 s; a look this much later than the one before is a stall of the
# harness: an end or an echo seen then may have come that much earlier.
STALL_S = 0.25
CONNECT_TIMEOUT_S = 5.0
EVENT = "connection"


@dataclass
class Connection:
    index: int
    opened: float  # timeline time the first line (the pod's name) arrived
    pod: str
    peer: str  # the address the pod saw the connection come from
    answers: list[float] = field(default_factory=list)  # timeline times of the echoes
    ended: float | None = None
    how: str | None = None  # reset, closed, error: ...
    buffer: bytes = b""
    ended_after: float | None = None  # the probe's look before the one that saw the end: it came after

    def silences(self, start: float, end: float) -> float:
        """The longest stretch within [start, end] without an echo, the open one up to `end`
        (or up to the connection's end) included."""
        a, b = self.longest_silence(start, end)
        return b - a

    def longest_silence(self, start: float, end: float) -> tuple[float, float]:
        """Where that stretch lies: (its start, its end)."""
        stop = min(end, self.ended) if self.ended is not None else end
        times = [start] + [t for t in self.answers if start < t <= stop] + [stop]
        return max(zip(times, times[1:]), key=lambda ab: ab[1] - ab[0], default=(start, start))


def _open(address: str, port: int, namespace: str | None) -> socket.socket:
    with netns.entered(namespace) if namespace else nullcontext():
        sock = socket.create_connection((address, port), CONNECT_TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _first_line(sock: socket.socket) -> tuple[str, str, bytes]:
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed before the backend named itself")
        data += chunk
    line, _, rest = data.partition(b"\n")
    pod, _, peer = line.decode(errors="replace").partition(" ")
    return pod, peer, rest


class ConnectionProbe:
    """`count` connections to the load balancer at `endpoint` (address, port, network namespace to
    open them from, None for here), held and spoken on until stopped."""

    def __init__(self, endpoint: tuple[str, int, str | None], count: int, timeline: Timeline, service: str,
                 interval: float = INTERVAL) -> None:
        self.endpoint, self.count, self.timeline, self.service, self.interval = endpoint, count, timeline, service, interval
        self.connections: list[Connection] = []
        self.stalls: list[tuple[float, float]] = []  # (last look, late look) timeline times
        self._socks: dict[int, socket.socket] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"connections-{service}", daemon=True)

    def start(self) -> ConnectionProbe:
        """Open every connection (each must name its backend) before the loop starts."""
        address, port, namespace = self.endpoint
        for i in range(self.count):
            sock = _open(address, port, namespace)
            sock.settimeout(CONNECT_TIMEOUT_S)
            pod, peer, rest = _first_line(sock)
            sock.setblocking(False)
            conn = Connection(i, self.timeline.now(), pod, peer, buffer=rest)
            self.connections.append(conn)
            self._socks[i] = sock
            self.timeline.mark(EVENT, f"{self.service} #{i} opened", pod=pod, peer=peer)
        self.timeline.mark("probe", "start", target=EVENT, service=self.service, count=self.count,
                           interval=self.interval)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        """Closes every connection; the record of each and of the probe's stalls, for the run's
        file (connections_of reads it back)."""
        self._stop.set()
        self._thread.join(timeout=10)
        for sock in self._socks.values():
            sock.close()
        self._socks.clear()
        kept = [{k: v for k, v in asdict(c).items() if k != "buffer"} for c in self.snapshot()]
        return {"probe": EVENT, "service": self.service, "connections": kept, "stalls": list(self.stalls)}

    def snapshot(self) -> list[Connection]:
        with self._lock:
            return [Connection(c.index, c.opened, c.pod, c.peer, list(c.answers), c.ended, c.how,
                               ended_after=c.ended_after) for c in self.connections]

    def stalled(self, start: float, end: float) -> float:
        """Seconds of [start, end] in which the probe's loop could not look (see STALL_S)."""
        with self._lock:
            return sum(max(0.0, min(end, b) - max(start, a)) for a, b in self.stalls)

    def _end(self, conn: Connection, how: str, after: float) -> None:
        with self._lock:
            conn.ended, conn.how, conn.ended_after = self.timeline.now(), how, after
        self._socks.pop(conn.index).close()
        self.timeline.mark(EVENT, f"{self.service} #{conn.index} ended: {how}", pod=conn.pod, peer=conn.peer)

    def _loop(self) -> None:
        selector = selectors.DefaultSelector()
        for i, sock in self._socks.items():
            selector.register(sock, selectors.EVENT_READ, self.connections[i])
        next_send = looked = self.timeline.now()
        while not self._stop.is_set() and self._socks:
            if self.timeline.now() >= next_send:
                for conn in [c for c in self.connections if c.index in self._socks]:
                    try:
                        self._socks[conn.index].send(b"ping\n")
                    except BlockingIOError:
                        pass  # the send buffer is full: the peer stopped reading, the silence shows it
                    except ConnectionResetError:
                        selector.unregister(self._socks[conn.index])
                        self._end(conn, "reset", looked)
                    except OSError as e:
                        selector.unregister(self._socks[conn.index])
                        self._end(conn, f"error: {e}", looked)
                next_send += self.interval
            events = selector.select(timeout=max(0.0, min(0.1, next_send - self.timeline.now())))
            now = self.timeline.now()
            if now - looked > STALL_S:
                with self._lock:
                    self.stalls.append((looked, now))
            for key, _ in events:
                conn: Connection = key.data
                try:
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    data, how = b"", "reset"
                except OSError as e:
                    data, how = b"", f"error: {e}"
                else:
                    how = "closed"
                if not data:
                    selector.unregister(key.fileobj)
                    self._end(conn, how, looked)
                    continue
                with self._lock:
                    conn.buffer += data
                    while b"\n" in conn.buffer:
                        _, _, conn.buffer = conn.buffer.partition(b"\n")
                        conn.answers.append(now)
            looked = now
        selector.close()


def node_of(conn: Connection, node_addresses: dict[str, str], pod_nodes: Callable[[str], str | None]) -> str | None:
    """The node a connection went through: the peer its pod saw when that is a node (kube-proxy
    masqueraded it on the way to a pod elsewhere), else the pod's own node (a local endpoint sees
    the load balancer's address)."""
    by_address = {address: node for node, address in node_addresses.items()}
    return by_address.get(conn.peer) or pod_nodes(conn.pod)


def connections_of(record: dict[str, Any]) -> list[Connection]:
    """The connections of a record ConnectionProbe.stop() wrote."""
    return [Connection(**c) for c in record["connections"]]
