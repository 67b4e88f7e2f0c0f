"""What a scenario's steps hand each other (as target fixtures)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from harness.faults.runner import ActiveFault, effect_began
from harness.probes.catch_up import CatchUp
from harness.kube.placement import PodPlacement
from harness.topology import Seed
from harness.reference.render import ReferenceSpec
from harness.timeline import Timeline
from harness.wait import Polled


@dataclass
class Outage:
    """Faults applied by one When-step, and what the region looked like just before."""

    faults: list[ActiveFault]
    # The earliest the first fault may have taken effect, on the scenario's timeline: bounds counted
    # from the effect and windows "during the outage" start here (it cannot flatter them).
    start: float
    leader_before: str | None
    leader_id_before: int
    term_before: int = 0  # the highest raft term the members were in just before (their current term)
    healed_at: float | None = None
    returned: list[str] = field(default_factory=list)
    # Set by a step whose faults are not zones (a link fault): the zones it counts as cut off.
    zones_down: list[str] | None = None
    seen: float | None = None  # when the first fault's effect was seen: the latest it took effect
    catch_up: CatchUp | None = None  # a member's catch-up, begun as its zone went (harness.steps.catch_up)
    lasts: float | None = None  # the seconds the scenario said it lasts ("goes down for N s", "lasts N s")

    def hold(self, timeline: Timeline, seconds: float) -> None:
        """Keep the faults for `seconds` from the earliest they took effect, as the scenario says."""
        self.lasts = seconds
        wait = self.start + seconds - timeline.now()
        if wait > 0:
            time.sleep(wait)

    def held_over(self) -> float:
        """How much longer than the scenario said the faults were held before their return: the
        steps between the When-step and the return (Then-steps judging the outage) take time, and
        a member away longer hears its peers later (TCP's backed-off retries) and has more to
        catch up. 0 when the scenario said no length or nothing returned."""
        if self.lasts is None or self.healed_at is None:
            return 0.0
        return max(0.0, self.healed_at - self.start - self.lasts)

    @property
    def effect_seen(self) -> float:
        """From here on the fault was surely in effect (a percentile over writes "during the
        outage" bounded from above starts here: a write before it may not have felt the fault)."""
        return self.start if self.seen is None else self.seen

    @property
    def zones(self) -> list[str]:
        return self.zones_down if self.zones_down is not None else [f.target for f in self.faults]

    def window_end(self, timeline: Timeline, limit: float) -> float:
        """The end of a window judged against `limit` seconds from the outage's start: now, but
        not before `start + limit` (and a little), so that a gap longer than the limit has had
        the time to show, closed or still open."""
        wait = self.start + limit + 0.5 - timeline.now()
        if wait > 0:
            time.sleep(wait)
        return timeline.now()


@dataclass
class Shoot:
    """A reference control plane a Given-step deployed, and where its pods were placed then."""

    seed: Seed
    spec: ReferenceSpec
    placed: list[PodPlacement]
    etcds: dict[str, Any] = field(default_factory=dict)  # running for real: its etcd clusters as probes see them
    etcd_status: Any = None  # etcd-druid running its etcds: what druid reports of them (EtcdStatusSampler)


def last_fault(timeline: Timeline) -> tuple[float | None, float | None]:
    """(the earliest the scenario's last fault took effect, when it was healed), on its timeline;
    None where there was none, or no heal yet."""
    faults = [e for e in list(timeline.events) if e.kind == "fault"]
    return (effect_began(faults[-1]), faults[-1].end) if faults else (None, None)


def mark_first_held(timeline: Timeline, name: str, polled: Polled[Any], began: float, since: float | None) -> None:
    """A within-step's figure: seconds from `since` (on the timeline: a fault's effect, a return)
    to when the condition first held, as late as the step's reads place it (began: the timeline's
    time at the step's start, where its reads count from). None: it never held."""
    if since is None:
        return
    when = polled.first_held()
    timeline.mark("figure", name, value=None if when is None else round(began + when[1] - since, 3), unit="s")
