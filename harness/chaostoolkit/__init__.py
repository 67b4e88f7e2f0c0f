"""chaostoolkit extension: actions, probes and tolerances that `chaos run chaos/<name>.json` calls.

Every function takes its `arguments` plus chaostoolkit's `configuration`, whose keys name the
environment (`harness_region`, optionally `harness_provider`, `harness_config`,
`harness_state_dir`); see `context.py`. Faults go through the harness's FaultRunner (ledger,
watchdog, timeouts), so a fault injected by one activity is healed by a later one, by
`harness heal`, or by its watchdog. Probes observe and return values; tolerances
(`tolerances.py`) judge them through `harness.judge`, as the Gherkin Then-steps do.
"""
