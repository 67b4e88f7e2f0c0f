"""Is a recorded history of etcd operations linearizable? Porcupine decides.

Porcupine (github.com/anishathalye/porcupine, the checker etcd's robustness tests use) runs
in a small Go program of ours, ./porcupine (module `ha-harness/porcupine`, Porcupine pinned
in its go.mod). It reads the history as oplog JSON (`oplog.py`) and checks it against a
key-value model partitioned by key: put, get, delete, and txn as compare-and-put; the
revisions, where recorded, must agree too (see main.go). It prints a JSON verdict and, on
request, writes Porcupine's HTML visualisation.

The program is found or built like the control-plane binaries (harness/kube/binaries.py):
an explicit path, else the cache ${XDG_CACHE_HOME:-~/.cache}/ha-harness/porcupine/
<porcupine version>-<source hash>/, else built there with the machine's `go` under a lock,
with a progress line on stderr. `python -m harness.validate.linearizability` builds it
ahead of time; `python -m harness.validate.linearizability HISTORY.json [OUT.html]` checks
a recorded history.

When Porcupine finds the history not linearizable, `explain` looks at the offending keys
and names what it recognises (stale read, lost write, read of a value never written, read
before its write): hints for the report; Porcupine's verdict is the judgement.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import gobuild
from harness.errors import PrerequisiteError
from harness.gobuild import Progress
from harness.validate import oplog
from harness.validate.oplog import Op

MODULE_DIR = Path(__file__).resolve().parent / "porcupine"
BINARY_NAME = "porcupine-check"
DEFAULT_TIMEOUT_S = 300.0


def _stderr_progress(message: str) -> None:
    print(f"[porcupine] {message}", file=sys.stderr, flush=True)


def _program(module_dir: Path | None = None) -> gobuild.CachedProgram:
    module_dir = MODULE_DIR if module_dir is None else module_dir
    return gobuild.CachedProgram(
        module_dir, BINARY_NAME, "github.com/anishathalye/porcupine", "Porcupine", "porcupine",
        "the linearizability checker", _go_hint(module_dir), "python -m harness.validate.linearizability")


def porcupine_version(module_dir: Path | None = None) -> str:
    """The Porcupine release pinned in the helper's go.mod, e.g. "v1.3.1"."""
    return _program(module_dir).pinned_version()


def pinned_name(module_dir: Path | None = None) -> str:
    """Directory name in the cache: changes with the Porcupine pin and with our source."""
    return _program(module_dir).pinned_name()


def default_cache_root(env: Mapping[str, str] | None = None) -> Path:
    return _program().cache_root(env)


def helper_binary(
    cache_root: Path | None = None,
    *,
    build: bool = True,
    progress: Progress = _stderr_progress,
    heartbeat_s: float = 30.0,
) -> Path:
    """The porcupine-check program for the pinned sources, built into the cache on first use."""
    return _program().path(cache_root, build=build, progress=progress, heartbeat_s=heartbeat_s)


def _go_hint(module_dir: Path) -> str:
    return (
        "install Go >= 1.21 (the official release tarball unpacked into /usr/local/go, with /usr/local/go/bin "
        "on PATH) with access to the Go module proxy, or pass the path of a built porcupine-check "
        f"(`go build -o porcupine-check .` in {module_dir})"
    )


# --- anomalies Porcupine's verdict does not name --------------------------------------------


@dataclass(frozen=True)
class StaleRead:
    """A read returned a value although a newer write had been acknowledged before it began."""

    read: Op
    newer: Op

    def __str__(self) -> str:
        seen = "<absent>" if self.read.result is None else repr(self.read.result)
        return (
            f"stale read: {self.read}, but {self.newer} was acknowledged before the read began, "
            f"after {seen} was written"
        )


@dataclass(frozen=True)
class LostWrite:
    """An acknowledged write no read ever returned, while later reads saw older values."""

    write: Op
    stale_reads: int

    def __str__(self) -> str:
        return (
            f"lost write: {self.write} was acknowledged but never read; {self.stale_reads} read(s) that began "
            "after it returned saw an older value"
        )


