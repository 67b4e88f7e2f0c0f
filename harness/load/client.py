"""The one adapter between load generation and an etcd v3 client library.

The library is `etcd-sdk-python` (import `pyetcd`): the API of `etcd3`, but its generated code
works on current protobuf (etcd3 0.12 needs the pure-Python protobuf, ~500 puts/s). Why it was
chosen over etcd3 and aetcd, with figures, is in docs/guides/load.md (benchmarks/etcd_clients.py). Its
default endpoint locks itself out for 5 minutes after one error: endpoints here retry at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

TIMEOUT_S = 2.0
# A range GET of a large prefix answers with more than gRPC's default 4 MiB (etcd allows ~2 GiB).
MAX_MESSAGE = 256 * 1024 * 1024


class KVError(Exception):
    """A request failed. `indeterminate` when a write may or may not have taken effect."""

    def __init__(self, message: str, indeterminate: bool) -> None:
        super().__init__(message)
        self.indeterminate = indeterminate


@dataclass(frozen=True)
class WatchEvent:
    revision: int
    key: str
    kind: str  # put | delete
    value: str | None
    create_revision: int | None = None  # put: the key's create revision (== revision: a create)
    prev_value: str | None = None  # with prev_kv: the value before this event (None: absent)


@dataclass(frozen=True)
class WatchResponse:
    """One response of a watch stream: its header revision and its events (none: a progress
    notification, which says every event up to `revision` was sent)."""

    revision: int
    events: tuple[WatchEvent, ...]


def _wrap(write: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            import grpc

            try:
                return fn(*args, **kwargs)
            except Exception as e:
                if not isinstance(e, grpc.RpcError) and type(e).__module__.split(".")[0] not in LIBRARIES:
                    raise  # not a request failure: a bug to see, not a failed operation
                # The library raises its own error in place of gRPC's (ConnectionFailedError for
                # UNAVAILABLE); gRPC's, with its words on what happened, is the one it replaced.
                rpc = next((x for x in (e, e.__cause__, e.__context__) if isinstance(x, grpc.RpcError)), None)
                code = rpc.code() if rpc is not None else None
                # Only a request that provably never left is a definite failure: gRPC could not
                # connect at all. A reset, a timeout, a closed stream came after it was sent.
                sure_not = code is not None and code.name == "UNAVAILABLE" and never_sent(str(rpc))
                raise KVError(f"{fn.__name__}: {type(e).__name__}: {str(e)[:200]}", write and not sure_not) from None

        call.__name__ = fn.__name__
        return call

    return decorate


def never_sent(message: str) -> bool:
    """gRPC's words for a call that found no connection to send it on (connection refused, no
    route): not "Connection reset by peer" or "Socket closed", which come after the request left."""
    text = message.lower()
    return "failed to connect to all addresses" in text or "connection refused" in text


LIBRARIES = ("pyetcd", "etcd3")  # etcd3 only for comparison (benchmarks/etcd_clients.py)


@dataclass(frozen=True)
class ClientTls:
    """Files of a client certificate and the CA of the members' serving certificates;
    `server_name`: the name to check in them instead of the address dialled (a port-forward)."""

    ca: str
    cert: str
    key: str
    server_name: str | None = None


class KV:
    """One member endpoint (`http://host:port`, or `https://` with `tls`), gRPC. Every call
    returns (revision, what it read)."""

    def __init__(self, url: str, timeout: float | None = TIMEOUT_S, library: str = "pyetcd",
                 tls: ClientTls | None = None) -> None:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        host, port = parts.hostname or "127.0.0.1", parts.port or 2379
        self.url = url
        if (parts.scheme == "https") != (tls is not None):
            raise ValueError(f"{url}: an https:// member needs client TLS, an http:// one none")
        options = [("grpc.max_receive_message_length", MAX_MESSAGE)]
        if tls is not None and tls.server_name:
            options.append(("grpc.ssl_target_name_override", tls.server_name))
        if library == "etcd3":  # same API; needs PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python on current protobuf
            import etcd3

            files = {"ca_cert": tls.ca, "cert_cert": tls.cert, "cert_key": tls.key} if tls else {}
            self.client = etcd3.client(host, port, timeout=timeout, grpc_options=options, **files)
            return
        import grpc
        import pyetcd

        creds = None
        if tls is not None:
            def read(path: str) -> bytes:
                with open(path, "rb") as f:
                    return f.read()

            creds = grpc.ssl_channel_credentials(read(tls.ca), read(tls.key), read(tls.cert))
        endpoint = pyetcd.Endpoint(host, port, secure=tls is not None, creds=creds, time_retry=0, opts=options)
        self.client = pyetcd.MultiEndpointEtcd3Client([endpoint], timeout=timeout)

    @_wrap(write=True)
    def put(self, key: str, value: str) -> tuple[int, None]:
        return int(self.client.put(key, value).header.revision), None

    @_wrap(write=False)
    def get(self, key: str, serializable: bool = False) -> tuple[int, str | None]:
        """Linearizable by default; serializable: served from the member's own state (may be stale)."""
        response = self.client.get_response(key, serializable=serializable)
        value = response.kvs[0].value.decode() if response.count else None
        return int(response.header.revision), value

    @_wrap(write=False)
    def range_prefix(self, prefix: str) -> tuple[int, int]:
        """Every key and value under `prefix` (a list, as the GEP's range GET); returns how many."""
        response = self.client.get_prefix_response(prefix)
        return int(response.header.revision), int(response.count)

    @_wrap(write=True)
    def delete(self, key: str) -> tuple[int, tuple[int, str | None]]:
        """Returns (revision, (keys deleted, the value deleted)): a history knows whether it found the key."""
        response = self.client.delete(key, prev_kv=True, return_response=True)
        prev = response.prev_kvs[0].value.decode() if response.prev_kvs else None
        return int(response.header.revision), (int(response.deleted), prev)

    @_wrap(write=True)
    def put_if_absent(self, key: str, value: str) -> tuple[int, bool]:
        """A transaction: create `key` only if it does not exist (what a Kubernetes create does)."""
        ok, responses = self.client.transaction(
            compare=[self.client.transactions.version(key) == 0],
            success=[self.client.transactions.put(key, value)], failure=[])
        header = responses[0].response_put.header if ok and responses else None
        return (int(header.revision) if header is not None else 0), bool(ok)

    @_wrap(write=True)
    def put_with_lease(self, key: str, value: str, ttl: int = 10) -> tuple[int, None]:
        lease = self.client.lease(ttl)
        return int(self.client.put(key, value, lease=lease).header.revision), None

    def watch(self, prefix: str, start_revision: int | None = None, progress_notify: bool = True,
              prev_kv: bool = True) -> tuple[Any, Callable[[], None]]:
        """An iterator of WatchResponses from `start_revision`, and a function that cancels it."""
        kwargs: dict[str, Any] = {"progress_notify": progress_notify, "prev_kv": prev_kv}
        if start_revision:
            kwargs["start_revision"] = start_revision
        responses, cancel = self.client.watch_prefix_response(prefix, **kwargs)

        def event(e: Any) -> WatchEvent:
            kind = "delete" if type(e).__name__ == "DeleteEvent" else "put"
            prev = e._event.prev_kv.value.decode() if prev_kv and e._event.HasField("prev_kv") else None
            return WatchEvent(int(e.mod_revision), e.key.decode(), kind, e.value.decode() if kind == "put" else None,
                              int(e.create_revision) if kind == "put" else None, prev)

        def convert() -> Any:
            for r in responses:
                yield WatchResponse(int(r.header.revision), tuple(event(e) for e in r.events))

        return convert(), cancel

    def close(self) -> None:
        self.client.close()
