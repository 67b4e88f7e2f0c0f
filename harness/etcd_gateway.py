"""A small etcd v3 client over the JSON gateway (etcd's /v3/* HTTP endpoints).

Its sockets are opened from a client network namespace, so the harness reaches members
from a zone of its choosing; each call has its own short timeout so a probe never
hangs on a partitioned member.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
from dataclasses import dataclass
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from harness.errors import HarnessError
from harness.netns import NsHTTPConnection, NsHTTPSConnection

if TYPE_CHECKING:
    from harness.topology import EtcdTls


class EtcdRequestError(HarnessError):
    """A request to one member failed (unreachable, timed out or rejected)."""


class EtcdUnsupported(EtcdRequestError):
    """The member's gateway has no such endpoint (an older etcd release: v3.5.5's has no HashKV)."""


@dataclass(frozen=True)
class Status:
    member_id: int
    leader: int
    raft_term: int
    revision: int
    raft_index: int
    applied_index: int
    version: str
    db_size: int
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class RaftStatus:
    """A member's raft state as it is now (etcd's /debug/vars "raft.status"). Its `term` is the
    member's current term, which a candidate raises; Status.raft_term is the term of the last
    entry the member applied, which moves only once a leader of a new term committed an entry."""

    member_id: int
    term: int
    leader: int  # 0: none known
    state: str  # StateLeader, StateFollower, StateCandidate, StatePreCandidate
    applied_index: int


def _b64(data: str | bytes) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


def _text(b64: str) -> str:
    """Bytes as text that keeps every byte apart (a Kubernetes object in etcd is protobuf)."""
    return base64.b64decode(b64).decode("utf-8", "surrogateescape")


def prefix_end(prefix: str) -> str:
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return _b64(bytes(raw))


class EtcdClient:
    """One member endpoint; keeps one persistent connection, reopened after any failure.

    Not thread-safe: give each probe thread its own client.
    """

    def __init__(self, url: str, netns: str | None, timeout: float, tls: EtcdTls | None = None,
                 connect_timeout: float | None = None) -> None:
        parts = urlsplit(url)
        self.url = url
        self.netns = netns
        self.timeout = timeout
        # Opening a connection (TCP and the TLS handshake) has this patience, the requests on it
        # theirs: where the route to a member costs more to open than a request takes (a forward
        # through the seed's API), a connection slower to open than one request's patience would
        # otherwise never open on a busy machine, every attempt abandoned and begun anew.
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self.tls = tls
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 2379
        self._conn: NsHTTPConnection | NsHTTPSConnection | None = None

    def interrupt(self) -> None:
        """End a `watch_stream` or `snapshot` that another thread is reading (closing alone would
        leave that thread blocked in its read)."""
        conn = self._conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def call(self, path: str, body: dict[str, Any] | None, timeout: float | None = None) -> dict[str, Any]:
        """POST `body` to `path` as JSON (GET without one); the answer's JSON."""
        try:
            if self._conn is None:
                self._conn = self._connection()
            if self._conn.sock is None:  # new, or closed by the server's "Connection: close"
                self._conn.timeout = max(self.connect_timeout, timeout or self.timeout)
                self._conn.connect()
            self._conn.timeout = timeout or self.timeout
            self._conn.sock.settimeout(self._conn.timeout)
            if body is None:
                self._conn.request("GET", path)
            else:
                self._conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            resp = self._conn.getresponse()
            raw = resp.read()
            if resp.status == 404 and not raw.lstrip().startswith(b"{"):
                raise EtcdUnsupported(f"{self.url}{path}: HTTP 404: this etcd's gateway has no such endpoint")
            payload = json.loads(raw or b"{}")
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            raise EtcdRequestError(f"{self.url}{path}: {type(e).__name__}: {e}") from None
        if resp.status != 200 or "error" in payload:
            raise EtcdRequestError(f"{self.url}{path}: HTTP {resp.status}: {payload.get('message') or payload.get('error')}")
        return payload

    def _connection(self) -> NsHTTPConnection | NsHTTPSConnection:
        if self.tls is None:
            return NsHTTPConnection(self._host, self._port, self.connect_timeout, self.netns)
        dial = (self._host, self._port) if self.tls.server_name else None
        return NsHTTPSConnection(self.tls.server_name or self._host, self._port, self.connect_timeout, self.netns,
                                 self.tls.context(), dial=dial)

    def put(self, key: str, value: str | bytes) -> int:
        """Linearizable put; returns the revision it was committed at."""
        return int(self.call("/v3/kv/put", {"key": _b64(key), "value": _b64(value)})["header"]["revision"])

    def get(self, key: str, serializable: bool = False) -> bytes | None:
        payload = self.call("/v3/kv/range", {"key": _b64(key), "serializable": serializable})
        kvs = payload.get("kvs") or []
        return base64.b64decode(kvs[0]["value"]) if kvs and "value" in kvs[0] else (b"" if kvs else None)

    def keys(self, prefix: str, serializable: bool = True) -> list[str]:
        body = {"key": _b64(prefix), "range_end": prefix_end(prefix), "serializable": serializable, "keys_only": True}
        payload = self.call("/v3/kv/range", body, timeout=max(self.timeout, 5.0))
        return [base64.b64decode(kv["key"]).decode() for kv in payload.get("kvs") or []]

    def items(self, prefix: str, serializable: bool = True) -> dict[str, tuple[int, str]]:
        """Every key under `prefix` with its mod revision and value."""
        body = {"key": _b64(prefix), "range_end": prefix_end(prefix), "serializable": serializable}
        payload = self.call("/v3/kv/range", body, timeout=max(self.timeout, 10.0))
        return {base64.b64decode(kv["key"]).decode(): (int(kv["mod_revision"]), base64.b64decode(kv.get("value", "")).decode())
                for kv in payload.get("kvs") or []}

    def put_all(self, items: dict[str, str]) -> int:
        """The puts as one transaction (etcd's --max-txn-ops bounds how many: 128 by default);
        returns the revision they were committed at."""
        ops = [{"request_put": {"key": _b64(k), "value": _b64(v)}} for k, v in items.items()]
        return int(self.call("/v3/kv/txn", {"success": ops}, timeout=max(self.timeout, 10.0))["header"]["revision"])

    def range_read(self, prefix: str, serializable: bool = False, timeout: float = 60.0) -> tuple[int, int]:
        """One range GET of every key under `prefix`, keys and values (GEP-20's `etcdctl get 1 17999`):
        how many keys came back and the bytes of their values."""
        payload = self.call("/v3/kv/range", {"key": _b64(prefix), "range_end": prefix_end(prefix),
                                              "serializable": serializable}, timeout=timeout)
        kvs = payload.get("kvs") or []
        return len(kvs), sum(len(base64.b64decode(kv.get("value", ""))) for kv in kvs)

    def delete_prefix(self, prefix: str) -> int:
        """Delete every key under `prefix`; returns how many went."""
        payload = self.call("/v3/kv/deleterange", {"key": _b64(prefix), "range_end": prefix_end(prefix)},
                            timeout=max(self.timeout, 5.0))
        return int(payload.get("deleted", 0))

    def hashkv(self, revision: int) -> int:
        """The hash of this member's keys and values at `revision` (etcd's HashKV)."""
        return int(self.call("/v3/maintenance/hashkv", {"revision": revision}, timeout=max(self.timeout, 10.0))["hash"])

    def defragment(self, timeout: float = 60.0) -> None:
        """Defragment this member's backend (it holds the member's writes while it runs)."""
        self.call("/v3/maintenance/defragment", {}, timeout=timeout)

    def compact(self, revision: int) -> None:
        """Compact the keyspace's history up to `revision` (physically: done when this returns)."""
        self.call("/v3/kv/compaction", {"revision": revision, "physical": True}, timeout=max(self.timeout, 30.0))

    def alarms(self) -> list[tuple[int, str]]:
        """The cluster's raised alarms: (member id, alarm), e.g. (123, "NOSPACE")."""
        payload = self.call("/v3/maintenance/alarm", {"action": "GET"})
        return [(int(a.get("memberID", 0)), str(a.get("alarm", "NONE"))) for a in payload.get("alarms") or []]

    def disarm(self, member_id: int, alarm: str) -> None:
        self.call("/v3/maintenance/alarm", {"action": "DEACTIVATE", "memberID": str(member_id), "alarm": alarm})

    def move_leader(self, member_id: int) -> None:
        """Hand leadership to `member_id` (etcd's MoveLeader; asked of the current leader)."""
        self.call("/v3/maintenance/transfer-leadership", {"targetID": str(member_id)}, timeout=max(self.timeout, 10.0))

    def snapshot(self, into: BinaryIO, timeout: float = 300.0) -> int:
        """This member's backend as etcd's Maintenance.Snapshot streams it (what `etcdctl snapshot
        save` writes), into `into`; returns the bytes written. The gateway sends one JSON message
        per chunk, the blob in base64."""
        if self._conn is None:
            self._conn = self._connection()
        self._conn.timeout = timeout
        if self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        written = 0
        try:
            self._conn.request("POST", "/v3/maintenance/snapshot", "{}", {"Content-Type": "application/json"})
            resp = self._conn.getresponse()
            if resp.status != 200:
                raise EtcdRequestError(f"{self.url}/v3/maintenance/snapshot: HTTP {resp.status}: {resp.read()[:300]!r}")
            for line in resp:  # one message a line
                if not line.strip():
                    continue
                message = json.loads(line)
                if "error" in message:
                    raise EtcdRequestError(f"{self.url}/v3/maintenance/snapshot: {message['error']}")
                blob = base64.b64decode(message["result"].get("blob", ""))
                into.write(blob)
                written += len(blob)
        except (OSError, http.client.HTTPException, ValueError, KeyError) as e:
            self.close()
            raise EtcdRequestError(f"{self.url}/v3/maintenance/snapshot: {type(e).__name__}: {e}") from None
        self.close()  # a streamed response leaves nothing to reuse the connection for
        return written

    def watch_stream(self, start_revision: int, timeout: float = 3600.0) -> Iterator[dict[str, Any]]:
        """Every key's watch responses from `start_revision` on, as the gateway streams them (one
        `result` a line: header, events, and `compact_revision`/`canceled` when the history is
        compacted away), until the stream fails (EtcdRequestError) or `close()` is called from
        another thread. Uses this client's connection alone: give the watch a client of its own."""
        self.close()
        self._conn = self._connection()
        self._conn.timeout = timeout
        body = {"create_request": {"key": "AA==", "range_end": "AA==", "start_revision": start_revision}}
        try:
            self._conn.request("POST", "/v3/watch", json.dumps(body), {"Content-Type": "application/json"})
            resp = self._conn.getresponse()
            if resp.status != 200:
                raise EtcdRequestError(f"{self.url}/v3/watch: HTTP {resp.status}: {resp.read()[:300]!r}")
            for line in resp:
                if line.strip():
                    message = json.loads(line)
                    if "error" in message:
                        raise EtcdRequestError(f"{self.url}/v3/watch: {message['error']}")
                    yield message["result"]
        except (OSError, http.client.HTTPException, ValueError, KeyError, AttributeError) as e:
            raise EtcdRequestError(f"{self.url}/v3/watch: {type(e).__name__}: {e}") from None
        finally:
            self.close()
        raise EtcdRequestError(f"{self.url}/v3/watch: the stream ended")

    def history(self, start_revision: int, through_revision: int,
                timeout: float = 60.0) -> tuple[list[tuple[int, str, str | None]], int]:
        """This member's own record of every write from `start_revision` through `through_revision`
        (a watch is served from the member's store, not through the leader): (revision, key, value,
        None for a delete) in order, and the oldest revision it still holds when compaction took
        the start (else 0). Revisions come from writes only, so the last one always arrives. Uses
        this client's connection alone, as a watch does."""
        start, compacted, out = start_revision, 0, []
        while start <= through_revision:
            stream = self.watch_stream(start, timeout=timeout)  # ends by an error, never by itself
            try:
                for result in stream:
                    if int(result.get("compact_revision") or 0) > 0:
                        start = compacted = int(result["compact_revision"])
                        break
                    for e in result.get("events") or ():
                        kv = e["kv"]
                        value = None if e.get("type") == "DELETE" else _text(kv.get("value", ""))
                        out.append((int(kv["mod_revision"]), _text(kv["key"]), value))
                    if out and out[-1][0] >= through_revision:
                        return [w for w in out if w[0] <= through_revision], compacted
            finally:
                stream.close()  # its connection closed before another watch opens one
        return [], compacted

    def apply_revision(self, events: list[dict[str, Any]]) -> int:
        """The events of one revision (watch events: type, key, value in base64) as one transaction,
        so it commits as one revision again; returns that revision."""
        ops = [{"request_delete_range": {"key": e["key"]}} if e["type"] == "DELETE"
               else {"request_put": {"key": e["key"], "value": e.get("value", "")}} for e in events]
        return int(self.call("/v3/kv/txn", {"success": ops}, timeout=max(self.timeout, 5.0))["header"]["revision"])

    def members(self) -> list[dict[str, Any]]:
        """The cluster's members as this member knows them: ID (int), name, peerURLs, isLearner."""
        return [{**m, "ID": int(m["ID"])} for m in self.call("/v3/cluster/member/list", {}).get("members") or []]

    def remove_member(self, member_id: int) -> None:
        self.call("/v3/cluster/member/remove", {"ID": str(member_id)}, timeout=max(self.timeout, 10.0))

    def add_member(self, peer_urls: list[str]) -> int:
        """A new voting member with these peer URLs; returns its ID."""
        payload = self.call("/v3/cluster/member/add", {"peerURLs": peer_urls}, timeout=max(self.timeout, 10.0))
        return int(payload["member"]["ID"])

    def raft_status(self) -> RaftStatus:
        """The member's raft state now, from /debug/vars (served on its client port)."""
        try:
            raft = self.call("/debug/vars", None)["raft.status"]
            return RaftStatus(int(raft["id"], 16), int(raft["term"]), int(raft.get("lead") or "0", 16),
                              str(raft.get("raftState", "")), int(raft.get("applied", 0)))
        except (KeyError, TypeError, ValueError) as e:
            raise EtcdRequestError(f"{self.url}/debug/vars: no raft.status in it ({type(e).__name__}: {e})") from None

    def command_line(self) -> list[str]:
        """The member's own command line, as its process was started (/debug/vars "cmdline")."""
        try:
            return [str(a) for a in self.call("/debug/vars", None)["cmdline"]]
        except (KeyError, TypeError) as e:
            raise EtcdRequestError(f"{self.url}/debug/vars: no cmdline in it ({type(e).__name__}: {e})") from None

    def status(self) -> Status:
        p = self.call("/v3/maintenance/status", {})
        return Status(
            member_id=int(p["header"]["member_id"]),
            leader=int(p.get("leader", 0)),
            raft_term=int(p.get("raftTerm", 0)),
            revision=int(p["header"].get("revision", 0)),
            raft_index=int(p.get("raftIndex", 0)),
            applied_index=int(p.get("raftAppliedIndex", 0)),
            version=p.get("version", ""),
            db_size=int(p.get("dbSize", 0)),
            errors=tuple(p.get("errors") or ()),
        )
