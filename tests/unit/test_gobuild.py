"""A Go build leaves nothing in the temporary directory, whether it fails or is interrupted (as
`make test` stops the builds still running beside it when pytest ends): go's own work directory
goes in one of the harness's, removed however the build ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness import gobuild
from harness.errors import PrerequisiteError

# Stands in for `go build`: makes its work directory where go would, then fails or hangs.
FAKE_GO = """#!/bin/sh
mkdir -p "${GOTMPDIR:-${TMPDIR:-/tmp}}/go-build123/b001" && touch "${GOTMPDIR:-${TMPDIR:-/tmp}}/go-build123/b001/_pkg_.a"
touch "$MARK"
[ "$HANG" = 1 ] && exec sleep 60
exit 3
"""


def _fake_go(tmp_path: Path) -> Path:
    go = tmp_path / "go"
    go.write_text(FAKE_GO)
    go.chmod(0o755)
    return go


def test_a_failed_build_leaves_no_work_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("MARK", str(tmp_path / "started"))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    with pytest.raises(PrerequisiteError, match="exit 3"):
        gobuild.go_build(str(_fake_go(tmp_path)), ["./..."], tmp_path, tmp_path / "build.log", "a fake", lambda _: None, 60)
    assert (tmp_path / "started").exists() and list(scratch.iterdir()) == []


def test_an_interrupted_build_leaves_no_work_directory(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    mark = tmp_path / "started"
    script = textwrap.dedent(f"""
        from pathlib import Path
        from harness import gobuild
        gobuild.go_build({str(_fake_go(tmp_path))!r}, ["./..."], Path({str(tmp_path)!r}),
                         Path({str(tmp_path / 'build.log')!r}), "a fake", lambda _: None, 60)
    """)
    env = {**os.environ, "TMPDIR": str(scratch), "MARK": str(mark), "HANG": "1"}
    build = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.exists(), "the fake go never ran"
    assert [p.name for p in scratch.iterdir()][0].startswith("ha-harness-go-")
    build.send_signal(signal.SIGINT)
    assert build.wait(30) != 0
    assert list(scratch.iterdir()) == []
