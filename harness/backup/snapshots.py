"""Full snapshots of an etcd cluster and restores from them, with etcd's own means: a member's
Maintenance.Snapshot stream (what `etcdctl snapshot save` writes) and `etcdutl snapshot restore`
(etcd's offline tool, built pinned: harness.etcd_builds.etcdutl_binary). What etcd-backup-restore
does for etcd-druid's full snapshots, and the first step of its restore."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.command_lines import etcdutl_restore_command
from harness.errors import EnvironmentStateError
from harness.etcd_gateway import EtcdClient


@dataclass(frozen=True)
class FullSnapshot:
    path: Path
    size: int  # bytes
    revision: int  # the newest revision it holds (etcdutl snapshot status)
    keys: int  # keys in its backend, every revision of them
    seconds: float  # time to take it


@dataclass(frozen=True)
class MemberSeed:
    """What a restored member's data directory is made for (`etcdutl snapshot restore`'s flags)."""

    name: str
    peer_url: str
    data_dir: Path


def save_full(client: EtcdClient, into: Path, etcdutl: Path, timeout: float = 300.0) -> FullSnapshot:
    """The member's whole backend into `into`, then what it covers read back from the file."""
    into.parent.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    partial = into.with_name(into.name + ".partial")
    try:
        with open(partial, "wb") as out:
            size = client.snapshot(out, timeout)
    except BaseException:
        partial.unlink(missing_ok=True)  # a snapshot cut short is never taken for one
        raise
    partial.rename(into)
    took = time.monotonic() - began
    status = snapshot_status(etcdutl, into, timeout)
    return FullSnapshot(into, size, int(status["revision"]), int(status["totalKey"]), took)


def snapshot_status(etcdutl: Path, snapshot: Path, timeout: float = 300.0) -> dict[str, int]:
    """etcdutl's reading of a snapshot file: hash, revision, totalKey, totalSize."""
    out = _run([str(etcdutl), "snapshot", "status", str(snapshot), "-w", "json"], timeout)
    return {k: int(v) for k, v in json.loads(out).items()}


def restore(etcdutl: Path, snapshot: Path, members: list[MemberSeed], token: str, timeout: float = 300.0) -> float:
    """A data directory for each member of a new cluster with the snapshot's keys (a new cluster
    id, the members of `members` as its voters); returns the seconds it took. Each data directory
    must be empty or not exist yet: etcdutl refuses to restore over data."""
    initial = ",".join(f"{m.name}={m.peer_url}" for m in members)
    held = [str(m.data_dir) for m in members if m.data_dir.exists() and any(m.data_dir.iterdir())]
    if held:  # checked for all before any is made: never a cluster half restored
        raise EnvironmentStateError(f"{', '.join(held)} holds data: a restore makes a new data directory, empty it first")
    began = time.monotonic()
    for m in members:
        _run(etcdutl_restore_command(str(etcdutl), snapshot, m.name, m.data_dir, m.peer_url, initial, token), timeout)
    return time.monotonic() - began


def _run(argv: list[str], timeout: float) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EnvironmentStateError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from None
    except OSError as e:
        raise EnvironmentStateError(f"`{' '.join(argv)}` could not run: {e}") from None
    if done.returncode != 0:
        raise EnvironmentStateError(f"`{' '.join(argv)}` failed ({done.returncode}): "
                                    f"{(done.stderr or done.stdout).strip()[-800:]}")
    return done.stdout
