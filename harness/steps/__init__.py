"""Gherkin step definitions: thin functions that parse, call the harness and hand on state
through target_fixture. Registered by the harness's pytest plugin."""

STEP_MODULES = ["harness.steps.region", "harness.steps.faults", "harness.steps.checks", "harness.steps.placement",
                "harness.steps.shoot", "harness.steps.load", "harness.steps.aws", "harness.steps.clients",
                "harness.steps.detectors", "harness.steps.backups", "harness.steps.load_balancers",
                "harness.steps.bulk", "harness.steps.catch_up", "harness.steps.disruptions",
                "harness.steps.spread", "harness.steps.machines", "harness.steps.stand_in"]
