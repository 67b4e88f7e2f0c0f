"""The harness's pytest plugin (and with it every step) is registered by its entry point."""

from __future__ import annotations

import os
from typing import Any

import pytest

from harness.etcd_builds import default_cache_root

# pytester points HOME at each test's directory; the pytest sessions those tests start must still
# find the pinned builds (etcd, Kubernetes) where they are, not build them anew against a deadline.
os.environ.setdefault("XDG_CACHE_HOME", str(default_cache_root().parents[1]))

pytest_plugins = ["pytester"]

# With pytest-xdist (make test: --dist loadgroup), tests that name their own regions, seeds and
# module-wide fixtures run on one worker together: a directory whose files share names (`it`,
# `lc`) as one group, else a file as one; the files marked `own_reference` (each runs a whole
# reference control plane of its own with real pods: a `harness run`, a cluster on the seed) as
# one group too, so that two never share the machine's CPUs: on 2 cores, two at once left a
# kube-apiserver started in the outage unready for over 60 s (the scheduler sees test ids only:
# the files are listed here, and a unit test keeps the list equal to the marked files).
# Scenarios and unit tests go to whichever worker is free;
# each worker's session region is its own (`pt0`, `pt1`, ...). The groups come from the paths:
# xdist's xdist_group markers no longer reach its scheduler under pytest 9.2, whose test ids are
# no longer the `_nodeid` xdist appends the group to.
_ONE_GROUP = ("tests/integration/", "tests/must_fail/")
_FILE_GROUPS = ("tests/kube/", "tests/plugin/", "tests/aws/")
OWN_REFERENCE = ("tests/kube/test_chaos_job.py", "tests/kube/test_cluster_provider.py")


def xdist_group(nodeid: str) -> str | None:
    """The group a test runs in (None: any worker, on its own)."""
    path = nodeid.split("::", 1)[0]
    if path in OWN_REFERENCE:
        return "whole reference control planes"
    return next((d for d in _ONE_GROUP if path.startswith(d)), None) or next(
        (path for d in _FILE_GROUPS if path.startswith(d)), None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByPath(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid) or nodeid

    return ByPath(config, log)
