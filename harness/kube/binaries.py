"""Find, check and (on first use) build the control-plane binaries at pinned versions.

Lookup order for each binary: a directory the caller names (config/CLI), then
KUBEBUILDER_ASSETS, then the per-version cache under ${XDG_CACHE_HOME:-~/.cache}/ha-harness/kube/.
Binaries missing from all three are built with the machine's `go` from the pinned modules in
./gomod (Kubernetes), ./gomod/kwok and ./gomod/etcd into that cache; three modules so that
each binary is built from exactly its upstream dependency versions.

etcd is built too, not taken from Debian: with bookworm's etcd-server 3.4.23 kube-apiserver
1.36 starts, but disables RequestWatchProgress (needs etcd >= 3.4.31 / 3.5.13) and rejects
client-go's streaming lists; kwok's informers then keep failing their watches, renew node
leases from a stale cache (conflicts) and the nodes flap NotReady without any fault injected.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness import gobuild
from harness.errors import PrerequisiteError
from harness.gobuild import Progress
from harness.files import cache_root

KUBERNETES_VERSION = "v1.36.3"
KWOK_VERSION = "v0.8.0"
ETCD_VERSION = "v3.5.35"
# Directory name of the build cache: changes whenever any pin changes.
PINNED_VERSION = f"{KUBERNETES_VERSION}-kwok-{KWOK_VERSION}-etcd-{ETCD_VERSION}"
# Oldest etcd releases whose watch progress notifications kube-apiserver trusts.
ETCD_MIN_34 = (3, 4, 31)
ETCD_MIN_35 = (3, 5, 13)

GOMOD_DIR = Path(__file__).resolve().parent / "gomod"
KWOK_GOMOD_DIR = GOMOD_DIR / "kwok"
ETCD_GOMOD_DIR = GOMOD_DIR / "etcd"
# gomod/go.mod says `go 1.26.0`. A go >= 1.21 with GOTOOLCHAIN=auto (the default) fetches
# that toolchain itself when run inside gomod/, so the version is checked there.
GO_MIN_VERSION = (1, 26)

# Binary name -> (Go package, module directory it is built from).
PACKAGES: dict[str, tuple[str, Path]] = {
    "etcd": ("go.etcd.io/etcd/server/v3", ETCD_GOMOD_DIR),
    "kube-apiserver": ("k8s.io/kubernetes/cmd/kube-apiserver", GOMOD_DIR),
    "kube-controller-manager": ("k8s.io/kubernetes/cmd/kube-controller-manager", GOMOD_DIR),
    "kube-scheduler": ("k8s.io/kubernetes/cmd/kube-scheduler", GOMOD_DIR),
    "kwok": ("sigs.k8s.io/kwok/cmd/kwok", KWOK_GOMOD_DIR),
}
ALL_BINARIES = tuple(PACKAGES)

_VERSION_LDFLAGS = " ".join(
    [
        "-s -w",
        f"-X k8s.io/component-base/version.gitVersion={KUBERNETES_VERSION}",
        "-X k8s.io/component-base/version.gitMajor=1",
        f"-X k8s.io/component-base/version.gitMinor={KUBERNETES_VERSION.split('.')[1]}",
        "-X k8s.io/component-base/version.gitTreeState=clean",
        f"-X k8s.io/client-go/pkg/version.gitVersion={KUBERNETES_VERSION}",
    ]
)


def _stderr_progress(message: str) -> None:
    print(f"[kube] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class BinarySources:
    """Where to look, in order; None means that source is not configured."""

    explicit_dir: Path | None = None
    assets_dir: Path | None = None
    cache_root: Path | None = None


@dataclass(frozen=True)
class KubeBinaries:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path

    def path(self, name: str) -> Path:
        found: Path = getattr(self, name.replace("-", "_"))
        return found


def sources_from_env(explicit_dir: Path | None = None, env: Mapping[str, str] | None = None) -> BinarySources:
    """The one place that reads KUBEBUILDER_ASSETS, XDG_CACHE_HOME and HOME."""
    env = os.environ if env is None else env
    assets = env.get("KUBEBUILDER_ASSETS") or None
    return BinarySources(
        explicit_dir=explicit_dir,
        assets_dir=Path(assets) if assets else None,
        cache_root=cache_root("kube", env),
    )


def cache_dir(cache_root: Path) -> Path:
    return cache_root / PINNED_VERSION


# --- versions -----------------------------------------------------------------------------

_SEMVER = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_version(output: str, binary: str) -> tuple[int, int, int] | None:
    """Pull the version out of `<binary> --version` output; None if it has none."""
    if binary == "etcd":
        m = re.search(r"etcd Version:\s*v?(\d+)\.(\d+)\.(\d+)", output)
    elif binary == "kwok":
        m = re.search(r"\bkwok version v?(\d+)\.(\d+)\.(\d+)", output)
    else:
        m = re.search(r"Kubernetes v(\d+)\.(\d+)\.(\d+)", output)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def _as_tuple(version: str) -> tuple[int, int, int]:
    m = _SEMVER.fullmatch(version)
    assert m is not None, version
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def version_problem(binary: str, found: tuple[int, int, int] | None) -> str | None:
    """Why a found version is unacceptable, or None if it is fine."""
    if found is None:
        return "its --version output has no recognisable version"
    shown = "v" + ".".join(map(str, found))
    if binary == "etcd":
        ok = found[0] == 3 and (found >= ETCD_MIN_35 or ETCD_MIN_34 <= found < (3, 5, 0))
        if not ok:
            return f"it is etcd {shown}; etcd 3.5.13+ (or 3.4.31+, 3.6.x) is needed for kube-apiserver's watch progress"
        return None
    wanted = KWOK_VERSION if binary == "kwok" else KUBERNETES_VERSION
    if found != _as_tuple(wanted):
        return f"it is {shown}; the harness is pinned to {wanted}"
    return None


def binary_version(path: Path) -> tuple[int, int, int] | None:
    try:
        done = subprocess.run([str(path), "--version"], check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PrerequisiteError(f"cannot run {path} --version: {exc}") from exc
    return parse_version(done.stdout + done.stderr, path.name)


def _check(path: Path, origin: str) -> Path:
    problem = version_problem(path.name, binary_version(path))
    if problem:
        wanted = {"etcd": f"{ETCD_VERSION} (or any 3.5.13+)", "kwok": KWOK_VERSION}.get(path.name, KUBERNETES_VERSION)
        raise PrerequisiteError(
            f"{path} (from {origin}) has the wrong version: {problem}. "
            f"Replace it with {path.name} {wanted}, or remove it from {origin} so the harness builds "
            "the pinned one into its cache."
        )
    return path


def _executable(directory: Path, name: str) -> Path | None:
    p = directory / name
    return p if p.is_file() and os.access(p, os.X_OK) else None


# --- lookup -------------------------------------------------------------------------------


def locate(sources: BinarySources) -> tuple[dict[str, Path], list[str]]:
    """Resolve each binary by the lookup order without building anything.

    Returns (found name -> checked path, names still missing). A binary found in a source
    with the wrong version is an error, not skipped: the user pointed there on purpose.
    """
    if sources.explicit_dir is not None and not sources.explicit_dir.is_dir():
        raise PrerequisiteError(
            f"binary directory {sources.explicit_dir} does not exist; pass an existing directory holding "
            f"{', '.join(ALL_BINARIES)}, or none to use KUBEBUILDER_ASSETS / the build cache"
        )
    found: dict[str, Path] = {}
    missing: list[str] = []
    ordered: list[tuple[str, Path]] = []
    if sources.explicit_dir is not None:
        ordered.append(("the configured binary directory", sources.explicit_dir))
    if sources.assets_dir is not None:
        ordered.append(("KUBEBUILDER_ASSETS", sources.assets_dir))
    if sources.cache_root is not None:
        ordered.append(("the harness build cache", cache_dir(sources.cache_root)))
    for name in ALL_BINARIES:
        for origin, directory in ordered:
            p = _executable(directory, name)
            if p is not None:
                found[name] = _check(p, f"{origin} {directory}")
                break
        else:
            missing.append(name)
    return found, missing


def ensure_binaries(
    sources: BinarySources,
    *,
    build: bool = True,
    progress: Progress = _stderr_progress,
) -> KubeBinaries:
    """Every binary at its pinned version, building missing ones on first use."""
    found, missing = locate(sources)
    if sources.explicit_dir is not None and missing:
        raise PrerequisiteError(
            f"binary directory {sources.explicit_dir} lacks {', '.join(missing)}; "
            "add them (pinned versions: Kubernetes "
            f"{KUBERNETES_VERSION}, kwok {KWOK_VERSION}, etcd {ETCD_VERSION}) or do not configure a binary directory "
            "so the harness builds them into its cache"
        )
    if missing:
        if not build or sources.cache_root is None:
            raise PrerequisiteError(
                f"{', '.join(missing)} not found and building is off; run the harness once with building "
                f"enabled, or provide Kubernetes {KUBERNETES_VERSION} / kwok {KWOK_VERSION} / etcd {ETCD_VERSION} binaries"
            )
        built = build_binaries(sources.cache_root, progress=progress)
        for name in missing:
            found[name] = _check(built / name, f"the harness build cache {built}")
    return KubeBinaries(**{name.replace("-", "_"): path for name, path in found.items()})


# --- kwok stages ---------------------------------------------------------------------------

# How fake nodes and pods progress: the "fast" node and pod stages plus the lease heartbeat.
# The kwok controller binary does not carry them (only kwokctl embeds them), so they are read
# from the pinned kwok module and kept next to the kwok binary.
KWOK_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
STAGES_FILE = "kwok-stages.yaml"


def _kwok_module_dir() -> Path:
    go = _require_go()
    try:
        done = subprocess.run(
            [go, "mod", "download", "-json", f"sigs.k8s.io/kwok@{KWOK_VERSION}"],
            check=False, capture_output=True, text=True, timeout=600, cwd=KWOK_GOMOD_DIR,
        )
        return Path(json.loads(done.stdout)["Dir"])
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as exc:
        raise PrerequisiteError(f"could not fetch kwok {KWOK_VERSION} for its stage definitions: {exc}") from None


def kwok_stages(kwok_binary: Path) -> str:
    """kwok's stage definitions at the pinned version, as one multi-document YAML."""
    beside = kwok_binary.parent / STAGES_FILE
    if beside.is_file():
        return beside.read_text()
    module = _kwok_module_dir()
    text = "\n---\n".join((module / f).read_text().strip() for f in KWOK_STAGE_FILES) + "\n"
    try:
        beside.write_text(text)
    except OSError:
        pass  # a read-only binary directory: read the module again next time
    return text