@dataclass(frozen=True)
class UnwrittenRead:
    """A read returned a value no operation in the history wrote."""

    read: Op

    def __str__(self) -> str:
        return f"read of a value never written: {self.read}"


@dataclass(frozen=True)
class ReadBeforeWrite:
    """A read returned a value before the write of that value was invoked."""

    read: Op
    write: Op

    def __str__(self) -> str:
        return f"read before its write: {self.read} returned {self.read.result!r}, written by {self.write} invoked later"


HistoryAnomaly = StaleRead | LostWrite | UnwrittenRead | ReadBeforeWrite

_INITIAL = Op(client=-1, kind="delete", key="", value=None, invoke=-math.inf, ret=-math.inf, ok=True)


def _end(op: Op) -> float:
    """When an op's effect is certainly over: its return if acknowledged, else never."""
    return op.ret if op.ok and op.ret is not None else math.inf


def _sets_state(op: Op) -> bool:
    """An acknowledged write whose effect on the key is known (a put, a delete, a succeeded txn)."""
    return op.ok is True and (op.kind in ("put", "delete") or (op.kind == "txn" and op.succeeded is True))


def explain(ops: Iterable[Op], keys: Iterable[str] | None = None) -> list[HistoryAnomaly]:
    """Name the anomalies recognisable in the history of the given keys (all keys if None).

    Pure and quadratic per key; meant for the keys Porcupine found not linearizable.
    """
    grouped = oplog.by_key(ops)
    wanted = sorted(grouped) if keys is None else [k for k in keys if k in grouped]
    found: list[HistoryAnomaly] = []
    for key in wanted:
        found.extend(_explain_key(grouped[key]))
    return found


def _explain_key(ops: Sequence[Op]) -> list[HistoryAnomaly]:
    writer = {op.value: op for op in ops if op.writes_value and op.value is not None}
    deleters = [op for op in ops if op.kind == "delete" and op.ok is not False]
    settled = [op for op in ops if _sets_state(op)]
    reads = [op for op in ops if op.kind == "get" and op.ok is True]
    found: list[HistoryAnomaly] = []
    witnessed: Counter[Op] = Counter()
    read_values = {r.result for r in reads if r.result is not None}
    for r in reads:
        assert r.ret is not None
        if r.result is not None:
            w = writer.get(r.result)
            if w is None:
                found.append(UnwrittenRead(r))
                continue
            if w.invoke > r.ret:
                found.append(ReadBeforeWrite(r, w))
                continue
            sources = [w]
            newer = [s for s in settled if s is not w and s.value != r.result]
        else:
            sources = [_INITIAL, *deleters]
            newer = [s for s in settled if s.kind != "delete"]
        # A newer write: acknowledged before the read began, and invoked after every
        # write that could have produced what the read saw had certainly finished.
        latest_source_end = max(_end(s) for s in sources)
        witnesses = [s for s in newer if s.ret is not None and s.ret < r.invoke and s.invoke > latest_source_end]
        if witnesses:
            found.append(StaleRead(r, max(witnesses, key=lambda s: s.ret or 0.0)))
            witnessed.update(witnesses)
    for w, n in witnessed.items():
        if w.kind != "delete" and w.value not in read_values:
            found.append(LostWrite(w, n))
    return found


