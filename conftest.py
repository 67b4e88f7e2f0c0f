"""The harness's pytest plugin (and with it every step) is registered by its entry point."""

import os

from harness.etcd_builds import default_cache_root

# pytester points HOME at each test's directory; the pytest sessions those tests start must still
# find the pinned builds (etcd, Kubernetes) where they are, not build them anew against a deadline.
os.environ.setdefault("XDG_CACHE_HOME", str(default_cache_root().parents[1]))

pytest_plugins = ["pytester"]
