"""The etcd client's one connection is opened again whenever it is gone: closed by the client after
a failure, or by the server after an answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.etcd_gateway import EtcdClient


class _Closing(BaseHTTPRequestHandler):
    """Answers every request, then closes the connection (`Connection: close`), as a gateway of a
    member that is stopping may."""

    protocol_version = "HTTP/1.1"
    connections: list[int] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"header": {"revision": "7"}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def setup(self) -> None:
        super().setup()
        type(self).connections.append(self.client_address[1])

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def closing_server() -> Iterator[str]:
    _Closing.connections = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Closing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_connection_the_server_closed_after_its_answer_is_opened_again(closing_server: str) -> None:
    client = EtcdClient(closing_server, None, 0.25, connect_timeout=2.0)
    try:
        assert [client.put(f"/k{i}", "v") for i in range(3)] == [7, 7, 7]
    finally:
        client.close()
    assert len(_Closing.connections) == 3, "one connection per answer: each was closed by the server"