# --- the check ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    ok: bool
    result: str  # "Ok", "Illegal", or "Unknown" (the check ran out of time)
    operations: int  # operations Porcupine checked
    keys: int
    indeterminate: int  # writes with an open end
    dropped: int  # definite failures and failed reads, which have no effect
    elapsed_s: float
    illegal_keys: tuple[str, ...] = ()
    visualization: Path | None = None
    anomalies: tuple[HistoryAnomaly, ...] = field(default=(), compare=False)
    porcupine: str = ""

    def __str__(self) -> str:
        size = (
            f"{self.operations:,} operations on {self.keys:,} keys ({self.indeterminate:,} indeterminate writes, "
            f"{self.dropped:,} failed operations left out), checked in {self.elapsed_s:.2f}s by {self.porcupine}"
        )
        if self.ok:
            return f"linearizable: {size}"
        if self.result == "Unknown":
            return f"linearizability unknown: the check ran out of time; {size}"
        shown = ", ".join(repr(k) for k in self.illegal_keys[:10])
        more = f" and {len(self.illegal_keys) - 10} more" if len(self.illegal_keys) > 10 else ""
        lines = [f"NOT linearizable: keys {shown}{more}; {size}"]
        if self.anomalies:
            counts = Counter(str(a).split(":", 1)[0] for a in self.anomalies)
            lines.append("recognised: " + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
            lines += [f"  {a}" for a in self.anomalies[:10]]
            if len(self.anomalies) > 10:
                lines.append(f"  ... {len(self.anomalies) - 10} more")
        if self.visualization is not None:
            lines.append(f"Porcupine's visualisation: {self.visualization}")
        return "\n".join(lines)


def check(
    ops: Sequence[Op],
    visualization: Path | None,
    binary: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    *,
    always_visualize: bool = False,
    include_serializable: bool = False,
) -> Verdict:
    """Check `ops` with Porcupine; write the HTML visualisation to `visualization` if it fails.

    `binary`: a built porcupine-check (default: found or built by helper_binary()).
    `timeout`: seconds for the whole check; past it the verdict is "Unknown" (not ok).
    Serializable reads may be stale by design and are left out, unless `include_serializable`
    holds them to the linearizable standard too.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    oplog.validate(ops)
    ops = oplog.as_linearizable(ops) if include_serializable else oplog.linearizable_reads_only(ops)
    exe = helper_binary() if binary is None else binary
    if not gobuild.executable(exe):
        raise PrerequisiteError(f"the linearizability checker {exe} does not exist or is not executable")
    cmd = [str(exe), "-timeout", f"{timeout:.3f}s"]
    if visualization is not None:
        visualization.parent.mkdir(parents=True, exist_ok=True)
        visualization.unlink(missing_ok=True)
        cmd += ["-visualize", str(visualization)]
        if always_visualize:
            cmd.append("-visualize-always")
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, input=oplog.dumps(ops), capture_output=True, text=True, timeout=timeout + 60, check=False)
    except subprocess.TimeoutExpired:
        return Verdict(False, "Unknown", len(ops), len({o.key for o in ops}), 0, 0, time.monotonic() - started)
    except OSError as exc:
        raise PrerequisiteError(f"cannot run the linearizability checker {exe}: {exc}") from None
    if done.returncode != 0:
        raise PrerequisiteError(f"{exe} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    try:
        out: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        raise PrerequisiteError(f"{exe} printed no verdict: {done.stdout[-500:]!r} {done.stderr[-500:]!r}") from None
    illegal = tuple(out.get("illegal_keys") or ())
    return Verdict(
        ok=bool(out["ok"]),
        result=str(out["result"]),
        operations=int(out["operations"]),
        keys=int(out["keys"]),
        indeterminate=int(out["indeterminate"]),
        dropped=int(out["dropped"]),
        elapsed_s=float(out["elapsed_s"]),
        illegal_keys=illegal,
        visualization=Path(out["visualization"]) if out.get("visualization") else None,
        anomalies=tuple(explain(ops, illegal)) if illegal else (),
        porcupine=str(out.get("porcupine", "")),
    )


def main(argv: Sequence[str]) -> int:
    """No arguments: find or build the checker. HISTORY [OUT.html]: check a recorded history."""
    try:
        exe = helper_binary()
        if not argv:
            print(f"{BINARY_NAME}: {exe}")
            return 0
        ops = oplog.load(Path(argv[0]))
        verdict = check(ops, Path(argv[1]) if len(argv) > 1 else None, exe)
    except PrerequisiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except oplog.MalformedHistory as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(verdict)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
