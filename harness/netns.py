"""Thin wrappers over `ip`, `nft` and setns(2); every failure names the command and its output."""

from __future__ import annotations

import ctypes
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator, Sequence

from harness.errors import HarnessError, PrerequisiteError

NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)
_setns_lock = threading.Lock()


class CommandError(HarnessError):
    def __init__(self, argv: Sequence[str], returncode: int, output: str) -> None:
        super().__init__(f"`{' '.join(argv)}` failed with exit code {returncode}: {output.strip()[-800:]}")
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output


def require_tools(*names: str) -> None:
    missing = [n for n in names if shutil.which(n) is None]
    if missing:
        raise PrerequisiteError(
            f"missing tool(s): {', '.join(missing)}; install them (Debian: apt-get install iproute2 nftables), "
            "or run `make run`, which installs them when run as root"
        )


def run(argv: Sequence[str], timeout: float = 10.0, check: bool = True, stdin: str | None = None) -> str:
    try:
        proc = subprocess.run(
            list(argv), input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise CommandError(argv, -1, f"timed out after {timeout}s") from None
    except FileNotFoundError:
        raise PrerequisiteError(f"command not found: {argv[0]}") from None
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr + proc.stdout)
    return proc.stdout


def ns_run(ns: str, argv: Sequence[str], timeout: float = 10.0, check: bool = True, stdin: str | None = None) -> str:
    return run(["ip", "netns", "exec", ns, *argv], timeout=timeout, check=check, stdin=stdin)


def list_netns() -> list[str]:
    out = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


# A pod sandbox (harness.kube.sandbox) has a network namespace of its own, held by a process whose
# last argument is POD_MARK + its node's namespace + "/" + the pod: a node's faults and the region's
# teardown reach the pod's processes through it.
POD_MARK = "ha-harness-pod-on:"


def netns_pids(ns: str, with_pods: bool = False) -> list[int]:
    """The processes in `ns`; `with_pods`: also those of the pod sandboxes of the node `ns` is."""
    out = run(["ip", "netns", "pids", ns], check=False)
    pids = [int(p) for p in out.split() if p.isdigit()]
    return pids + (pod_pids(ns) if with_pods else [])


def pod_pids(ns: str) -> list[int]:
    """The processes of the pod sandboxes on the node whose namespace is `ns`."""
    seen: list[tuple[int, int, str]] = []  # pid, its network namespace's inode, its last argument
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            inode = os.stat(f"/proc/{entry}/ns/net").st_ino
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                last = f.read().rstrip(b"\0").rsplit(b"\0", 1)[-1].decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        seen.append((int(entry), inode, last))
    pods = {inode for _, inode, last in seen if last.startswith(f"{POD_MARK}{ns}/")}
    # A holder that never left the namespace it was started in (its unshare failed) names no pod's.
    pods.discard(os.stat("/proc/self/ns/net").st_ino)
    return sorted(pid for pid, inode, _ in seen if inode in pods)


def nft(ns: str, script: str, timeout: float = 10.0) -> None:
    """Apply an nft script atomically inside a namespace (all of it or nothing)."""
    ns_run(ns, ["nft", "-f", "-"], stdin=script, timeout=timeout)


@contextmanager
def entered(ns: str) -> Iterator[None]:
    """Run the body with the calling thread inside network namespace `ns`.

    Only this thread moves; sockets created inside stay bound to `ns` after leaving.
    """
    target = os.open(NETNS_DIR / ns, os.O_RDONLY)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise PrerequisiteError(f"setns into {ns} failed: {os.strerror(err)} (the harness needs CAP_SYS_ADMIN)")
        try:
            yield
        finally:
            if _libc.setns(home, CLONE_NEWNET) != 0:  # pragma: no cover - would leave the thread stranded
                raise PrerequisiteError(f"setns back from {ns} failed: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(target)
        os.close(home)


class NsHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection whose socket is opened inside network namespace `netns` (None: here)."""

    def __init__(self, host: str, port: int, timeout: float, netns: str | None) -> None:
        super().__init__(host, port, timeout=timeout)
        self._netns = netns

    def connect(self) -> None:
        if self._netns is None:
            self.sock = socket.create_connection((self.host, self.port), self.timeout)
        else:
            with entered(self._netns):
                self.sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NsHTTPSConnection(http.client.HTTPSConnection):
    """The same over TLS, for the kube-apiservers of a shoot behind its load balancer. `dial`: the
    address to open the TCP connection to instead (a forward), TLS still checking `host`."""

    def __init__(self, host: str, port: int, timeout: float, netns: str | None, context: ssl.SSLContext,
                 dial: tuple[str, int] | None = None) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._netns, self._dial, self._context = netns, dial, context

    def connect(self) -> None:
        if self._dial is not None:
            with entered(self._netns) if self._netns else nullcontext():
                sock = socket.create_connection(self._dial, self.timeout)
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        elif self._netns is None:
            super().connect()
        else:
            with entered(self._netns):
                super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # headers and body leave at once


def udp_round_trips(src_ns: str, dst_ns: str, dst_address: str, count: int = 50, timeout: float = 2.0) -> list[float]:
    """Milliseconds for a datagram from `src_ns` to an echo in `dst_ns` (on `dst_address`) and
    back, one at a time: what a path's added latency and jitter come to."""
    with entered(dst_ns):
        echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with entered(src_ns):
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind((dst_address, 0))
    echo.settimeout(timeout)

    def answer() -> None:
        try:
            for _ in range(count):
                data, peer = echo.recvfrom(2048)
                echo.sendto(data, peer)
        except OSError:
            pass

    threading.Thread(target=answer, daemon=True).start()
    out = []
    with echo, tx:
        tx.settimeout(timeout)
        for i in range(count):
            began = time.monotonic()
            tx.sendto(i.to_bytes(4, "big"), echo.getsockname())
            tx.recv(2048)
            out.append((time.monotonic() - began) * 1000)
    return out