def kwok_crd(kwok_binary: Path, plural: str) -> str:
    """The CustomResourceDefinition of one of kwok's kinds (e.g. "portforwards") at the pinned version."""
    beside = kwok_binary.parent / f"kwok-crd-{plural}.yaml"
    if beside.is_file():
        return beside.read_text()
    text = (_kwok_module_dir() / "kustomize" / "crd" / "bases" / f"kwok.x-k8s.io_{plural}.yaml").read_text()
    try:
        beside.write_text(text)
    except OSError:
        pass  # a read-only binary directory: read the module again next time
    return text


# --- build --------------------------------------------------------------------------------

_GO_HINT = (
    "install Go >= 1.26 (the official release tarball unpacked into /usr/local/go, with "
    "/usr/local/go/bin on PATH), or any Go >= 1.21 with network access to the Go module proxy, "
    "which switches to go1.26 by itself (Debian bookworm's golang-go is 1.19, too old), "
    f"or provide Kubernetes {KUBERNETES_VERSION}, kwok {KWOK_VERSION} and etcd {ETCD_VERSION} binaries in a binary directory"
)


def _require_go() -> str:
    return gobuild.require_go(GO_MIN_VERSION, _GO_HINT, "the control-plane binaries", GOMOD_DIR)


def build_binaries(cache_root: Path, *, progress: Progress = _stderr_progress, heartbeat_s: float = 30.0) -> Path:
    """Build the pinned binaries into cache_root/<pinned version>/ once, even across processes."""
    target = cache_dir(cache_root)
    if all(_executable(target, n) for n in ALL_BINARIES):
        return target
    go = _require_go()
    cache_root.mkdir(parents=True, exist_ok=True)
    with gobuild.build_lock(cache_root / f".{PINNED_VERSION}.lock", "the control-plane binaries", progress, heartbeat_s):
        # The holder before us may have finished the build.
        if all(_executable(target, n) for n in ALL_BINARIES):
            return target
        staging = cache_root / f".{PINNED_VERSION}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        started = time.monotonic()
        progress(
            f"building Kubernetes {KUBERNETES_VERSION}, kwok {KWOK_VERSION} and etcd {ETCD_VERSION} into {target} "
            "(first use only; about 10 min on 2 cores with a cold Go build cache, plus module downloads)"
        )
        for i, (name, (package, module_dir)) in enumerate(PACKAGES.items(), 1):
            _build_one(go, name, package, module_dir, staging, f"{i}/{len(PACKAGES)}", progress, heartbeat_s)
        kwok_stages(staging / "kwok")
        kwok_crd(staging / "kwok", "portforwards")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
        progress(f"built all binaries in {gobuild.format_duration(time.monotonic() - started)}")
    return target


def _build_one(
    go: str, name: str, package: str, module_dir: Path, out_dir: Path, step: str, progress: Progress, heartbeat_s: float
) -> None:
    def stepped(message: str) -> None:
        progress(f"[{step}] {message}")

    started = time.monotonic()
    stepped(f"building {name} ...")
    ldflags = "-s -w" if name == "etcd" else _VERSION_LDFLAGS
    # -trimpath as every other build of the harness's (gobuild.CachedProgram, etcd_builds): compiler
    # flags are part of Go's cache keys, so kube-proxy and the etcd builds reuse what this compiled.
    gobuild.go_build(
        go, ["-trimpath", "-ldflags", ldflags, "-o", str(out_dir / name), package], module_dir, out_dir / f"{name}.build.log",
        f"{name} ({package})", stepped, heartbeat_s, niceness=10,
    )
    stepped(f"built {name} in {gobuild.format_duration(time.monotonic() - started)}")
