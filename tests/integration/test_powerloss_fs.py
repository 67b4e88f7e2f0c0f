"""The power-loss filesystem, mounted for real: what was fsynced survives power_off, what was not
is gone (and counted), reads and mmap see unsynced data until then, and stop() keeps it all."""

from __future__ import annotations

import base64
import errno
import json
import mmap
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import EnvironmentStateError
from harness.providers.local.host import powerloss_fs

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="powerloss-fs mounts with mount(2): needs root and /dev/fuse"
)

TIMEOUT = 15.0


class Disk:
    """One backing directory and its mount point; remembers every helper it started."""

    def __init__(self, root: Path) -> None:
        self.root, self.backing, self.mount, self.log = root, root / "backing", root / "mnt", root / "powerloss-fs.log"
        self.pids: list[int] = []
        self.pid = 0

    def start(self) -> Path:
        self.pid = powerloss_fs.start(self.backing, self.mount, self.log, TIMEOUT)
        self.pids.append(self.pid)
        return self.mount

    def power_off(self) -> dict[str, object]:
        return powerloss_fs.power_off(self.pid, self.mount, TIMEOUT)

    def stop(self) -> None:
        powerloss_fs.stop(self.pid, self.mount, TIMEOUT)


def mounts_under(root: Path) -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    d = Disk(tmp_path)
    try:
        yield d
    finally:
        for pid in d.pids:
            powerloss_fs.stop(pid, d.mount, TIMEOUT)
    assert mounts_under(tmp_path) == [], "left mounted"
    assert [pid for pid in d.pids if Path(f"/proc/{pid}").exists()] == [], "a helper is still running"


def write(path: Path, data: bytes, *, offset: int = 0, sync: str = "") -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        assert os.pwrite(fd, data, offset) == len(data)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


def test_fsynced_and_fdatasynced_data_survive_a_power_loss(disk: Disk) -> None:
    mnt = disk.start()
    (mnt / "wal").mkdir()
    a, b = os.urandom(10_000), os.urandom(70_000)
    write(mnt / "wal" / "a", a, sync="fsync")
    write(mnt / "wal" / "b", b, sync="fdatasync")
    assert disk.power_off() == {"dropped_bytes": 0, "dropped_files": 0}
    mnt = disk.start()
    assert (mnt / "wal" / "a").read_bytes() == a and (mnt / "wal" / "b").read_bytes() == b
    disk.stop()


def test_a_child_has_exited_only_once_reaped() -> None:
    """A helper of ours turns from running to gone through a moment when /proc no longer names it
    but it is not reaped yet: exited() must not answer True then, or stop() leaves it behind."""
    child = subprocess.Popen(["sleep", "30"])  # not named powerloss-fs, as a helper mid-exit
    try:
        assert not powerloss_fs.exited(child.pid)
    finally:
        child.kill()
    deadline = time.monotonic() + TIMEOUT
    while not powerloss_fs.exited(child.pid):
        assert time.monotonic() < deadline, "the killed child never counted as exited"
        time.sleep(0.01)
    assert not Path(f"/proc/{child.pid}").exists(), "exited, yet not reaped"
    child.returncode = -signal.SIGKILL  # reaped above: Popen must not wait for it again


def test_a_child_killed_by_someone_else_has_exited_while_it_is_still_being_torn_down() -> None:
    """A helper killed by another hand is not running even before it turns zombie: power_off must
    not signal it and wait for a report it cannot give. Half a GiB of memory makes the teardown
    long enough to be caught in the middle."""
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; b = bytearray(512 << 20); "
                              "print(flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline()  # its memory is touched
        os.kill(child.pid, signal.SIGKILL)
        assert powerloss_fs.exited(child.pid), "a child being torn down counted as running"
        assert not Path(f"/proc/{child.pid}").exists(), "exited, yet not reaped"
    finally:
        if Path(f"/proc/{child.pid}").exists():
            child.kill()
            child.wait()
        child.returncode = -signal.SIGKILL


