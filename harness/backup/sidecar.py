"""The backup sidecar: what etcd-backup-restore does beside each etcd member, small.

One runs beside every member, in the member's network namespace (it shares the member's fate). The
sidecar whose member leads is the leading one and the only one that writes to the store: on taking
the lead it carries on from the newest revision in the store (or takes a full snapshot when the
store has none, or the watch's history was compacted away), then takes a full snapshot every
`--full-period` and uploads the watch events buffered since the last upload as a delta snapshot
every `--delta-period`. Events not yet uploaded die with it: that is the data a lost cluster loses.
A failed upload keeps the events for the next period and is counted. On losing the lead it uploads
what it holds, then stops.

HTTP on `--listen`: `GET /status` (JSON: leading, the last full and delta snapshots, pending events,
failed snapshots, every failure (watching, reading the store too), the last error) and `POST /snapshot/full`, `POST /snapshot/delta` (an on-demand snapshot from
the leading sidecar; 409 from the others).

    python -m harness.backup.sidecar --member http://10.77.1.11:2379 --store store.json \\
        --etcdutl BIN --workdir W --listen 10.77.1.11:8080 --full-period 3600 --delta-period 5

The store's key pair comes in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, not on the command line.
A member serving TLS is reached with `--cacert`, `--cert`, `--key` (etcd-druid's client certificate
for its sidecar) and `--server-name`, the name its serving certificate holds.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness.backup.snapshots import save_full
from harness.backup.store import BackupStore, SnapshotName, StoreSpec, encode_delta, full_name
from harness.errors import HarnessError
from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.topology import EtcdTls

STATUS_INTERVAL_S = 0.2  # how often the sidecar asks its member who leads
STORE_TIMEOUT_S = 2.0  # connecting to the store; a response may take 6 times that


class NotLeading(HarnessError):
    pass


class Sidecar:
    def __init__(self, member_url: str, store: BackupStore, etcdutl: Path, workdir: Path, full_period: float,
                 delta_period: float, request_timeout: float = 1.0, tls: EtcdTls | None = None) -> None:
        self.member_url = member_url
        self.store = store
        self.etcdutl = etcdutl
        self.workdir = workdir
        self.full_period = full_period
        self.delta_period = delta_period
        self.tls = tls
        self.client = EtcdClient(member_url, None, request_timeout, tls)
        self.lock = threading.RLock()  # one snapshot at a time; guards everything below
        self.leading = False
        self.uploaded = 0  # the newest revision the store holds, as far as this sidecar knows
        self.pending: list[dict[str, Any]] = []  # watch events after `uploaded`, not yet in the store
        self.last_full: SnapshotName | None = None
        self.last_delta: SnapshotName | None = None
        self.next_full = self.next_delta = 0.0
        self.failures = 0
        self.failed_snapshots = 0
        self.last_error: str | None = None
        self.watcher: EtcdClient | None = None
        self.stopping = threading.Event()

    # -- what it does ----------------------------------------------------------
    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                st = self.client.status()
                leads = st.leader != 0 and st.leader == st.member_id
            except EtcdRequestError:
                leads = False
            if leads and not self.leading:
                self._take_lead()
            elif not leads and self.leading:
                self._lose_lead()
            now = time.monotonic()
            if self.leading and now >= self.next_full:
                self._scheduled(self.full)
                self.next_full = now + self.full_period
            if self.leading and now >= self.next_delta:
                self._scheduled(self.delta)
                self.next_delta = now + self.delta_period
            self.stopping.wait(STATUS_INTERVAL_S)
        if self.leading:
            self._lose_lead()

    def _take_lead(self) -> None:
        with self.lock:
            self.leading = True
            self.pending = []
            try:
                self.uploaded = self.store.latest_revision()
            except Exception as e:  # the store unreachable: counted, and the lead taken again later
                self._failed("reading the store's newest revision", e)
                self.leading = False
                return
            now = time.monotonic()
            self.next_full = now if self.uploaded == 0 else now + self.full_period
            self.next_delta = now + self.delta_period
            if self.uploaded == 0:
                self._scheduled(self.full)
                self.next_full = time.monotonic() + self.full_period
            self._watch_from(self.uploaded + 1)
        self.log(f"leading: carrying on from revision {self.uploaded}")

    def _lose_lead(self) -> None:
        with self.lock:
            self._stop_watch()
            self._scheduled(self.delta)
            self.leading = False
            self.pending = []
        self.log("no longer leading")

    def _scheduled(self, take: Any) -> None:
        try:
            take()
        except Exception as e:
            self._failed(f"taking a {take.__name__} snapshot", e, snapshot=True)

    def _failed(self, doing: str, e: BaseException, snapshot: bool = False) -> None:
        """Counted: every failure, and apart those of snapshots (what was not stored)."""
        with self.lock:
            self.failures += 1
            self.failed_snapshots += snapshot
            self.last_error = f"{doing}: {type(e).__name__}: {e}"
        self.log(self.last_error)

    def full(self) -> SnapshotName:
        with self.lock:
            if not self.leading:
                raise NotLeading("this member does not lead: only the leading sidecar takes snapshots")
            path = self.workdir / "full.db"
            taken = save_full(EtcdClient(self.member_url, None, 5.0, self.tls), path, self.etcdutl)
            name = full_name(taken.revision)
            with open(path, "rb") as body:
                self.store.put(name, body)
            path.unlink(missing_ok=True)
            self.last_full = name
            self.uploaded = max(self.uploaded, name.end)
            self.pending = [e for e in self.pending if e["revision"] > self.uploaded]
            self.log(f"full snapshot {name.name} ({taken.size} bytes, {taken.seconds:.2f} s)")
            return name

    def delta(self) -> SnapshotName | None:
        """The buffered events as one delta snapshot; None when there were none."""
        with self.lock:
            if not self.leading:
                raise NotLeading("this member does not lead: only the leading sidecar takes snapshots")
            events = [e for e in self.pending if e["revision"] > self.uploaded]
            if not events:
                return None
            name, body = encode_delta(events, self.uploaded + 1)
            self.store.put(name, body)
            self.last_delta = name
            self.uploaded = name.end
            self.pending = [e for e in self.pending if e["revision"] > name.end]
            return name

    # -- the watch -------------------------------------------------------------
    def _watch_from(self, revision: int) -> None:
        watcher = EtcdClient(self.member_url, None, 5.0, self.tls)
        self.watcher = watcher
        threading.Thread(target=self._watch, args=(watcher, revision), daemon=True).start()

    def _stop_watch(self) -> None:
        if self.watcher is not None:
            watcher, self.watcher = self.watcher, None
            watcher.interrupt()

    def _watch(self, watcher: EtcdClient, revision: int) -> None:
        try:
            for result in watcher.watch_stream(revision):
                if self.watcher is not watcher:
                    return
                if int(result.get("compact_revision") or 0) > 0 or result.get("canceled"):
                    self.log(f"the watch from revision {revision} was refused (compacted to "
                             f"{result.get('compact_revision')}): taking a full snapshot")
                    with self.lock:
                        self._scheduled(self.full)
                        if self.watcher is watcher and self.leading:
                            self._watch_from(self.uploaded + 1)
                    return
                events = [_event(e) for e in result.get("events") or ()]
                if events:
                    with self.lock:
                        self.pending.extend(events)
        except EtcdRequestError as e:
            if self.watcher is watcher:  # not stopped on purpose: the lead is retaken from the store
                self._failed("watching", e)
                with self.lock:
                    if self.leading:
                        self._stop_watch()
                        self.leading = False

    # -- what it says ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        # Not under the lock: an upload waiting on an unreachable store must not silence the status.
        full, delta = self.last_full, self.last_delta
        return {"member": self.member_url, "leading": self.leading, "revision": self.uploaded,
                "last_full": full.to_dict() if full else None, "last_delta": delta.to_dict() if delta else None,
                "pending_events": len(self.pending), "failed_snapshots": self.failed_snapshots,
                "failures": self.failures, "last_error": self.last_error,
                "full_period": self.full_period, "delta_period": self.delta_period}

    def log(self, message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _event(e: dict[str, Any]) -> dict[str, Any]:
    kv = e.get("kv") or {}
    return {"revision": int(kv.get("mod_revision", 0)), "type": e.get("type", "PUT"), "key": kv.get("key", ""),
            "value": kv.get("value", "")}


def serve(sidecar: Sidecar, listen: str) -> ThreadingHTTPServer:
    host, port = listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, doc: Any) -> None:
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/status":
                self._send(200, sidecar.status())
            else:
                self._send(404, {"error": f"no {self.path}: GET /status, POST /snapshot/full or /snapshot/delta"})

        def do_POST(self) -> None:
            take = {"/snapshot/full": sidecar.full, "/snapshot/delta": sidecar.delta}.get(self.path)
            if take is None:
                self._send(404, {"error": f"no {self.path}: POST /snapshot/full or /snapshot/delta"})
                return
            try:
                name = take()
            except NotLeading as e:
                self._send(409, {"error": str(e)})
                return
            except Exception as e:
                sidecar._failed(f"taking an on-demand {take.__name__} snapshot", e, snapshot=True)
                self._send(503, {"error": f"{type(e).__name__}: {e}"})
                return
            self._send(200, {"snapshot": name.to_dict() if name else None, "revision": sidecar.uploaded})

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def request(listen: str, method: str, path: str, timeout: float, netns: str | None = None,
            who: str = "the backup sidecar") -> dict[str, Any]:
    """A call to a sidecar's API at `listen` (from network namespace `netns`); EnvironmentStateError
    when it cannot be made or is refused (with the sidecar's own reason)."""
    import http.client

    from harness.errors import EnvironmentStateError
    from harness.netns import NsHTTPConnection

    host, port = listen.rsplit(":", 1)
    conn = NsHTTPConnection(host, int(port), timeout, netns)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        doc = json.loads(resp.read() or b"{}")
    except (OSError, http.client.HTTPException, ValueError) as e:
        raise EnvironmentStateError(f"{who} at {listen}: {type(e).__name__}: {e}") from None
    finally:
        conn.close()
    if resp.status != 200:
        raise EnvironmentStateError(f"{who} refused {method} {path}: {doc.get('error')}")
    return dict(doc)


def leading(statuses: dict[str, dict[str, Any] | str]) -> str:
    """The member whose sidecar leads (the one an on-demand snapshot is asked of)."""
    from harness.errors import EnvironmentStateError

    found = [name for name, s in statuses.items() if isinstance(s, dict) and s.get("leading")]
    if not found:
        raise EnvironmentStateError("no backup sidecar leads (no member leads, or its sidecar is gone): "
                                    f"a snapshot needs a cluster with quorum; the sidecars: {statuses}")
    return found[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.backup.sidecar", description=__doc__.split("\n\n")[0])
    p.add_argument("--member", required=True, help="the member's client URL")
    p.add_argument("--store", required=True, type=Path, help="the store's spec (JSON, without the key pair)")
    p.add_argument("--etcdutl", required=True, type=Path)
    p.add_argument("--workdir", required=True, type=Path)
    p.add_argument("--listen", required=True, help="address:port of the status and on-demand snapshot API")
    p.add_argument("--full-period", type=float, default=3600.0, help="seconds between full snapshots")
    p.add_argument("--delta-period", type=float, default=5.0, help="seconds between delta snapshots")
    p.add_argument("--cacert", type=Path, help="the CA of the member's serving certificate (a member serving TLS)")
    p.add_argument("--cert", type=Path, help="the client certificate the member accepts")
    p.add_argument("--key", type=Path, help="the client certificate's key")
    p.add_argument("--server-name", help="the name the member's serving certificate holds, when not its address")
    args = p.parse_args(argv)
    given = [f for f in ("cacert", "cert", "key") if getattr(args, f)]
    if given and len(given) < 3:
        p.error(f"a member serving TLS needs --cacert, --cert and --key; given only --{', --'.join(given)}")
    tls = EtcdTls(args.cacert, args.cert, args.key, args.server_name) if given else None
    spec = StoreSpec.from_dict(json.loads(args.store.read_text()) | {
        "access_key_id": os.environ.get("AWS_ACCESS_KEY_ID"), "secret_access_key": os.environ.get("AWS_SECRET_ACCESS_KEY")})
    args.workdir.mkdir(parents=True, exist_ok=True)
    # One try a period, soon given up: the next period tries again with what is still pending.
    store = BackupStore(spec, timeout=STORE_TIMEOUT_S, attempts=1)
    sidecar = Sidecar(args.member, store, args.etcdutl, args.workdir, args.full_period, args.delta_period, tls=tls)
    signal.signal(signal.SIGTERM, lambda *_: sidecar.stopping.set())
    server = serve(sidecar, args.listen)
    sidecar.log(f"backing up {args.member} to s3://{spec.bucket}/{spec.prefix} (full every {args.full_period:g} s, "
                f"delta every {args.delta_period:g} s)")
    try:
        sidecar.run()
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
