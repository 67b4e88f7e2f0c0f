"""Merge a cluster's context into the kubeconfig kubectl and the Python client load by default,
and take it out again, as kind does on create and delete."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import yaml

from harness.errors import ConfigError
from harness.files import replace_text


@contextmanager
def _locked(path: Path, timeout: float = 10.0) -> Iterator[None]:
    """kubectl's own convention: `<file>.lock` created exclusively, removed when done."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise ConfigError(f"{lock} exists: another kubectl or harness is writing {path}; remove it if none is") from None
            time.sleep(0.05)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, Any]:
    if not path.exists() or not path.read_text().strip():
        return {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [], "contexts": []}
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"kubeconfig {path} is not valid YAML ({e}); fix it or pass --kubeconfig PATH") from None
    if not isinstance(data, dict):
        raise ConfigError(f"kubeconfig {path} is not a kubeconfig (a mapping at the top); fix it or pass --kubeconfig PATH")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    # Through a symlinked kubeconfig to the file it names, as kubectl writes; the temporary file
    # holds a client key, so it is 0600 from its first byte.
    path = path.resolve()
    replace_text(path, yaml.safe_dump(data, sort_keys=False))


def _without(entries: list[dict[str, Any]] | None, name: str) -> list[dict[str, Any]]:
    return [e for e in entries or [] if e.get("name") != name]


def merge(target: Path, source: Path, name: str) -> bool:
    """Copy `source`'s current cluster, user and context into `target` under `name`; make it current.

    Returns True when `target` did not exist before (so that `remove` may delete it again)."""
    src = _read(source)
    current = src.get("current-context")
    ctx = next((c["context"] for c in src.get("contexts", []) if c["name"] == current), None)
    if ctx is None:
        raise ConfigError(f"{source} has no current context to merge")
    cluster = next((c["cluster"] for c in src.get("clusters") or [] if c["name"] == ctx["cluster"]), None)
    user = next((u["user"] for u in src.get("users") or [] if u["name"] == ctx["user"]), None)
    if cluster is None or user is None:
        raise ConfigError(f"{source}: context {current!r} names a cluster or user the file does not have")
    with _locked(target):
        created = not target.exists()
        data = _read(target)
        data["clusters"] = _without(data.get("clusters"), name) + [{"name": name, "cluster": cluster}]
        data["users"] = _without(data.get("users"), name) + [{"name": name, "user": user}]
        data["contexts"] = _without(data.get("contexts"), name) + [{"name": name, "context": {"cluster": name, "user": name}}]
        data["current-context"] = name
        _write(target, data)
    return created


def remove(target: Path, name: str, delete_if_empty: bool = False) -> bool:
    """Take `name`'s cluster, user and context out of `target`; True if anything was there.

    With `delete_if_empty` (the file was created by `merge`), a file left with no entries goes too."""
    if not target.exists():
        return False
    with _locked(target):
        data = _read(target)
        before = sum(len(data.get(k) or []) for k in ("clusters", "users", "contexts"))
        for key in ("clusters", "users", "contexts"):
            data[key] = _without(data.get(key), name)
        found = before != sum(len(data[k]) for k in ("clusters", "users", "contexts"))
        if data.get("current-context") == name:
            data["current-context"] = ""
            found = True
        if delete_if_empty and not any(data.get(k) for k in ("clusters", "users", "contexts")):
            target.unlink()
        elif found:
            _write(target, data)
    return found


def embedded(source: Path, target: Path) -> Path:
    """`source` with the files it names (CA, client certificate and key) embedded as data, for
    programs that take no file references (gardener-resource-manager); written 0600."""
    import base64

    data = _read(source)
    fields = (("clusters", "cluster", "certificate-authority"), ("users", "user", "client-certificate"),
              ("users", "user", "client-key"))
    for section, entry, key in fields:
        for item in data.get(section) or []:
            inner = item.get(entry) or {}
            if key in inner:
                inner[f"{key}-data"] = base64.b64encode(Path(inner.pop(key)).read_bytes()).decode()
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_text(target, yaml.safe_dump(data, sort_keys=False))
    return target
