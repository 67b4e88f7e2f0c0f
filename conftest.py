"""The harness's pytest plugin (and with it every step) is registered by its entry point."""

pytest_plugins = ["pytester"]
