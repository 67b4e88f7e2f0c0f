"""etcd-wrapper's part in etcd-druid's pods, standing in for it: no release of
github.com/gardener/etcd-wrapper is served here (docs/design/dependencies.md), so this one module
does what its `start-etcd` does, with druid's arguments as druid writes them, and runs the real etcd.

1. Asks the backup-restore sidecar (the real etcd-backup-restore) for its initialisation status
   until it says `Successful`; when it says `New`, triggers it, in `sanity` mode after a graceful
   exit (recorded in /var/etcd/data/exit_code) and `full` otherwise.
2. Fetches etcd's configuration from the sidecar's /config (the ConfigMap druid generated, with
   the member's name, URLs and cluster state filled in by the sidecar) into $HOME/etcd.conf.yaml.
3. Runs etcd with that file, unchanged, and serves /readyz on the wrapper port: ready while a
   linearizable read (etcd's /health) through the member's client URL succeeds, checked every 2 s.
   TLS as the configuration says (the client certificate druid mounts).

    python -m harness.kube.etcd_wrapper --etcd=BIN start-etcd --backup-restore-host-port=H:P ...
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

EXIT_CODE_FILE = Path("/var/etcd/data/exit_code")
READY_INTERVAL_S = 2.0
REQUEST_TIMEOUT_S = 10.0  # etcd-wrapper's client's
# etcd-backup-restore v0.40.0 takes 11-13 s to serve /config while no member answers yet (a new
# cluster: its member list waits out 5 s twice), longer than etcd-wrapper's 10 s; the stand-in waits.
CONFIG_TIMEOUT_S = 60.0


def _say(message: str) -> None:
    print(f"etcd-wrapper: {message}", file=sys.stderr, flush=True)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m harness.kube.etcd_wrapper", description=__doc__.split("\n\n")[0])
    p.add_argument("--etcd", required=True, help="the etcd binary to run")
    p.add_argument("command", choices=["start-etcd"])
    p.add_argument("--backup-restore-host-port", default=":8080")
    p.add_argument("--etcd-server-name", default="")
    p.add_argument("--backup-restore-tls-enabled", default="false", choices=["true", "false"])
    p.add_argument("--backup-restore-ca-cert-bundle-path", default="")
    p.add_argument("--etcd-client-cert-path", default="")
    p.add_argument("--etcd-client-key-path", default="")
    p.add_argument("--etcd-client-port", type=int, default=2379)
    p.add_argument("--etcd-wrapper-port", type=int, default=9095)
    return p.parse_args(argv)


class Sidecar:
    """The backup-restore server's HTTP API, as etcd-wrapper calls it."""

    def __init__(self, args: argparse.Namespace) -> None:
        tls = args.backup_restore_tls_enabled == "true"
        host = args.backup_restore_host_port
        self.base = f"{'https' if tls else 'http'}://{host if not host.startswith(':') else 'localhost' + host}"
        self.context = ssl.create_default_context(cafile=args.backup_restore_ca_cert_bundle_path) if tls else None

    def get(self, path: str, timeout: float = REQUEST_TIMEOUT_S) -> bytes:
        with urllib.request.urlopen(self.base + path, timeout=timeout, context=self.context) as r:
            return r.read()


def initialise(sidecar: Sidecar) -> None:
    """Step 1: until the sidecar says its initialisation succeeded."""
    said = ""
    while True:
        try:
            status = sidecar.get("/initialization/status").decode().strip()
        except OSError as e:
            status = f"unreachable ({e})"
        if status != said:
            _say(f"backup-restore's initialisation: {status}")
            said = status
        if status == "Successful":
            return
        if status == "New":
            try:
                previous = EXIT_CODE_FILE.read_text().strip()
            except OSError:
                previous = ""
            mode = "sanity" if previous == "0" else "full"
            try:
                sidecar.get(f"/initialization/start?mode={mode}")
                _say(f"triggered its initialisation in {mode} mode (previous exit: {previous or 'none recorded'})")
            except OSError as e:
                _say(f"cannot trigger its initialisation: {e}")
        time.sleep(1.0)


def _client_context(args: argparse.Namespace, config: dict[str, Any]) -> ssl.SSLContext | None:
    security = config.get("client-transport-security") or {}
    if not security.get("cert-file"):
        return None
    context = ssl.create_default_context(cafile=security.get("trusted-ca-file") or None)
    if args.etcd_client_cert_path:
        context.load_cert_chain(args.etcd_client_cert_path, args.etcd_client_key_path)
    return context


def serve_readiness(args: argparse.Namespace, config: dict[str, Any]) -> None:
    """Step 3's /readyz, from a read through the member's client URL every READY_INTERVAL_S."""
    client = _client_context(args, config)
    url = f"{'https' if client else 'http'}://{args.etcd_server_name or 'localhost'}:{args.etcd_client_port}/health"
    ready = threading.Event()

    def check() -> None:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5.0, context=client) as r:
                    ok = json.loads(r.read()).get("health") == "true"
            except (OSError, ValueError):
                ok = False
            ready.set() if ok else ready.clear()
            time.sleep(READY_INTERVAL_S)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200 if self.path == "/readyz" and ready.is_set() else
                               503 if self.path == "/readyz" else 404)
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("", args.etcd_wrapper_port), Handler)
    security = config.get("client-transport-security") or {}
    if security.get("cert-file"):  # as etcd-wrapper: HTTPS with etcd's server certificate
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(security["cert-file"], security["key-file"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=check, daemon=True).start()
    threading.Thread(target=server.serve_forever, daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    import yaml

    args = parse(sys.argv[1:] if argv is None else argv)
    sidecar = Sidecar(args)
    initialise(sidecar)
    path = Path(os.environ.get("HOME", "/root")) / "etcd.conf.yaml"
    while True:
        try:
            path.write_bytes(sidecar.get("/config", CONFIG_TIMEOUT_S))
            break
        except OSError as e:
            _say(f"cannot fetch etcd's configuration: {e}")
            time.sleep(1.0)
    config = yaml.safe_load(path.read_text())
    _say(f"starting etcd as {config.get('name')} ({config.get('initial-cluster-state')} cluster {config.get('initial-cluster')})")
    etcd = subprocess.Popen([args.etcd, f"--config-file={path}"])
    stopping = threading.Event()

    def stop(*_: Any) -> None:
        stopping.set()
        etcd.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    serve_readiness(args, config)
    status = etcd.wait()
    code = 0 if stopping.is_set() and status in (0, -signal.SIGTERM) else (status or 1)
    try:
        EXIT_CODE_FILE.write_text(str(code))
    except OSError as e:
        _say(f"cannot record the exit code: {e}")
    _say(f"etcd exited with {status}")
    return code


if __name__ == "__main__":
    sys.exit(main())
