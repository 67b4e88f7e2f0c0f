"""Each member's data directory as a small filesystem of its own ([region] member_disk_mib): a
tmpfs mounted before the member starts and unmounted by `down`, and a ballast file that fills it
(the member-disk-full fault) and goes again on heal or sweep. etcd meets ENOSPC there as on a
full volume: its next backend commit fails and the member exits ("failed to commit tx")."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from harness import netns
from harness.errors import CapabilityMissing, EnvironmentStateError

BALLAST = "harness-ballast"  # etcd warns about a file it does not know in its data directory, nothing more


def mount(path: Path, mib: int, timeout: float) -> None:
    path.mkdir(parents=True, exist_ok=True)
    netns.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m,mode=0700", "tmpfs", str(path)], timeout=timeout)


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below `root`, deepest first (the order to unmount them in)."""
    root = root.resolve()
    found = []
    for line in Path("/proc/mounts").read_text().splitlines():
        point = Path(line.split()[1].replace("\\040", " "))
        if point == root or root in point.parents:
            found.append(point)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def unmount_under(root: Path, timeout: float) -> list[str]:
    removed = []
    for point in mounts_under(root):
        netns.run(["umount", "--lazy", str(point)], check=False, timeout=timeout)
        removed.append(f"filesystem {point}")
    return removed


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def own_disk(path: Path, member: str) -> Path:
    if not os.path.ismount(path):
        raise CapabilityMissing(f"{member}'s data directory {path} is not a filesystem of its own: bring the region "
                                "up with [region] member_disk_mib (e.g. `harness up --member-disk-mib 192`)")
    return path


def fill(path: Path, leave: int) -> int:
    """Allocate all but `leave` bytes of the filesystem at `path` to the ballast; returns its size."""
    ballast = path / BALLAST
    size = max(0, free_bytes(path) - leave)
    fd = os.open(ballast, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        while size > 0:
            try:
                os.posix_fallocate(fd, 0, size)
                break
            except OSError as e:  # the member wrote in between: take what is left
                if e.errno != errno.ENOSPC:
                    raise EnvironmentStateError(f"cannot fill {path}: {e}") from None
                size = max(0, os.fstat(fd).st_size + free_bytes(path) - leave)
    finally:
        os.close(fd)
    return size


def empty(path: Path) -> bool:
    """Remove the ballast; True when there was one."""
    try:
        (path / BALLAST).unlink()
        return True
    except FileNotFoundError:
        return False


def ballasts(root: Path) -> list[Path]:
    found = []
    for member in sorted(root.iterdir()) if root.exists() else []:
        try:  # a mount whose filesystem died (powerloss-fs killed) fails here: no ballast on it
            if (member / BALLAST).exists():
                found.append(member / BALLAST)
        except OSError:
            continue
    return found
