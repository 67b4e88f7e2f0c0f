"""The must-fail scenarios, bound to pytest for the inner run of test_must_fail.py only (this file's
name keeps the suite's own collection away from it: every scenario here is meant to fail)."""

from pathlib import Path

from pytest_bdd import scenarios

scenarios(str(Path(__file__).resolve().parent / "features"))
