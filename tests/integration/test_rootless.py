"""Without root: the harness re-executes itself in a user+network+mount namespace."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.processes import pid_alive as alive

REPO = Path(__file__).parents[2]
# An interpreter the unprivileged user can run (a venv under /root may not be readable);
# the CLI needs only the standard library.
SYSTEM_PYTHON = "/usr/bin/python3"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="needs root to switch to an unprivileged user, setpriv and a system python3",
)


@pytest.fixture(scope="module")
def nobody_home() -> Iterator[dict[str, str]]:
    """A HOME of the unprivileged user's own, removed afterwards, holding copies of this machine's
    etcd and etcdctl (this user's cache is not readable by it): nothing is built again as that
    user, and nothing it writes (Go's caches, the harness's) stays behind."""
    from harness.config import load_config
    from harness.providers.local.host.etcd import find_etcd

    home = Path(tempfile.mkdtemp(prefix="harness-nobody-home-"))
    try:
        binary = find_etcd(load_config().etcd)
        for name, source in (("etcd", binary.path), ("etcdctl", binary.etcdctl)):
            shutil.copy2(source, home / name)
        home.chmod(0o755)
        os.chown(home, 65534, 65534)
        yield {"HOME": str(home), "ETCD_BIN": str(home / "etcd")}
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for left in ("/tmp/ha-harness-65534", "/dev/shm/ha-harness-65534", "/var/tmp/ha-harness-65534"):
            with contextlib.suppress(OSError):  # the user's own directories, once empty: as found
                os.rmdir(left)


def as_nobody(env: dict[str, str], *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**env, "PYTHONPATH": str(REPO), "PATH": path or os.environ["PATH"]}
    return subprocess.run(
        [*NOBODY, "env", "-i", *(f"{k}={v}" for k, v in env.items()), SYSTEM_PYTHON, "-m", "harness.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=env["HOME"],
    )


def test_up_fault_heal_down_without_root(nobody_home: dict[str, str]) -> None:
    as_nobody(nobody_home, "--name", "rl", "down")
    try:
        up = as_nobody(nobody_home, "--name", "rl", "up")
        assert up.returncode == 0, up.stderr
        assert "/tmp/ha-harness-65534/region-rl.json" in up.stdout
        state = json.loads(Path("/tmp/ha-harness-65534/region-rl.json").read_text())
        holder = state["holder_pid"]
        assert holder and alive(holder)
        desc = json.loads(as_nobody(nobody_home, "--name", "rl", "status", "--json").stdout)
        assert [m["health"] for m in desc["members"]] == ["healthy"] * 3 and desc["leader"]
        assert as_nobody(nobody_home, "--name", "rl", "fault", "zone-outage", "zone-b").returncode == 0
        healed = as_nobody(nobody_home, "--name", "rl", "heal")
        assert "healed zone-outage:zone-b" in healed.stdout, healed.stderr
    finally:
        down = as_nobody(nobody_home, "--name", "rl", "down")
    assert down.returncode == 0 and "netns rl-router" in down.stdout, down.stderr
    assert not alive(holder), "the namespace holder is gone with the region"
    assert not Path("/tmp/ha-harness-65534/region-rl.json").exists()


def test_without_user_namespaces_it_says_how_to_fix_it(nobody_home: dict[str, str]) -> None:
    # A PATH whose unshare refuses, as on a kernel with user namespaces disabled
    # (in a directory the unprivileged user can read: pytest's tmp_path is not).
    bindir = Path(tempfile.mkdtemp(prefix="harness-nouserns-", dir="/tmp"))
    try:
        bindir.chmod(0o755)
        fake = bindir / "unshare"
        fake.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
        fake.chmod(0o755)
        proc = as_nobody(nobody_home, "--name", "rn", "up", path=f"{bindir}:{os.environ['PATH']}")
    finally:
        shutil.rmtree(bindir)
    assert not Path("/tmp/ha-harness-65534/region-rn.json").exists()
    assert proc.returncode == 2
    assert "needs root or unprivileged user namespaces" in proc.stderr
    assert "kernel.unprivileged_userns_clone=1" in proc.stderr and "Operation not permitted" in proc.stderr


def test_pytest_runs_a_scenario_without_root(nobody_home: dict[str, str]) -> None:
    site = sysconfig.get_paths()["purelib"]
    system = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if system.stdout.strip() != str(sys.version_info[:2]):
        pytest.skip(f"{SYSTEM_PYTHON} is not Python {sys.version_info[:2]}; cannot borrow this venv's packages")
    reports = Path(tempfile.mkdtemp(prefix="harness-nobody-", dir="/tmp"))
    try:
        reports.chmod(0o777)
        cfg = reports / "harness.toml"
        cfg.write_text(f'[paths]\nreports_dir = "{reports}"\n')
        proc = subprocess.run(
            [*NOBODY, "env", "-i", *(f"{k}={v}" for k, v in nobody_home.items()), f"PATH={os.environ['PATH']}",
             f"PYTHONPATH={REPO}:{site}",
             SYSTEM_PYTHON, "-m", "pytest", "features", "-k", "followers_zone_does_not_disturb", "-q", "-p", "no:cacheprovider",
             "--region-name", "pn", "--harness-config", str(cfg)],
            capture_output=True, text=True, timeout=300, cwd=REPO,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "1 passed" in proc.stdout
        assert list((reports / "runs").glob("*follower*.json"))
    finally:
        shutil.rmtree(reports, ignore_errors=True)