def test_data_never_fsynced_is_gone_and_counted(disk: Disk) -> None:
    mnt = disk.start()
    data = os.urandom(10_000)
    write(mnt / "f", data)  # closed, never synced
    assert (mnt / "f").read_bytes() == data
    assert (disk.backing / "f").stat().st_size == 0, "data reached the backing without fsync"
    assert disk.power_off() == {"dropped_bytes": 10_000, "dropped_files": 1}
    assert (disk.backing / "f").exists() and (disk.backing / "f").stat().st_size == 0  # the create was kept
    mnt = disk.start()
    assert (mnt / "f").read_bytes() == b""
    disk.stop()


def test_an_unsynced_overwrite_and_truncate_revert_to_the_synced_content(disk: Disk) -> None:
    mnt = disk.start()
    old = os.urandom(3 * 4096)
    write(mnt / "db", old, sync="fsync")
    write(mnt / "db", b"X" * 100, offset=5000)
    write(mnt / "tail", old, sync="fdatasync")
    os.truncate(mnt / "tail", 100)
    write(mnt / "tail", b"Y", offset=20_000)  # grows again: the cut part must read as zeros
    write(mnt / "conf", old, sync="fsync")
    (mnt / "conf").write_bytes(b"new")  # O_TRUNC, never synced
    assert (mnt / "db").read_bytes() == old[:5000] + b"X" * 100 + old[5100:]
    assert (mnt / "tail").read_bytes() == old[:100] + bytes(20_000 - 100) + b"Y"
    assert (mnt / "conf").read_bytes() == b"new"
    assert disk.power_off() == {"dropped_bytes": 100 + 1 + 3, "dropped_files": 3}
    assert [(disk.backing / name).read_bytes() == old for name in ("db", "tail", "conf")] == [True] * 3


def test_reads_and_mmap_see_unsynced_writes_until_the_power_goes(disk: Disk) -> None:
    mnt = disk.start()
    write(mnt / "m", b"a" * 8192, sync="fsync")
    write(mnt / "m", b"b" * 4096 + b"c" * 100, offset=6000)  # across a page and past the end
    size = 6000 + 4096 + 100
    assert os.stat(mnt / "m").st_size == size and (disk.backing / "m").stat().st_size == 8192
    fd = os.open(mnt / "m", os.O_RDONLY)
    try:
        assert os.pread(fd, 10, 5995) == b"aaaaabbbbb"
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as m:
            assert len(m) == size and m[5995:6005] == b"aaaaabbbbb" and m[size - 3:] == b"ccc"
            write(mnt / "m", b"d" * 10, offset=0)  # a write while mapped shows in the mapping
            assert m[:12] == b"d" * 10 + b"aa"
    finally:
        os.close(fd)
    assert disk.power_off() == {"dropped_bytes": 4096 + 100 + 10, "dropped_files": 1}
    assert (disk.backing / "m").read_bytes() == b"a" * 8192


def test_appends_land_at_the_logical_end_after_the_kernel_looks_the_file_up_again(disk: Disk) -> None:
    """Lookups report the size held in memory: the kernel appends where it is told the file ends."""
    mnt = disk.start()
    write(mnt / "log", b"a" * 1000)
    time.sleep(1.5)  # past the entry and attribute timeouts: the next open looks it up anew
    with open(mnt / "log", "ab") as f:
        f.write(b"b" * 10)
    assert (mnt / "log").read_bytes() == b"a" * 1000 + b"b" * 10
    assert [e.stat().st_size for e in os.scandir(mnt)] == [1010]  # readdirplus too
    assert disk.power_off() == {"dropped_bytes": 1010, "dropped_files": 1}


def test_stop_is_a_clean_power_off_that_keeps_everything(disk: Disk) -> None:
    mnt = disk.start()
    data = os.urandom(50_000)
    write(mnt / "kept", data)
    os.rename(mnt / "kept", mnt / "renamed")
    disk.stop()
    assert (disk.backing / "renamed").read_bytes() == data and not (disk.backing / "kept").exists()


