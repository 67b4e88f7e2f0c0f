"""The harness's pytest plugin (and with it every step) is registered by its entry point."""

import os

import pytest

from harness.etcd_builds import default_cache_root

# pytester points HOME at each test's directory; the pytest sessions those tests start must still
# find the pinned builds (etcd, Kubernetes) where they are, not build them anew against a deadline.
os.environ.setdefault("XDG_CACHE_HOME", str(default_cache_root().parents[1]))

pytest_plugins = ["pytester"]

# With pytest-xdist (make test), tests that name their own regions, seeds and module-wide
# fixtures run on one worker together: a directory whose files share names (`it`, `lc`) as one
# group, else a file as one. Scenarios and unit tests go to whichever worker is free; each worker's
# session region is its own (`pt0`, `pt1`, ...).
_ONE_GROUP = ("tests/integration", "tests/must_fail")
_FILE_GROUPS = ("tests/kube", "tests/plugin", "tests/aws")


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if not item.path.is_relative_to(config.rootpath):
            continue
        path = item.path.relative_to(config.rootpath).as_posix()
        group = next((d for d in _ONE_GROUP if path.startswith(f"{d}/")), None) or next(
            (path for d in _FILE_GROUPS if path.startswith(f"{d}/")), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
