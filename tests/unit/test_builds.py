"""harness.builds: each build timed, a failed one named, the command beside them decides the status."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import builds


def test_each_build_is_timed_and_a_failed_one_named(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(builds, "BUILDS", (("a program that builds", "this", ()),
                                           ("a program that cannot", "harness.no_such_module", ())))
    assert builds.run_builds(every=False) == 1
    err = capsys.readouterr().err
    assert "[builds] a program that builds: ready after 0s" in err
    assert "[builds] a program that cannot: FAILED (exit 1)" in err
    assert "[builds] done; failed: a program that cannot" in err


def test_the_command_beside_the_builds_decides_the_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "builds.log"
    status = builds.main(["--log", str(log), "--beside", "--", sys.executable, "-c", "import sys; sys.exit(3)"])
    assert status == 3
    assert log.exists()
    assert "building in the background at idle priority" in capsys.readouterr().err


def test_beside_without_a_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        builds.main(["--beside", "--"])
    assert e.value.code == 2
    assert "--beside needs a command after it" in capsys.readouterr().err
