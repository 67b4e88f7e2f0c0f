"""The fault contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Protocol

from harness.providers.base import Environment


def _no_record(data: dict[str, Any]) -> None:
    pass


@dataclass(frozen=True)
class Injection:
    """What the runner hands an inject: the fault's run id (tags, names on shared infrastructure)
    and `record(data)`, which writes heal data to the ledger before each change a fault makes."""

    run_id: str
    record: Callable[[dict[str, Any]], None] = _no_record


class Fault(Protocol):
    """Choosing the target is the caller's business; a fault only applies and removes its effect."""

    kind: ClassVar[str]

    def available(self, env: Environment) -> str | None:
        """None when the fault can run on `env`, else why not."""

    def validate(self, env: Environment, target: str) -> str:
        """The canonical target name; raises ConfigError naming what is accepted."""

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        """Apply the effect; returns what heal needs (stored in the ledger)."""

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        """Remove the effect. Idempotent: safe to call twice, or after a half-done inject.
        `data` is what inject returned or recorded so far, always with the fault's `run_id`."""

    def plan(self, env: Environment, target: str) -> str:
        """What inject would do, for a dry run; changes nothing. Optional: the runner says
        "apply KIND on TARGET" for a fault without one. (Also optional: `waits_up_to(timeouts)`,
        seconds an inject waits on purpose, added to its time limit; `effect(env, target, data)`,
        evidence of the effect or None, which the runner polls for when it took effect; and
        `effect_reads_late = True` where that look reads an API back that may not show a change
        already in effect, so a look that saw nothing does not narrow when it took effect.)"""


def lacks(env: Environment, capability: type, what: str) -> str | None:
    """The reason a fault is unavailable when `env` does not implement `capability`."""
    return None if isinstance(env, capability) else f"the {env.provider} provider cannot {what}"
