"""Integration tests run the real local region: real etcd, namespaces and nftables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterator

import pytest

from harness import netns
from harness.config import Config, load_config
from harness.etcd_gateway import EtcdRequestError
from harness.providers.local.region import LocalEnvironment, LocalRegion

HARNESS = [sys.executable, "-m", "harness.cli"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.region)


def cli(*args: str, check: bool = False, timeout: float = 120, prefix: list[str] | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*(prefix or []), *HARNESS, *args], capture_output=True, text=True, timeout=timeout,
                          env=env or dict(os.environ), cwd=Path(__file__).parents[2])
    if check and proc.returncode != 0:
        raise AssertionError(f"harness {' '.join(args)} failed ({proc.returncode}): {proc.stderr}{proc.stdout}")
    return proc


def namespaces(name: str) -> list[str]:
    return [ns for ns in netns.list_netns() if ns.startswith(f"{name}-")]


def fault_tables(name: str) -> list[str]:
    out = netns.ns_run(f"{name}-router", ["nft", "list", "tables"], check=False)
    return [line.split()[-1] for line in out.splitlines() if "harness_" in line]


def reachable(env: LocalEnvironment, member: str, via_zone: str) -> bool:
    client = env.client(member, via_zone, timeout=0.3)
    try:
        client.status()
        return True
    except EtcdRequestError:
        return False
    finally:
        client.close()


def config_for(name: str) -> Config:
    return load_config(overrides={"region.name": name})


@pytest.fixture
def region_env(request: pytest.FixtureRequest) -> Iterator[LocalEnvironment]:
    """A region of this test's own, always removed afterwards."""
    name = getattr(request, "param", "it")
    region = LocalRegion(config_for(name))
    region.down()
    try:
        yield region.up()
    finally:
        region.down()


@contextmanager
def backed_up_with_seed(name: str, prefix: str, **region: Any) -> Iterator[LocalEnvironment]:
    """A region of its own with backups ([region] backups) and its seed, always removed afterwards."""
    provider = LocalRegion(load_config(overrides={"region.name": name, "region.subnet_prefix": prefix,
                                                  "region.backups": True,
                                                  **{f"region.{k}": v for k, v in region.items()}}))
    provider.down()
    env = provider.up()
    try:
        provider.seed(env)
        yield env
    finally:
        provider.down()
