"""harness.teardown: heal, then undeploy, then the provider's down, and nothing forgotten on a failure.

The real path (a cluster's reference removed by `harness down`) runs in tests/kube/test_cli.py;
here the order and what a failure leaves.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness import teardown
from harness.errors import ConfigError


class Ledger:
    provider, durable = "test", True

    def __init__(self, faults: list[dict[str, Any]], references: list[str]) -> None:
        self._faults, self.references = faults, references
        self.config = type("C", (), {"timeouts": type("T", (), {"deploy": 5.0})()})()

    def faults(self) -> list[dict[str, Any]]:
        return list(self._faults)

    def forget_fault(self, fault_id: str) -> None:
        self._faults = [f for f in self._faults if f["id"] != fault_id]

    def sweep(self) -> list[str]:
        return ["swept"]

    def describe(self) -> dict[str, Any]:
        return {"references": self.references}


class Provider:
    name = "test"

    def __init__(self, env: Ledger | None, calls: list[str]) -> None:
        self.env, self.calls = env, calls

    def left_to_heal(self) -> Ledger | None:
        return self.env

    def seed(self, env: Any) -> str:
        return "seed"

    def down(self) -> list[str]:
        self.calls.append("down")
        return ["record"]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    monkeypatch.setattr(teardown, "undeploy", lambda seed, ns, timeout: calls.append(f"undeploy {ns}") or [f"namespace {ns}"])
    return calls


def test_heals_and_undeploys_before_the_provider_forgets(calls: list[str]) -> None:
    removed = teardown.take_down(Provider(Ledger([], ["ref-a", "ref-b"]), calls))  # type: ignore[arg-type]
    assert calls == ["undeploy ref-a", "undeploy ref-b", "down"]
    assert removed == ["swept", "namespace ref-a", "namespace ref-b", "record"]


def test_a_provider_whose_down_takes_the_faults_with_it_is_only_taken_down(calls: list[str]) -> None:
    assert teardown.take_down(Provider(None, calls)) == ["record"]  # type: ignore[arg-type]
    assert calls == ["down"]


def test_a_heal_that_fails_keeps_the_record_and_deploys(calls: list[str]) -> None:
    env = Ledger([{"id": "no-such-fault:x:1", "kind": "no-such-fault", "target": "x", "data": {}}], ["ref-a"])
    with pytest.raises(ConfigError, match="no-such-fault"):
        teardown.take_down(Provider(env, calls))  # type: ignore[arg-type]
    assert calls == []  # neither undeployed nor forgotten: `harness heal` and `harness down` can try again
    assert env.faults()
