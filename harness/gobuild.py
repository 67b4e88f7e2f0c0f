"""Build the harness's Go programs with the machine's `go`: check it, lock, build, report.

Shared by harness/kube/binaries.py (the control-plane binaries), harness/etcd_builds.py and
the harness's own small programs (the Porcupine helper, powerloss-fs). Each caches its build
under a per-version directory; this module holds what they do around `go build`:

- `require_go`: a `go` on PATH that is new enough, asked inside the module to build, where
  a go >= 1.21 with GOTOOLCHAIN=auto (the default) switches to the toolchain go.mod names;
- `build_lock`: one build per cache across processes, saying what is awaited while another
  run holds the lock;
- `go_build`: `go build` with a progress heartbeat, killed on interrupt, its log tail in the
  error when it fails;
- `CachedProgram`: one of the harness's own programs, or a pinned module's command, found in
  the cache or built there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.errors import PrerequisiteError
from harness.locks import held, holders
from harness.files import cache_root

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
    """One build of `what` per cache across processes; a waiter says so every heartbeat_s, and
    a build started at idle priority (harness.builds, beside the tests) that someone now waits
    for runs at normal priority from then on: else the waiter's own processes (a seed kept up)
    would starve the build it waits for."""
    with held(lock_path, f"the build of {what}", progress, heartbeat_s,
              waiting=lambda path: hurry(holders(path))):
        yield


def hurry(pids: Sequence[int]) -> None:
    """Every thread of these processes and of their descendants that runs at idle priority back
    to normal (SCHED_OTHER); new compilers inherit it from the `go` that starts them."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    todo, seen = list(pids), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo += children.get(pid, [])
        for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
            try:
                if os.sched_getscheduler(int(task.name)) == os.SCHED_IDLE:
                    os.sched_setscheduler(int(task.name), os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                continue  # gone, or not ours to change


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
    started = time.monotonic()
    # go's work directory in one of ours, removed however the build ends: a build killed when
    # interrupted (or stopped because the run it was beside ended) leaves its own behind.
    with tempfile.TemporaryDirectory(prefix="ha-harness-go-") as work, open(log_path, "w") as log:
        env = {**os.environ, "CGO_ENABLED": "0", "GOTMPDIR": work}
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


def executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


@dataclass(frozen=True)
class CachedProgram:
    """A small Go program of the harness's own (its module beside the Python that runs it),
    built once per pinned source into ${XDG_CACHE_HOME:-~/.cache}/ha-harness/CACHE_DIR/, in a
    directory named after the pinned module's version and a hash of the sources."""

    module_dir: Path
    binary: str
    pin: str  # the module whose pinned version names the build, e.g. github.com/anishathalye/porcupine
    pin_label: str  # how progress lines name it: "Porcupine"
    cache_dir: str
    what: str  # what errors call it: "the linearizability checker"
    hint: str  # what to install or do when it cannot be built
    prebuild: str  # the command that builds it ahead of time
    min_go: tuple[int, int] = (1, 21)
    sources: tuple[str, ...] = ("go.mod", "go.sum", "main.go")
    package: str = "."  # what is built: our main package, or a pinned module's command

    def pinned_version(self) -> str:
        m = re.search(re.escape(self.pin) + r"\s+(v\S+)", (self.module_dir / "go.mod").read_text())
        if m is None:
            raise PrerequisiteError(f"{self.module_dir / 'go.mod'} does not pin {self.pin}")
        return m.group(1)

    def pinned_name(self) -> str:
        """The build's directory in the cache: changes with the pin and with our source."""
        h = hashlib.sha256()
        for name in self.sources:
            h.update(name.encode() + b"\0" + (self.module_dir / name).read_bytes() + b"\0")
        return f"{self.pinned_version()}-{h.hexdigest()[:12]}"

    def cache_root(self, env: Mapping[str, str] | None = None) -> Path:
        return cache_root(self.cache_dir, env)

    def target(self, cache_root: Path | None = None) -> Path:
        """Where the program for the pinned sources is, built or not yet."""
        return (self.cache_root() if cache_root is None else cache_root) / self.pinned_name() / self.binary

    def path(self, cache_root: Path | None = None, *, build: bool = True, progress: Progress,
             heartbeat_s: float = 30.0) -> Path:
        """The program for the pinned sources, built into the cache (under a lock) on first use."""
        target = self.target(cache_root)
        root, name = target.parent.parent, target.parent.name
        if executable(target):
            return target
        if not build:
            raise PrerequisiteError(f"{target} is not built and building is off; run `{self.prebuild}` once (needs go >= "
                                    f"{'.'.join(map(str, self.min_go))} and the Go module proxy), or pass the program's path")
        go = require_go(self.min_go, self.hint, self.what, self.module_dir)
        root.mkdir(parents=True, exist_ok=True)
        with build_lock(root / f".{name}.lock", self.binary, progress, heartbeat_s):
            if executable(target):  # the holder before us built it
                return target
            staging = root / f".{name}.partial"
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir()
            started = time.monotonic()
            progress(f"building {self.binary} ({self.pin_label} {self.pinned_version()}) into {target.parent} "
                     "(first use only; some seconds, plus the module download)")
            go_build(go, ["-trimpath", "-ldflags", "-s -w", "-o", str(staging / self.binary), self.package], self.module_dir,
                     staging / "build.log", self.binary, progress, heartbeat_s)
            if target.parent.exists():
                shutil.rmtree(target.parent)
            os.replace(staging, target.parent)
            progress(f"built {self.binary} in {time.monotonic() - started:.1f}s")
        return target
