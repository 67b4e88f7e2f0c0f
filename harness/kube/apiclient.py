"""A minimal HTTPS/JSON client for the local seed's bring-up, on the standard library only.

Bringing the seed up means probing health endpoints before there is an API to use: etcd's
/health, each component's /healthz, the API server's /readyz (self-signed serving
certificates, plain paths), and a node listing once it serves. Everything that uses the
Kubernetes API itself goes through the official client (harness.kube.cluster).
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.errors import HarnessError


class ApiError(HarnessError):
    """An API server call failed; status is the HTTP status, or None if there was no answer."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiClient:
    def __init__(self, base_url: str, ca_cert: Path | None, client_cert: Path | None, client_key: Path | None) -> None:
        self.base_url = base_url.rstrip("/")
        if ca_cert is None:
            # Components' own serving certs are self-signed and only probed on loopback.
            self._ctx = ssl.create_default_context()
            self._ctx.check_hostname = False
            self._ctx.verify_mode = ssl.CERT_NONE
        else:
            self._ctx = ssl.create_default_context(cafile=str(ca_cert))
        if client_cert is not None and client_key is not None:
            self._ctx.load_cert_chain(str(client_cert), str(client_key))

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        context = self._ctx if self.base_url.startswith("https") else None
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
                return resp.status, resp.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            text = exc.read().decode(errors="replace")
            raise ApiError(f"{method} {path} -> HTTP {exc.code}: {text[:500]}", exc.code) from exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(f"{method} {self.base_url}{path} failed: {reason}") from exc

    def get_json(self, path: str, timeout: float = 10.0) -> Any:
        return json.loads(self.request("GET", path, timeout=timeout)[1])

    def post_json(self, path: str, body: Any, timeout: float = 10.0) -> Any:
        return json.loads(self.request("POST", path, body, timeout=timeout)[1])
