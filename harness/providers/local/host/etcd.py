"""Finding the etcd binary and running members inside node namespaces."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from harness.command_lines import EtcdServingTls, etcd_command
from harness.config import EtcdSettings
from harness.kube.binaries import ETCD_VERSION as PINNED
from harness.errors import PrerequisiteError
from harness.topology import Member

# etcd issue 13766: 3.5.0-3.5.2 can lose consistency when a member is killed under load.
UNSAFE_VERSIONS = ("3.5.0", "3.5.1", "3.5.2")
MISSING_HINT = (
    "leave [etcd] binary unset for the pinned etcd (built from the Go module proxy on first use), "
    "or name a binary with ETCD_BIN=/path/to/etcd or [etcd] binary in the config file"
)
GOFAIL_PORT = 22381  # a failpoints build serves its failpoints here, on the member's address


@dataclass(frozen=True)
class EtcdBinary:
    path: str
    etcdctl: str
    version: str

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)


def parse_version(output: str) -> str:
    match = re.search(r"etcd Version:\s*(\d+\.\d+\.\d+)", output)
    if not match:
        raise PrerequisiteError(f"could not read the etcd version from: {output.strip()[:200]!r}")
    return match.group(1)


def find_etcd(settings: EtcdSettings) -> EtcdBinary:
    """Resolve etcd and etcdctl, read the version, warn about known-unsafe releases. Without a
    binary of its own: the release of [etcd] version (default: the pinned one), built on first use."""
    if settings.binary is None:
        from harness.etcd_builds import etcd_binary

        name = str(etcd_binary(settings.version or PINNED, settings.failpoints))
    else:
        name = settings.binary
    path = shutil.which(name) if os.sep not in name else (name if os.access(name, os.X_OK) else None)
    if path is None:
        raise PrerequisiteError(f"etcd binary {name!r} not found or not executable; {MISSING_HINT}")
    ctl_name = settings.etcdctl or str(Path(path).with_name("etcdctl"))
    ctl = ctl_name if os.access(ctl_name, os.X_OK) else shutil.which("etcdctl")
    if ctl is None:
        raise PrerequisiteError(f"etcdctl not found next to {path} nor on PATH; install etcd-client or set [etcd] etcdctl")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        raise PrerequisiteError(f"{path} --version failed: {e}; {MISSING_HINT}") from None
    version = parse_version(out)
    if version in UNSAFE_VERSIONS:
        warnings.warn(
            f"etcd {version} at {path} can lose consistency when a member is killed under load "
            "(etcd issue 13766); use 3.4.x or >= 3.5.3",
            stacklevel=2,
        )
    return EtcdBinary(path=path, etcdctl=ctl, version=version)


def member_args(
    binary: EtcdBinary, member: Member, initial_cluster: str, data_dir: Path, settings: EtcdSettings, token: str,
    tls: EtcdServingTls | None = None,
) -> list[str]:
    scheme, rest = member.client_url.split("://")
    address = rest.split(":")[0]
    # `ip netns exec` and `env` both exec: the pid started is etcd's own.
    env = ["env", f"GOFAIL_HTTP={address}:{GOFAIL_PORT}"] if settings.failpoints else []
    args = [
        *env,
        *etcd_command(binary.path, member.name, data_dir, member.client_url, member.peer_url, initial_cluster, token,
                      metrics_url=f"http://{address}:2381", also_listen=(f"{scheme}://127.0.0.1:2379",), tls=tls),
        f"--heartbeat-interval={settings.heartbeat_ms}",
        f"--election-timeout={settings.election_ms}",
    ]
    # Said either way: 3.4 defaults pre-vote off, 3.5+ on; both take the flag.
    args.append(f"--pre-vote={'true' if settings.pre_vote else 'false'}")
    if settings.snapshot_count is not None:
        args.append(f"--snapshot-count={settings.snapshot_count}")
    if settings.quota_backend_mib is not None:
        args.append(f"--quota-backend-bytes={settings.quota_backend_mib << 20}")
    if settings.unsafe_no_fsync:
        args.append("--unsafe-no-fsync")
    if settings.backend_batch_interval_ms is not None:
        args.append(f"--backend-batch-interval={settings.backend_batch_interval_ms}ms")
    if settings.log_level is not None:
        args.append(f"--log-level={settings.log_level}")
    return args


def start_member(ns: str, args: list[str], log_path: Path) -> int:
    """Start a member detached (own session), so it outlives `harness up`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc.pid
