"""Zone outage: everything crossing the zone's network boundary is denied (an empty network ACL).

Where the environment cuts a zone itself (the local region's router), it does; an environment
that cannot but lives in an AWS account (a cluster with [aws]) gets GEP-20's own outage: the
zone's opted-in subnets moved onto deny-all network ACLs (aws-zone-outage, scope `all`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from harness.faults.aws import AwsZoneOutage
from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, ZoneNetwork


class ZoneOutage:
    kind: ClassVar[str] = "zone-outage"

    def available(self, env: Environment) -> str | None:
        own = lacks(env, ZoneNetwork, "cut a zone off the network")
        through_aws = AwsZoneOutage().available(env)
        return None if own is None or through_aws is None else f"{own}, and {through_aws}"

    def validate(self, env: Environment, target: str) -> str:
        return env.zone(target)

    def plan(self, env: Environment, target: str) -> str | None:
        return None if isinstance(env, ZoneNetwork) else AwsZoneOutage().plan(env, target)

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        if isinstance(env, ZoneNetwork):
            return env.cut_zone(target)
        return AwsZoneOutage().inject(env, target, ctx)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if isinstance(env, ZoneNetwork):
            return env.zone_cut_effect(target, data)
        return AwsZoneOutage().effect(env, target, data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        if isinstance(env, ZoneNetwork):
            env.restore_zone(target, data)
        else:
            AwsZoneOutage().heal(env, target, data)
