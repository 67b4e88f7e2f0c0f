"""A pod's port on a local address, through the Kubernetes API, as `kubectl port-forward` does.

Each connection accepted on the local port opens a port-forward of its own to the pod (the API
server asks the kubelet of the pod's node), so a connection breaks when that path breaks and the
next one finds the pod wherever it runs then. Clients of any kind (the harness's etcd client, a
locust process) connect to the local address as to the pod itself.

Forwarded to a relay pod (harness.kube.vantage), each connection is then handed on with HTTP
CONNECT to a target the relay opens from its own zone.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import Any, Callable

from harness.kube import cluster
from harness.topology import KubeAccess

# Opens that may wait on an unreachable kubelet at once; later connections are refused at once, as
# a probe would see it anyway, instead of piling up threads that wait the API server's dial timeout.
PENDING_MAX = 4
CHUNK = 256 * 1024


class PortForward:
    """127.0.0.1:`local_port` forwards to `port` of pod `namespace/pod` until close(); with
    `connect_to`, the pod is a relay and each connection goes on to the "host:port" it returns
    (asked anew for each connection: a target that moved is found)."""

    def __init__(self, access: KubeAccess, namespace: str, pod: str, port: int,
                 connect_to: Callable[[], str] | None = None) -> None:
        self.access, self.namespace, self.pod, self.port = access, namespace, pod, port
        self.connect_to = connect_to
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.local_port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pending = 0
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, name=f"port-forward {namespace}/{pod}:{port}", daemon=True).start()

    def close(self) -> None:
        """Stop listening and cut every connection still forwarded."""
        self._closed = True
        self._listener.close()
        with self._lock:
            open_now = list(self._open)
        for sock in open_now:
            _close(sock)

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                if self._pending >= PENDING_MAX:
                    _close(client)
                    continue
                self._pending += 1
                self._open.add(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        remote: Any = None
        try:
            try:
                remote = self._open_remote(client)
            finally:
                with self._lock:
                    self._pending -= 1
            if remote is not None and not self._closed:
                _pump(client, remote)
        finally:
            with self._lock:
                self._open.discard(client)
            _close(client)
            if remote is not None:
                _close(remote)

    def _open_remote(self, client: socket.socket) -> Any:
        """The pod end of one connection, or None when the API or the kubelet refused it, or the
        relay could not reach the target before the client gave up."""
        from kubernetes import client as k8s
        from kubernetes.stream import portforward

        api = cluster.connect(self.access)  # one client per open: the stream call swaps its request method
        try:
            target = self.connect_to() if self.connect_to is not None else None
            forward = portforward(k8s.CoreV1Api(api).connect_get_namespaced_pod_portforward, self.pod, self.namespace,
                                  ports=str(self.port))
            remote = forward.socket(self.port)._socket
        except Exception:  # the API, or the pod's kubelet, unreachable or refusing: the connection fails
            return None
        finally:
            api.close()
        if target is not None and not _connected(remote, target, client):
            _close(remote)
            return None
        return remote


def _connected(relay: socket.socket, target: str, client: socket.socket, timeout: float = 30.0) -> bool:
    """Ask the relay to open a connection to `target`; True once it says it did. False at once
    when the client hangs up first: a client that timed out (its request may sit unread in the
    socket) frees its place for the next, which finds the target as soon as it is reachable again,
    instead of waiting out the relay's own 10 s for a connection nobody wants any more."""
    poller = select.poll()
    poller.register(relay, select.POLLIN)
    poller.register(client, select.POLLRDHUP)  # the peer's close, seen behind unread data too
    gone = select.POLLRDHUP | select.POLLHUP | select.POLLERR
    deadline = time.monotonic() + timeout
    try:
        relay.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 16384:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            events = dict(poller.poll(left * 1000))
            if events.get(client.fileno(), 0) & gone:
                return False
            if relay.fileno() in events:
                chunk = relay.recv(1)  # byte by byte: nothing past the header may be read here
                if not chunk:
                    return False
                head += chunk
        return head.split(b" ", 2)[1:2] == [b"200"]
    except OSError:
        return False


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes or fails."""
    peers = {a: b, b: a}
    while True:
        try:
            ready, _, _ = select.select(list(peers), [], [])
            for sock in ready:
                data = sock.recv(CHUNK)
                if not data:
                    return
                peers[sock].sendall(data)
        except (OSError, ValueError):  # reset, or closed under us by close()
            return


def _close(sock: socket.socket) -> None:
    """Close after reading what is still queued: a socket closed with unread data resets its peer
    (the Kubernetes client's forwarding thread would die on that reset, noisily)."""
    try:
        sock.setblocking(False)
        while sock.recv(CHUNK):
            pass
    except OSError:
        pass
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