def test_metadata_passes_through_at_once_and_preallocation_keeps_its_size(disk: Disk) -> None:
    """Gentler than a real power loss: an un-fsynced rename or mkdir survives it."""
    mnt = disk.start()
    write(mnt / "0.tmp", b"header", sync="fdatasync")
    fd = os.open(mnt / "0.tmp", os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, 1 << 20)  # etcd preallocates its WAL segments
        os.pwrite(fd, b"record", 6)
    finally:
        os.close(fd)
    os.rename(mnt / "0.tmp", mnt / "0.wal")
    os.mkdir(mnt / "snap")
    assert os.stat(mnt / "0.wal").st_size == 1 << 20
    assert disk.power_off() == {"dropped_bytes": 6, "dropped_files": 1}
    wal = (disk.backing / "0.wal").read_bytes()
    assert len(wal) == 1 << 20 and wal[:12] == b"header" + bytes(6) and (disk.backing / "snap").is_dir()


def test_a_helper_that_died_is_cleaned_up_and_a_busy_mount_point_refused(disk: Disk) -> None:
    disk.start()
    with pytest.raises(EnvironmentStateError, match="already a mount point"):
        powerloss_fs.start(disk.backing, disk.mount, disk.log, TIMEOUT)
    os.kill(disk.pid, signal.SIGKILL)  # the helper we started
    deadline = time.monotonic() + TIMEOUT
    while Path(f"/proc/{disk.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.05)  # until it is a zombie, or gone
    assert powerloss_fs.is_mounted(disk.mount)
    with pytest.raises(OSError) as dead:
        os.listdir(disk.mount)
    # Which error a dead FUSE daemon's mount gives depends on whether a request was in flight.
    assert dead.value.errno in (errno.ENOTCONN, errno.ECONNABORTED, errno.EIO)
    result = disk.power_off()
    assert result == {"dropped_bytes": 0, "dropped_files": 0, "note": f"powerloss-fs {disk.pid} was not running: "
                                                                       "nothing was held to drop"}
    assert not powerloss_fs.is_mounted(disk.mount)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(shutil.which("etcd") is None, reason="no etcd on PATH")
def test_etcd_keeps_every_acknowledged_write_across_a_power_loss(disk: Disk) -> None:
    mnt = disk.start()
    client, peer = _free_port(), _free_port()

    def etcd(data: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["etcd", "--name", "pl", "--data-dir", str(data), "--listen-client-urls", f"http://127.0.0.1:{client}",
             "--advertise-client-urls", f"http://127.0.0.1:{client}", "--listen-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"pl=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=open(disk.root / "etcd.log", "ab"),
        )

    def call(path: str, body: dict[str, object]) -> dict[str, object]:
        req = urllib.request.Request(f"http://127.0.0.1:{client}/v3/{path}", json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=2) as resp:
            return json.loads(resp.read())

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    def serving() -> None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                call("kv/range", {"key": b64("k")})
                return
            except OSError:
                assert time.monotonic() < deadline, (disk.root / "etcd.log").read_text()[-2000:]
                time.sleep(0.1)

    acked: list[int] = []
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            try:
                call("kv/put", {"key": b64(f"k{len(acked):05d}"), "value": b64("v" * 100)})
            except OSError:
                return  # the disk is gone under it
            acked.append(len(acked))

    proc = etcd(mnt / "etcd")
    try:
        serving()
        load = threading.Thread(target=writer)
        load.start()
        time.sleep(1.0)
        dropped = disk.power_off()  # under the running member, in the middle of its writes
        stop.set()
        load.join()
    finally:
        proc.kill()
        proc.wait()
    assert set(dropped) == {"dropped_bytes", "dropped_files"} and len(acked) > 10
    proc = etcd(disk.backing / "etcd")  # the disk as the power loss left it
    try:
        serving()
        got = call("kv/range", {"key": b64("k"), "range_end": b64("l"), "count_only": True})
        assert int(str(got.get("count", 0))) >= len(acked), f"acknowledged writes lost (power_off said {dropped})"
    finally:
        proc.kill()
        proc.wait()
