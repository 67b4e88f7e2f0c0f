"""etcd member kill (SIGKILL of the member's process only) and restart on heal."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, MemberProcesses


class MemberKill:
    """SIGKILL of an etcd member's process. Target: a member (the region's, or a shoot's etcd
    under test). In effect once its process is gone; heal starts it again from its data (a shoot's
    member is restarted by its node agent)."""

    kind: ClassVar[str] = "member-kill"

    def available(self, env: Environment) -> str | None:
        return lacks(env, MemberProcesses, "kill etcd member processes")

    def validate(self, env: Environment, target: str) -> str:
        return env.member(target).name

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, MemberProcesses)
        return {"pid": env.kill_member(target)}

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        # kill_member returns only once it has seen the process gone.
        return {"process_gone": data["pid"]} if data.get("pid") else None

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, MemberProcesses)
        env.start_member(target)
