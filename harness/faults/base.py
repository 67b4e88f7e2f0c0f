"""The fault contract."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from harness.providers.base import Environment


class Fault(Protocol):
    """Choosing the target is the caller's business; a fault only applies and removes its effect."""

    kind: ClassVar[str]

    def available(self, env: Environment) -> str | None:
        """None when the fault can run on `env`, else why not."""

    def validate(self, env: Environment, target: str) -> str:
        """The canonical target name; raises ConfigError naming what is accepted."""

    def inject(self, env: Environment, target: str) -> dict[str, Any]:
        """Apply the effect; returns what heal needs (stored in the ledger)."""

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        """Remove the effect. Idempotent: safe to call twice, or after a half-done inject."""


def lacks(env: Environment, capability: type, what: str) -> str | None:
    """The reason a fault is unavailable when `env` does not implement `capability`."""
    return None if isinstance(env, capability) else f"the {env.provider} provider cannot {what}"
