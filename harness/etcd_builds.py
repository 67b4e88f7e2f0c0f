"""etcd at a chosen release, built once from the Go module proxy, with etcd's own gofail
failpoints compiled in when asked: what reproducing a historical etcd bug needs (the release that
had it, and a fixed one to show there is no false alarm).

    python -m harness.etcd_builds v3.5.4 [--failpoints]     # prints the binary's path
    make etcd-builds                                        # every release harness.bugs needs
    python -m harness.etcd_builds --all                     # and the pinned one, plain and with failpoints

Each supported release has its pins in harness/kube/gomod/etcd-<release>[-failpoints]/ (made
with `go get -tool go.etcd.io/etcd/server/v3@<release>` in an empty module; the pinned default
release is harness/kube/binaries.py's). A failpoints build copies the server module of that
release out of Go's module cache, lets gofail (pinned below, built from the proxy) rewrite its
`// gofail:` comments into failpoints, and builds against that copy (the pins' `replace`). Such
an etcd reads GOFAIL_HTTP=host:port and serves its failpoints there (`PUT /raftBeforeSave` with
`panic`). Builds land in ${XDG_CACHE_HOME:-~/.cache}/ha-harness/etcd/<release>[-failpoints]-<pins
hash>/etcd, under a lock; about 30-60 s each with a warm module cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness import gobuild
from harness.errors import ConfigError, PrerequisiteError
from harness.gobuild import Progress
from harness.kube import binaries
from harness.files import cache_root

GOMOD_DIR = Path(__file__).resolve().parent / "kube" / "gomod"
GOFAIL = "go.etcd.io/gofail"
GOFAIL_VERSION = "v0.2.0"
SERVER = "go.etcd.io/etcd/server/v3"
ETCDUTL = "go.etcd.io/etcd/etcdutl/v3"
GO_MIN_VERSION = (1, 26)


def _stderr_progress(message: str) -> None:
    print(f"[etcd] {message}", file=sys.stderr, flush=True)


def pins(version: str, failpoints: bool = False) -> Path:
    if version == binaries.ETCD_VERSION and not failpoints:
        return binaries.ETCD_GOMOD_DIR  # the control plane's own etcd
    return GOMOD_DIR / f"etcd-{version}{'-failpoints' if failpoints else ''}"


def supported(failpoints: bool = False) -> list[str]:
    """Releases with pins, newest last; the pinned default always without failpoints."""
    found = {p.name[len("etcd-"):].removesuffix("-failpoints") for p in GOMOD_DIR.glob("etcd-v*")
             if p.name.endswith("-failpoints") == failpoints and (p / "go.mod").exists()}
    if not failpoints:
        found.add(binaries.ETCD_VERSION)
    return sorted(found, key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)))


def check_version(version: str, failpoints: bool = False) -> str:
    """`version` as a supported release ("3.5.2" and "v3.5.2" alike); ConfigError listing the rest."""
    v = version if version.startswith("v") else f"v{version}"
    if v not in supported(failpoints):
        kind = "with failpoints" if failpoints else "of etcd"
        raise ConfigError(f"no pinned build {kind} for {version!r}; supported: {', '.join(supported(failpoints))}")
    return v


def digest(version: str, failpoints: bool) -> str:
    h = hashlib.sha256(f"{version} {failpoints} {GOFAIL_VERSION}".encode())
    d = pins(version, failpoints)
    for name in ("go.mod", "go.sum"):
        if (d / name).exists():
            h.update((d / name).read_bytes())
    return h.hexdigest()[:12]


def default_cache_root(env: Mapping[str, str] | None = None) -> Path:
    return cache_root("etcd", env)


def cached_path(version: str, failpoints: bool, cache_root: Path | None = None) -> Path:
    root = default_cache_root() if cache_root is None else cache_root
    return root / f"{version}{'-failpoints' if failpoints else ''}-{digest(version, failpoints)}" / "etcd"


def built_version(binary: Path) -> str | None:
    """What `etcd --version` says it is ("v3.5.2"), or None when it does not run."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"etcd Version:\s*(\d+\.\d+\.\d+)", out)
    return f"v{m.group(1)}" if m else None


def etcd_binary(version: str, failpoints: bool = False, *, cache_root: Path | None = None, build: bool = True,
                progress: Progress = _stderr_progress, heartbeat_s: float = 30.0) -> Path:
    """The etcd of `version` (with gofail's failpoints when asked), built into the cache on first use.
    The pinned default release without failpoints is harness/kube/binaries.py's build when that
    one exists."""
    version = check_version(version, failpoints)
    if version == binaries.ETCD_VERSION and not failpoints:
        found, _ = binaries.locate(binaries.sources_from_env())
        if "etcd" in found:  # built with the control plane's binaries already
            return found["etcd"]
    target = cached_path(version, failpoints, cache_root)
    if built_version(target) == version:
        return target
    if not build:
        raise PrerequisiteError(f"etcd {version}{' with failpoints' if failpoints else ''} is not built; run "
                                f"`python -m harness.etcd_builds {version}{' --failpoints' if failpoints else ''}`")
    go = gobuild.require_go(GO_MIN_VERSION, "install Go 1.26 or newer", f"etcd {version}", pins(version, failpoints))
    target.parent.mkdir(parents=True, exist_ok=True)
    with gobuild.build_lock(target.parent / ".lock", f"etcd {version}", progress, heartbeat_s):
        if built_version(target) == version:
            return target
        staging = target.parent / "src"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(pins(version, failpoints), staging)
        began = time.monotonic()
        progress(f"building etcd {version}{' with failpoints' if failpoints else ''} into {target.parent} "
                 "(first use only; about a minute, plus the module download)")
        if failpoints:
            _with_failpoints(go, version, staging, target.parent)
        gobuild.go_build(go, ["-trimpath", "-ldflags", "-s -w", "-o", str(target.parent / "etcd.partial"), SERVER],
                         staging, target.parent / "build.log", f"etcd {version}", progress, heartbeat_s)
        (target.parent / "etcd.partial").rename(target)
        shutil.rmtree(staging, ignore_errors=True)
        progress(f"built etcd {version} in {gobuild.format_duration(time.monotonic() - began)}")
    if built_version(target) != version:
        raise PrerequisiteError(f"{target} does not say it is etcd {version}")
    return target


