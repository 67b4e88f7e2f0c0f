"""A session's region left behind by a run that died is removed by the next run with its name;
one whose owner still runs is refused, and nothing of it is touched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import load_config
from harness.errors import EnvironmentStateError
from harness.providers.base import CloudStarter, Reclaimable, Replaceable
from harness.providers.local.region import LocalRegion


def region(tmp_path: Path) -> LocalRegion:
    config = load_config(overrides={"region.name": "rc"}, environ={"HARNESS_STATE_DIR": str(tmp_path)})
    return LocalRegion(config)


def test_the_local_region_offers_what_the_plugin_asks_for_by_protocol(tmp_path: Path) -> None:
    r = region(tmp_path)
    assert isinstance(r, Reclaimable) and isinstance(r, Replaceable) and isinstance(r, CloudStarter)
    assert r.reclaim() == []  # nothing there: nothing removed


def test_a_live_owners_region_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    r = region(tmp_path)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        r.path.write_text(json.dumps({"owner_pid": owner.pid}))
        with pytest.raises(EnvironmentStateError, match=rf"region 'rc' is in use by process {owner.pid}; wait for it"):
            r.reclaim()
        assert r.path.exists()
    finally:
        owner.kill()
        owner.wait()
