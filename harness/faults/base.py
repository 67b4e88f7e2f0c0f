"""The fault contract."""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from harness.providers.local.region import LocalEnvironment


class Fault(Protocol):
    """Choosing the target is the caller's business; a fault only applies and removes its effect."""

    kind: ClassVar[str]

    def available(self, env: LocalEnvironment) -> str | None:
        """None when the fault can run on `env`, else why not."""

    def validate(self, env: LocalEnvironment, target: str) -> str:
        """The canonical target name; raises ConfigError naming what is accepted."""

    def inject(self, env: LocalEnvironment, target: str) -> dict[str, Any]:
        """Apply the effect; returns what heal needs (stored in the ledger)."""

    def heal(self, env: LocalEnvironment, target: str, data: dict[str, Any]) -> None:
        """Remove the effect. Idempotent: safe to call twice, or after a half-done inject."""
