"""A child that tears down on SIGINT (a pytest of scenarios) is waited for through a Ctrl-C:
it gets one SIGINT, however often the parent is interrupted, and is never killed mid-teardown."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.processes import run_to_end

# Counts the SIGINTs it gets; on the first, a teardown of 2 s, then it says so and exits 130.
CHILD = textwrap.dedent("""
    import signal, sys, time
    got = []
    signal.signal(signal.SIGINT, lambda *_: got.append(1))
    open(sys.argv[1] + ".started", "w").close()
    deadline = time.monotonic() + 60
    while not got and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(2.0)
    open(sys.argv[1], "w").write(f"tore down after {len(got)} SIGINT(s)")
    sys.exit(130 if got else 0)
""")

# Runs the child through run_to_end, as the CLI does; exits 130 on the KeyboardInterrupt it passes on.
PARENT = textwrap.dedent("""
    import signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from harness.processes import run_to_end
    try:
        sys.exit(run_to_end([sys.executable, sys.argv[1], sys.argv[2]], "the child"))
    except KeyboardInterrupt:
        sys.exit(130)
""")


def _started(marker: Path) -> None:
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.02)


@pytest.mark.parametrize("interrupts", [1, 3])
def test_an_interrupted_parent_waits_for_its_childs_teardown(tmp_path: Path, interrupts: int) -> None:
    child, said = tmp_path / "child.py", tmp_path / "said"
    child.write_text(CHILD)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(child), str(said)], stderr=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[2])
    _started(Path(f"{said}.started"))
    for _ in range(interrupts):  # as a terminal's Ctrl-C: to the parent's process group, not the child's
        parent.send_signal(signal.SIGINT)
        time.sleep(0.5)  # Popen.wait gives a child 0.25 s after a Ctrl-C: one more within it is the same one
    _, err = parent.communicate(timeout=30)
    assert parent.returncode == 130, err
    assert said.read_text() == "tore down after 1 SIGINT(s)", err
    assert "waiting for the child" in err and "to heal its faults and tear down" in err
    assert err.count("still waiting for the child") == interrupts - 1, err


def test_a_child_past_its_deadline_tears_down_before_the_timeout_is_raised(tmp_path: Path) -> None:
    child, said = tmp_path / "child.py", tmp_path / "said"
    child.write_text(CHILD)
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_to_end([sys.executable, str(child), str(said)], "the child", timeout=1.0)
    assert said.read_text() == "tore down after 1 SIGINT(s)"
    assert time.monotonic() - began >= 3.0, "the teardown of 2 s was awaited"


def test_a_child_that_ends_on_its_own_gives_its_status(tmp_path: Path) -> None:
    assert run_to_end([sys.executable, "-c", "import sys; sys.exit(3)"], "the child") == 3
