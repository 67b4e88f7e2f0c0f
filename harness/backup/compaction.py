"""Snapshot compaction: the store's newest full snapshot and the deltas after it made into one new
full snapshot, as etcd-backup-restore's compaction job does (seed 003): restore the full snapshot
into a lone etcd of its own on loopback, replay each delta's revisions there one transaction per
revision (so the revisions come out as they were), check the revision reached, snapshot it.

A restore of a lost cluster restores every member from the compacted snapshot, so what comes back
is exactly what the store held: the full snapshot's keys plus every uploaded delta.
"""

from __future__ import annotations

import shutil
import socket
import time
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Callable

from harness.backup.snapshots import FullSnapshot, MemberSeed, restore, save_full
from harness.backup.store import BackupStore, Chain, SnapshotName, chain, decode_delta, full_name
from harness.command_lines import etcd_command
from harness.errors import EnvironmentStateError
from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.processes import log_tail, spawn, terminate
from harness.wait import wait_for


@dataclass(frozen=True)
class Compacted:
    snapshot: FullSnapshot  # the compacted full snapshot, on local disk
    chain: Chain  # what it was made of
    events: int  # delta events replayed
    seconds: float

    @property
    def revision(self) -> int:
        return self.snapshot.revision


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def compact(store: BackupStore, etcd: Path, etcdutl: Path, workdir: Path, timeout: float = 300.0,
            progress: Callable[[str], None] | None = None, deltas: bool = True) -> Compacted:
    """One full snapshot (in `workdir`) of everything the store holds, by restoring and replaying it
    (`deltas=False`: the newest full snapshot alone, what `etcdutl snapshot restore` of it gives).

    Refuses a chain whose deltas stop short (a gap in the revisions): what follows a gap cannot be
    replayed, and a restore must say so rather than come back silently older."""
    began = time.monotonic()
    say = progress or (lambda _: None)
    found = chain(store.list())
    if not deltas:
        found = Chain(found.full, ())
    if found.broken is not None:
        raise EnvironmentStateError(
            f"the backup store's deltas stop at revision {found.revision}: the next one, {found.broken.name}, starts at "
            f"{found.broken.start}; revisions {found.revision + 1}-{found.broken.start - 1} are in no snapshot")
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    full_path = store.download(found.full, workdir / found.full.name)
    say(f"downloaded {found.full.name}; replaying {len(found.deltas)} delta snapshot(s) up to revision {found.revision}")
    if not found.deltas:
        from harness.backup.snapshots import snapshot_status

        status = snapshot_status(etcdutl, full_path, timeout)
        snap = FullSnapshot(full_path, full_path.stat().st_size, status["revision"], status["totalKey"], 0.0)
        return Compacted(snap, found, 0, time.monotonic() - began)
    client_url, peer_url = f"http://127.0.0.1:{_free_port()}", f"http://127.0.0.1:{_free_port()}"
    data = workdir / "compactor"
    restore(etcdutl, full_path, [MemberSeed("compactor", peer_url, data)], "compactor", timeout)
    log = workdir / "compactor.log"
    proc, record = spawn("compactor", etcd_command(str(etcd), "compactor", data, client_url, peer_url,
                                                   f"compactor={peer_url}"), log)
    try:
        client = EtcdClient(client_url, None, 2.0)

        def revision() -> int | None:
            if proc.poll() is not None:
                raise EnvironmentStateError(f"the compactor's etcd exited ({proc.returncode}): {log_tail(log)}")
            try:
                return client.status().revision
            except EtcdRequestError:
                return None

        wait_for(revision, lambda r: r is not None, "the compactor's etcd to serve", 30.0, interval=0.05)
        events, at = 0, found.full.end
        for name in found.deltas:
            replayed = [e for e in decode_delta(name, store.get(name)) if int(e["revision"]) > at]  # overlaps skipped
            for rev, group in groupby(replayed, key=lambda e: int(e["revision"])):
                batch = list(group)
                got = client.apply_revision(batch)
                if got != rev:
                    raise EnvironmentStateError(f"replaying {name.name}: revision {rev} came out as {got} "
                                                "(the deltas do not follow on from the full snapshot)")
                events += len(batch)
            at = name.end
        if (reached := client.status().revision) != found.revision:
            raise EnvironmentStateError(f"the replay reached revision {reached}, not {found.revision}")
        out_path = workdir / full_name(found.revision).name
        snap = save_full(client, out_path, etcdutl, timeout)
        say(f"compacted to revision {snap.revision} ({events} events replayed)")
        return Compacted(snap, found, events, time.monotonic() - began)
    finally:
        terminate(record, 10.0, proc)
        shutil.rmtree(data, ignore_errors=True)


def upload_compacted(store: BackupStore, compacted: Compacted) -> SnapshotName:
    """The compacted snapshot into the store as its newest full snapshot (what the compaction task
    leaves behind: later restores start from it and replay nothing before it)."""
    name = full_name(compacted.revision)
    with open(compacted.snapshot.path, "rb") as body:
        store.put(name, body)
    return name


def compact_and_upload(store: BackupStore, etcd: Path, etcdutl: Path, workdir: Path) -> dict[str, Any]:
    """The on-demand snapshot compaction: the store's chain into a new full snapshot, uploaded."""
    c = compact(store, etcd, etcdutl, workdir)
    name = upload_compacted(store, c)
    c.snapshot.path.unlink(missing_ok=True)
    return {"snapshot": name.name, "revision": c.revision, "full": c.chain.full.name, "deltas": len(c.chain.deltas),
            "events": c.events, "seconds": round(c.seconds, 3)}
