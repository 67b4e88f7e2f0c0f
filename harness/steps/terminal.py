"""Saying something on the terminal from inside a test run: past pytest's output capture, so that
a region's bring-up (inside the first scenario's setup) and a long run's progress show at once."""

from __future__ import annotations

import contextlib
import sys

import pytest


def say(config: pytest.Config, text: str) -> None:
    """One line on the terminal now; from a pytest-xdist worker on its stderr (which is the
    terminal's), prefixed with the worker's id."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        text, reporter = f"[{worker['workerid']}] {text}", None
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        if reporter is not None:
            reporter.write_line(text)
        else:
            print(text, file=sys.stderr, flush=True)
