"""The harness's own pytest plugin is registered by its entry point; the steps are loaded here."""

from harness.steps import STEP_MODULES

pytest_plugins = [*STEP_MODULES, "pytester"]