def etcdutl_path(version: str = binaries.ETCD_VERSION, *, cache_root: Path | None = None) -> Path:
    """Where etcdutl_binary puts etcdutl of `version` (built or not yet)."""
    module = GOMOD_DIR / f"etcdutl-{version}"
    if not (module / "go.mod").exists():
        pinned = sorted(p.name[len("etcdutl-"):] for p in GOMOD_DIR.glob("etcdutl-v*"))
        raise ConfigError(f"no pinned etcdutl for {version!r}; pinned: {', '.join(pinned)}")
    h = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes()).hexdigest()[:12]
    return (default_cache_root() if cache_root is None else cache_root) / f"etcdutl-{version}-{h}" / "etcdutl"


def etcdutl_binary(version: str = binaries.ETCD_VERSION, *, cache_root: Path | None = None,
                   progress: Progress = _stderr_progress, heartbeat_s: float = 30.0) -> Path:
    """etcdutl, etcd's offline tool (`snapshot restore`), of `version` (pins in
    kube/gomod/etcdutl-<version>/), built into the cache on first use."""
    module = GOMOD_DIR / f"etcdutl-{version}"
    target = etcdutl_path(version, cache_root=cache_root)
    if gobuild.executable(target):
        return target
    go = gobuild.require_go(GO_MIN_VERSION, "install Go 1.26 or newer", f"etcdutl {version}", module)
    target.parent.mkdir(parents=True, exist_ok=True)
    with gobuild.build_lock(target.parent / ".lock", f"etcdutl {version}", progress, heartbeat_s):
        if gobuild.executable(target):
            return target
        began = time.monotonic()
        progress(f"building etcdutl {version} into {target.parent} (first use only; about a minute)")
        gobuild.go_build(go, ["-trimpath", "-ldflags", "-s -w", "-o", str(target.parent / "etcdutl.partial"), ETCDUTL],
                         module, target.parent / "build.log", f"etcdutl {version}", progress, heartbeat_s)
        (target.parent / "etcdutl.partial").rename(target)
        progress(f"built etcdutl {version} in {gobuild.format_duration(time.monotonic() - began)}")
    return target


def _with_failpoints(go: str, version: str, staging: Path, work: Path) -> None:
    """The server module of `version`, copied out of the module cache into staging/server (where
    the pins' `replace` points), its `// gofail:` comments turned into failpoints."""
    downloaded = _go(go, ["mod", "download", "-json", f"{SERVER}@{version}"], staging)
    source = Path(json.loads(downloaded)["Dir"])
    server = staging / "server"
    shutil.copytree(source, server)
    for path in [server, *server.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    tools = work / "tools"
    gofail = tools / "gofail"
    if not gofail.exists():
        _go(go, ["install", f"{GOFAIL}@{GOFAIL_VERSION}"], staging, {"GOBIN": str(tools)})
    packages = sorted({str(p.parent) for p in server.rglob("*.go") if "// gofail:" in p.read_text(errors="replace")})
    _run([str(gofail), "enable", *packages], staging)
    _go(go, ["mod", "edit", f"-require={GOFAIL}@{GOFAIL_VERSION}"], server)


def _go(go: str, args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> str:
    with tempfile.TemporaryDirectory(prefix="ha-harness-go-") as work:  # go's work directory, as gobuild's
        return _run([go, *args], cwd, {**(env or {}), "GOTMPDIR": work})


def _run(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> str:
    done = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})},
                          timeout=600)
    if done.returncode != 0:
        raise PrerequisiteError(f"`{' '.join(argv)}` failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout


def build_before_namespace(version: str | None, failpoints: bool = False) -> None:
    """Without root the harness runs in a network namespace of its own, with no route to the
    module proxy: the etcd it will run is built first, out here (a no-op when it is cached)."""
    etcd_binary(version or binaries.ETCD_VERSION, failpoints)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.etcd_builds", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="*", help="releases to build (default: every one harness.bugs needs)")
    ap.add_argument("--failpoints", action="store_true", help="with gofail's failpoints compiled in")
    ap.add_argument("--all", action="store_true", help="every etcd the harness runs: harness.bugs' releases, the "
                    "pinned release with and without failpoints, and its etcdutl (make prefetch)")
    args = ap.parse_args(argv)
    if args.all and args.versions:
        ap.error("--all builds every release the harness runs; name no release with it")
    wanted: list[tuple[str, bool]] = [(v, args.failpoints) for v in args.versions]
    if not wanted:
        from harness.bugs import BUGS

        wanted = sorted({(v, b.failpoints) for b in BUGS.values() for v in (b.buggy, b.fixed)})
        if args.all:
            wanted = sorted({*wanted, (binaries.ETCD_VERSION, False), (binaries.ETCD_VERSION, True)})
    try:
        for version, failpoints in wanted:
            print(etcd_binary(version, failpoints))
        if args.all:
            print(etcdutl_binary())
    except (ConfigError, PrerequisiteError) as e:
        print(f"etcd_builds: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
