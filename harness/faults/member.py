"""etcd member kill (SIGKILL of the member's process only) and restart on heal."""

from __future__ import annotations

import signal
from typing import Any, ClassVar

from harness.providers.local.region import LocalEnvironment


class MemberKill:
    kind: ClassVar[str] = "member-kill"

    def available(self, env: LocalEnvironment) -> str | None:
        return None

    def validate(self, env: LocalEnvironment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: LocalEnvironment, target: str) -> dict[str, Any]:
        env.signal_member(target, signal.SIGKILL)
        return {}

    def heal(self, env: LocalEnvironment, target: str, data: dict[str, Any]) -> None:
        env.start_member(target)
