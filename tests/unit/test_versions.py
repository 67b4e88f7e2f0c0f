"""Versions read from the running servers, with the pinned ones as the fallback."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from harness.etcd_gateway import Status
from harness.kube.cluster import KubeApiError
from harness.probes import versions
from harness.topology import KubeAccess

VERSION = {"major": "1", "minor": "99", "gitVersion": "v1.99.0-test", "gitCommit": "abc", "gitTreeState": "clean",
           "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64"}


class _Api(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps(VERSION).encode() if self.path.rstrip("/") == "/version" else b"{}"
        self.send_response(200 if self.path.rstrip("/") == "/version" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _kubeconfig(path: Path, server: str) -> KubeAccess:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "t", "cluster": {"server": server}}],
        "users": [{"name": "t", "user": {"token": "x"}}],
        "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}))
    return KubeAccess(path)


def test_the_kubernetes_version_is_the_api_servers_git_version(tmp_path: Path, api_server: str) -> None:
    assert versions.kubernetes_version(_kubeconfig(tmp_path / "kubeconfig", api_server)) == "v1.99.0-test"


def test_an_unreachable_api_server_is_a_harness_error(tmp_path: Path, api_server: str) -> None:
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    with pytest.raises(KubeApiError, match="/version"):
        versions.kubernetes_version(_kubeconfig(tmp_path / "kubeconfig", dead))


class _Members:
    def __init__(self, statuses: dict[str, Any]) -> None:
        self.statuses = statuses

    def status(self) -> dict[str, Any]:
        return self.statuses


def _status(version: str) -> Status:
    return Status(member_id=1, leader=1, raft_term=2, revision=3, raft_index=4, applied_index=4, version=version, db_size=1)


def test_the_etcd_version_is_what_the_members_report_else_the_binarys() -> None:
    got = versions.etcd_version(_Members({"a": _status("3.5.21"), "b": "timeout", "c": _status("3.5.21")}), "3.4.23")
    assert got == {"etcd_version": "3.5.21", "etcd_version_source": versions.ETCD_MEMBERS}
    mixed = versions.etcd_version(_Members({"a": _status("3.5.21"), "b": _status("3.6.0")}), "3.4.23")
    assert mixed["etcd_version"] == "3.5.21, 3.6.0"
    assert versions.etcd_version(_Members({"a": "refused"}), "3.4.23") == {
        "etcd_version": "3.4.23", "etcd_version_source": versions.ETCD_BINARY}
