"""What a run's verdicts are about, said once where the environment runs and carried to where the
report and the JUnit are written."""

from __future__ import annotations

from typing import Any


class Facts:
    """What the verdicts are about (the provider, zones, etcd's and Kubernetes' versions), found
    where the environment runs: in this process or a pytest-xdist worker. Each test's teardown
    report carries what is new to the process that writes the report and the JUnit."""

    def __init__(self) -> None:
        self.environment: dict[str, Any] = {}  # the report's environment
        self.suite: dict[str, str] = {}  # the JUnit's testsuite properties, which CI reads
        self._sent: dict[str, Any] = {}

    def said(self, **facts: Any) -> None:
        """Facts for both the report and the JUnit."""
        self.environment.update(facts)
        self.suite.update({k: str(v) for k, v in facts.items()})

    def news(self) -> dict[str, Any] | None:
        now = {"environment": dict(self.environment), "suite": dict(self.suite)}
        if now == self._sent:
            return None
        self._sent = now
        return now
