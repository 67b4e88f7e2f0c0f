"""The fault contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, runtime_checkable

from harness.providers.base import Environment

if TYPE_CHECKING:
    from harness.config import Timeouts


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


# What a fault may offer besides: the runner asks each with isinstance.
@runtime_checkable
class Planned(Protocol):
    def plan(self, env: Environment, target: str) -> str | None:
        """What inject would do, for a dry run; changes nothing. Without it (or None) the runner
        says "apply KIND on TARGET"."""


@runtime_checkable
class WaitsOnPurpose(Protocol):
    def waits_up_to(self, timeouts: Timeouts) -> float:
        """Seconds an inject waits on purpose (a drain retrying evictions), added to its time limit."""


@runtime_checkable
class Observable(Protocol):
    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        """Evidence that the effect is in place, or None: the runner polls it for when the fault took
        effect. A fault without it is taken as in place once applied, and the timeline says so."""


@runtime_checkable
class ReadsBackLate(Protocol):
    """An Observable whose look reads an API back that may not show a change already in effect
    (`effect_reads_late = True`): a look that saw nothing does not narrow when it took effect."""

    effect_reads_late: bool


def reads_back_late(fault: object) -> bool:
    return isinstance(fault, ReadsBackLate) and fault.effect_reads_late


def lacks(env: Environment, capability: type, what: str) -> str | None:
    """The reason a fault is unavailable when `env` does not implement `capability`."""
    return None if isinstance(env, capability) else f"the {env.provider} provider cannot {what}"
