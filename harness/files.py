"""Where the harness keeps what it builds, and how it replaces a file so that a reader never sees
half of one."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path


def cache_root(part: str, env: Mapping[str, str] | None = None) -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/ha-harness/<part>: the one place that reads XDG_CACHE_HOME and
    HOME for the harness's caches (`env`: os.environ unless given)."""
    env = os.environ if env is None else env
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path(env.get("HOME", "~")).expanduser() / ".cache"
    return base / "ha-harness" / part


def replace_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Write `text` to a file beside `path` and rename it over `path`. The file is `mode` from its
    first byte (a state file or a kubeconfig may hold a key); its name carries the pid, so two
    processes (or two threads of one) writing at once never share one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{threading.get_native_id()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            os.fchmod(out.fileno(), mode)
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def remove_partial(path: Path) -> list[Path]:
    """Remove what `replace_text` writers of `path` left half-written: a writer killed between
    writing and renaming (SIGKILL, the OOM killer) leaves its file beside `path`."""
    left = sorted(path.parent.glob(f".{path.name}.tmp*"))
    for tmp in left:
        tmp.unlink(missing_ok=True)
    return left
