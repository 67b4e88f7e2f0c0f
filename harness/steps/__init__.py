"""Gherkin step definitions: thin functions that parse, call the harness and hand on state
through target_fixture. Registered by the project's conftest.py (pytest_plugins)."""

STEP_MODULES = ["harness.steps.region", "harness.steps.faults", "harness.steps.checks"]
