"""etcd-backup-restore, real: etcd-druid's sidecar (`etcdbrctl`), built on first use from its own
release (kube/gomod/etcd-backup-restore pins v0.40.0, the newest served here: etcd-druid v0.36.4's
images name v0.41.2, which is refused). It is a module of its own: its embedded etcd is 3.4's,
which no other module here can share.

The node agent runs it in etcd-druid's pods with druid's arguments (harness.kube.druid_pods): it
initialises the member's data directory, serves etcd's configuration to etcd-wrapper's stand-in,
renews the member's lease and, with a backup store, takes the snapshots.

    python -m harness.kube.backup_restore   # builds it, prints its path
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness import gobuild

MODULE_DIR = Path(__file__).resolve().parent / "gomod" / "etcd-backup-restore"
PROGRAM = gobuild.CachedProgram(
    MODULE_DIR, "etcdbrctl", "github.com/gardener/etcd-backup-restore", "etcd-backup-restore", "etcd-backup-restore",
    "etcd-backup-restore", "install Go 1.26 or newer (make setup does)", "python -m harness.kube.backup_restore",
    min_go=(1, 26), sources=("go.mod", "go.sum"), package="github.com/gardener/etcd-backup-restore")


def _say(message: str) -> None:
    print(f"[etcd-backup-restore] {message}", file=sys.stderr, flush=True)


def binary(cache_root: Path | None = None) -> Path:
    """etcdbrctl, built into the cache on first use (about 2.5 minutes from a cold Go cache)."""
    return PROGRAM.path(cache_root, progress=_say)


if __name__ == "__main__":
    print(binary())
