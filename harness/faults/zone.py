"""Zone outage: everything crossing the zone's network boundary is denied (an empty network ACL).

Where the environment cuts a zone itself (the local region's router), it does; an environment
that cannot but lives in an AWS account (a cluster with [aws]) gets GEP-20's own outage: the
zone's opted-in subnets moved onto deny-all network ACLs (aws-zone-outage, scope `all`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from harness.faults.base import Injection, lacks
from harness.providers.base import Environment, ZoneNetwork

if TYPE_CHECKING:
    from harness.faults.aws import AwsZoneOutage


def _through_aws() -> AwsZoneOutage:
    """The cloud's way, for an environment that cannot cut a zone itself. Imported here: boto3 is
    not needed where the environment has its own way (the CLI runs rootless without it)."""
    from harness.faults.aws import AwsZoneOutage

    return AwsZoneOutage()


class ZoneOutage:
    """Every packet crossing the zone's subnet dropped, both ways (GEP-20's deny-all network ACL).
    Target: a zone. On the local region the router's deny-all table, in effect once its drop
    counters count a packet; on a cluster with `[aws]`, the AWS zone outage (aws-zone-outage).
    Heal removes the table (the ACLs swapped back); nothing inside the zone is touched."""

    kind: ClassVar[str] = "zone-outage"

    def available(self, env: Environment) -> str | None:
        own = lacks(env, ZoneNetwork, "cut a zone off the network")
        if own is None:
            return None
        through_aws = _through_aws().available(env)
        return None if through_aws is None else f"{own}, and {through_aws}"

    def validate(self, env: Environment, target: str) -> str:
        return env.zone(target)

    def plan(self, env: Environment, target: str) -> str | None:
        return None if isinstance(env, ZoneNetwork) else _through_aws().plan(env, target)

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        if isinstance(env, ZoneNetwork):
            return env.cut_zone(target)
        return _through_aws().inject(env, target, ctx)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        if isinstance(env, ZoneNetwork):
            return env.zone_cut_effect(target, data)
        return _through_aws().effect(env, target, data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        if isinstance(env, ZoneNetwork):
            env.restore_zone(target, data)
        else:
            _through_aws().heal(env, target, data)
