"""The connection probe against a real TCP backend: when a connection's end came is bracketed by
the probe's look before the one that saw it, and its own stalls are measured where they overlap."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from harness.probes.connections import Connection, ConnectionProbe
from harness.timeline import Timeline


def _backend(close_after: float) -> tuple[socket.socket, threading.Thread]:
    """Names itself, echoes every line, and closes each connection `close_after` s after it opened."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        conn.sendall(b"pod-1 10.0.0.1\n")
        conn.settimeout(0.05)
        until = time.monotonic() + close_after
        while time.monotonic() < until:
            try:
                data = conn.recv(4096)
            except TimeoutError:
                continue
            if not data:
                break
            conn.sendall(data)
        # FIN first, then read until the probe closes its side: a line it sent meanwhile left unread
        # would make close() answer with a reset, and the closing is what the tests look at.
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(2.0)
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass
        conn.close()

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return server, thread


def test_a_closed_connection_is_bracketed_between_two_looks_of_the_probe() -> None:
    server, _ = _backend(close_after=1.2)
    timeline = Timeline()
    probe = ConnectionProbe(("127.0.0.1", server.getsockname()[1], None), 2, timeline, "web", interval=0.2).start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(c.ended for c in probe.snapshot()):
            time.sleep(0.05)
        for conn in probe.snapshot():
            assert conn.ended is not None and conn.ended_after is not None and conn.how == "closed"
            assert conn.opened < conn.ended_after <= conn.ended
            assert conn.ended - conn.ended_after < 1.0  # the loop looks every 0.1 s on an idle machine
            assert len(conn.answers) >= 3
    finally:
        probe.stop()
        server.close()


def test_the_longest_silence_and_the_probes_stalls_across_it() -> None:
    conn = Connection(0, 0.0, "pod", "peer", answers=[1.0, 1.5, 4.0, 4.5])
    assert conn.longest_silence(0.5, 6.0) == (1.5, 4.0) and conn.silences(0.5, 6.0) == 2.5
    assert conn.longest_silence(4.2, 9.0) == (4.5, 9.0)  # the open one, up to the end
    probe = ConnectionProbe(("127.0.0.1", 1, None), 0, Timeline(), "web")
    probe.stalls = [(1.0, 1.2), (3.0, 3.8), (8.0, 8.5)]
    assert abs(probe.stalled(1.5, 4.0) - 0.8) < 1e-9 and probe.stalled(4.0, 7.0) == 0.0
