"""Build the harness's Go programs with the machine's `go`: check it, lock, build, report.

Shared by harness/kube/binaries.py (the control-plane binaries) and
harness/validate/linearizability.py (the Porcupine helper). Each caches its build under a
per-version directory; this module holds what both do around `go build`:

- `require_go`: a `go` on PATH that is new enough, asked inside the module to build, where
  a go >= 1.21 with GOTOOLCHAIN=auto (the default) switches to the toolchain go.mod names;
- `build_lock`: one build per cache across processes, saying what is awaited while another
  run holds the lock;
- `go_build`: `go build` with a progress heartbeat, killed on interrupt, its log tail in the
  error when it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from harness.errors import PrerequisiteError
from harness.locks import held

Progress = Callable[[str], None]

# Seconds `go version` may take: a toolchain switch downloads the toolchain first.
GO_VERSION_TIMEOUT_S = 300.0
# Lines of the build log quoted in the error when a build fails.
LOG_TAIL_LINES = 30


def format_duration(seconds: float) -> str:
    """"7s", "1m05s": how long something has taken, for progress lines."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def require_go(min_version: tuple[int, int], hint: str, what: str, module_dir: Path) -> str:
    """The `go` on PATH if it builds `module_dir` at min_version or newer.

    `what` names what is to be built ("the linearizability checker"); `hint` says what to
    install or provide instead; both go into the PrerequisiteError otherwise.
    """
    go = shutil.which("go")
    if go is None:
        raise PrerequisiteError(f"{what} must be built but `go` is not on PATH: {hint}")
    try:
        done = subprocess.run(
            [go, "version"], check=False, capture_output=True, text=True, timeout=GO_VERSION_TIMEOUT_S, cwd=module_dir
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrerequisiteError(f"cannot run `{go} version` in {module_dir} to build {what}: {exc}; {hint}") from None
    out = (done.stdout + done.stderr).strip()
    m = re.search(r"go version go(\d+)\.(\d+)", out)
    if m is None or (int(m.group(1)), int(m.group(2))) < min_version:
        wanted = ".".join(map(str, min_version))
        raise PrerequisiteError(
            f"{go} is too old or unusable to build {what}: go >= {wanted} is needed, and `go version` in "
            f"{module_dir} says {out!r}; {hint}"
        )
    return go


@contextmanager
def build_lock(lock_path: Path, what: str, progress: Progress, heartbeat_s: float) -> Iterator[None]:
    """One build of `what` per cache across processes; a waiter says so every heartbeat_s."""
    with held(lock_path, f"the build of {what}", progress, heartbeat_s):
        yield


def go_build(
    go: str,
    args: Sequence[str],
    module_dir: Path,
    log_path: Path,
    what: str,
    progress: Progress,
    heartbeat_s: float,
    *,
    niceness: int = 0,
) -> None:
    """Run `go build -mod=readonly ARGS` in module_dir with CGO off, output into log_path.

    Says "still building WHAT" every heartbeat_s; kills the build if interrupted; on failure
    raises PrerequisiteError with the log's last lines and keeps the log, else deletes it.
    `niceness` > 0 runs the build under `nice -n`.
    """
    cmd = [go, "build", "-mod=readonly", *args]
    if niceness:
        cmd = ["nice", "-n", str(niceness), *cmd]
    env = {**os.environ, "CGO_ENABLED": "0"}
    started = time.monotonic()
    with open(log_path, "w") as log:
        # Its own process group, so an interrupt kills the compilers go started as well.
        proc = subprocess.Popen(
            cmd, cwd=module_dir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )
        done = threading.Event()

        def beat() -> None:
            while not done.wait(heartbeat_s):
                progress(f"still building {what}, {format_duration(time.monotonic() - started)} elapsed")

        threading.Thread(target=beat, daemon=True).start()
        try:
            rc = proc.wait()
        except BaseException:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            raise
        finally:
            done.set()
    if rc != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        raise PrerequisiteError(
            f"building {what} with {go} failed (exit {rc}) in {module_dir}; full log {log_path}; last lines:\n{tail}"
        )
    log_path.unlink(missing_ok=True)
