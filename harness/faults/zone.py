"""Zone outage: everything crossing the zone's network boundary is denied (an empty network ACL)."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, ZoneNetwork


class ZoneOutage:
    kind: ClassVar[str] = "zone-outage"

    def available(self, env: Environment) -> str | None:
        return lacks(env, ZoneNetwork, "cut a zone off the network")

    def validate(self, env: Environment, target: str) -> str:
        return env.zone(target)

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, ZoneNetwork)
        return env.cut_zone(target)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, ZoneNetwork)
        return env.zone_cut_effect(target, data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, ZoneNetwork)
        env.restore_zone(target, data)
