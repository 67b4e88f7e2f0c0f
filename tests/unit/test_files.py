from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness.files import cache_root, replace_text


def test_cache_root_from_xdg_cache_home_else_home() -> None:
    assert cache_root("kube", {"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/ha-harness/kube")
    assert cache_root("etcd", {"HOME": "/h"}) == Path("/h/.cache/ha-harness/etcd")


def test_a_replaced_file_has_its_mode_and_nothing_is_left_beside_it(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    replace_text(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o600
    replace_text(path, "newer", 0o644)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_write_that_fails_leaves_the_old_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        replace_text(path, "\udcff")  # a lone surrogate cannot be written
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["state.json"]
