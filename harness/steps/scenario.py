"""What a scenario's steps hand each other (as target fixtures)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.faults.runner import ActiveFault
from harness.probes.placement import PodPlacement
from harness.providers.base import Seed
from harness.reference.render import ReferenceSpec


@dataclass
class Outage:
    """Faults applied by one When-step, and what the region looked like just before."""

    faults: list[ActiveFault]
    start: float
    leader_before: str | None
    leader_id_before: int
    healed_at: float | None = None
    returned: list[str] = field(default_factory=list)

    @property
    def zones(self) -> list[str]:
        return [f.target for f in self.faults]


@dataclass
class Shoot:
    """A reference control plane a Given-step deployed, and where its pods were placed then."""

    seed: Seed
    spec: ReferenceSpec
    placed: list[PodPlacement]
    etcds: dict[str, Any] = field(default_factory=dict)  # running for real: its etcd clusters as probes see them
