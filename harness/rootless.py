"""Running without root: re-execute inside a user+network+mount namespace.

A "holder" process (`unshare -Urnm ... sleep`) owns the namespaces; the real command
runs inside them through `nsenter`. For `harness up` the holder outlives the command,
so the region stays up; later commands find it in the state file and enter it again.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from typing import Sequence

from harness.errors import PrerequisiteError
from harness.processes import cmdline, run_to_end

ENV_FLAG = "HARNESS_IN_USERNS"
HOLDER_ENV = "HARNESS_HOLDER_PID"
# ip netns keeps its mounts under /run/netns; give the namespace its own, writable one.
HOLDER_SCRIPT = (
    "mount -t tmpfs harness /run/netns 2>/dev/null || mount -t tmpfs harness /run || exit 3; "
    "echo ready; exec sleep 2147483647"
)
NO_USERNS_HELP = (
    "the local region needs root or unprivileged user namespaces, and neither is available: "
    "run as root (sudo), or enable user namespaces (sysctl kernel.unprivileged_userns_clone=1 "
    "and user.max_user_namespaces > 0; on Ubuntu 24.04+ also kernel.apparmor_restrict_unprivileged_userns=0)"
)


def needs_reexec() -> bool:
    """Neither root nor inside the user namespace this module made."""
    return os.geteuid() != 0 and os.environ.get(ENV_FLAG) != "1"


def namespace_holder() -> int | None:
    """The pid of the process that owns the user namespace this process runs in, if it made one."""
    held = os.environ.get(HOLDER_ENV)
    return int(held) if held else None


def start_holder() -> int:
    """Start the process that owns the namespaces; return its pid once they are ready."""
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            raise PrerequisiteError(f"{tool} not found (Debian: util-linux); {NO_USERNS_HELP}")
    proc = subprocess.Popen(
        ["unshare", "--user", "--map-root-user", "--net", "--mount", "--propagation", "private", "sh", "-c", HOLDER_SCRIPT],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if line.strip() != "ready":
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise PrerequisiteError(f"{NO_USERNS_HELP} (unshare said: {err.strip()[:300]})")
    return proc.pid


def enter_argv(holder: int, argv: Sequence[str]) -> list[str]:
    # Our uid is mapped to root in the namespace already: nsenter must not try setgroups.
    # Entering a mount namespace resets the working directory; keep ours.
    return ["nsenter", f"--target={holder}", "--user", "--net", "--mount", "--preserve-credentials",
            f"--wd={os.getcwd()}", *argv]


def run_inside(holder: int, argv: Sequence[str]) -> int:
    env = dict(os.environ, **{ENV_FLAG: "1", HOLDER_ENV: str(holder), "HARNESS_OUTER_UID": str(os.getuid())})
    try:
        return run_to_end(enter_argv(holder, argv), "the harness in its namespaces", env=env)
    except KeyboardInterrupt:  # passed on, and waited for until the child tore down
        return 130


def holder_alive(pid: int | None) -> bool:
    return bool(pid) and "sleep" in cmdline(pid)


def reexec_if_needed(argv: Sequence[str], holder: int | None = None, keep_holder: bool = False) -> None:
    """When not root: run `argv` inside the namespaces (an existing holder's, or new ones) and exit."""
    if not needs_reexec():
        return
    own = holder is None or not holder_alive(holder)
    pid = start_holder() if own else holder
    assert pid is not None
    code = 1
    try:
        code = run_inside(pid, argv)
    finally:
        if own and not (keep_holder and code == 0):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    sys.exit(code)
