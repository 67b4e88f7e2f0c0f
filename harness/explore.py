"""Seeded random schedules of faults: what `harness explore` and `@explore` features run.

A schedule is drawn from a seed alone (the same seed gives the same schedule on the same
region shape, so a failing one replays): faults from the catalogue below, each on a random
target for a random time, up to two at once and never two on the same zone, with random quiet
spells between. It runs through the fault runner like any fault (ledger, watchdog, effect seen
before it counts) and is judged afterwards by the features' own Then-steps: the history
linearizable, every watch in order, no acknowledged write lost, equal HashKV.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from harness.errors import FaultError
from harness.faults.runner import ActiveFault, FaultRunner
from harness.providers.base import EtcdCluster
from harness.timeline import Timeline

MAX_AT_ONCE = 2
DURATION_S = (1.0, 6.0)
QUIET_S = (0.5, 3.0)


@dataclass(frozen=True)
class Planned:
    at: float  # seconds from the schedule's start
    seconds: float
    kind: str
    target: str
    options: dict[str, Any]
    zones: tuple[str, ...]  # the zones it touches: no other fault touches them meanwhile


def _catalogue(rng: random.Random, etcd: EtcdCluster) -> list[Callable[[], tuple[str, str, dict[str, Any], tuple[str, ...]]]]:
    """Each entry draws one fault: (kind, target, options, zones touched)."""
    zones = list(etcd.zones)
    member = lambda: rng.choice(etcd.members)  # noqa: E731
    pair = lambda: tuple(rng.sample(zones, 2))  # noqa: E731

    def link(kind: str, both: bool, **options: Any) -> Callable[[], tuple[str, str, dict[str, Any], tuple[str, ...]]]:
        def draw() -> tuple[str, str, dict[str, Any], tuple[str, ...]]:
            a, b = pair()
            return kind, f"{a}{'<>' if both else '>'}{b}", {k: v() for k, v in options.items()}, (a, b)
        return draw

    def on_member(kind: str, node: bool = False) -> Callable[[], tuple[str, str, dict[str, Any], tuple[str, ...]]]:
        def draw() -> tuple[str, str, dict[str, Any], tuple[str, ...]]:
            m = member()
            return kind, m.node if node else m.name, {}, (m.zone,)
        return draw

    return [
        lambda: ("zone-outage", (z := rng.choice(zones)), {}, (z,)),
        link("zone-link-cut", False),
        link("zone-link-cut", True),
        link("zone-link-loss", False, loss_percent=lambda: rng.choice((10, 30, 50))),
        link("zone-link-delay", True, delay_ms=lambda: rng.choice((20, 50, 100)), jitter_ms=lambda: 10),
        on_member("node-kill", node=True),
        on_member("node-freeze", node=True),
        on_member("peer-blackhole"),
        on_member("member-kill"),
    ]


def schedule(seed: int, seconds: float, etcd: EtcdCluster) -> list[Planned]:
    """The faults of `seconds` of exploration drawn from `seed`, in order of their start."""
    rng = random.Random(seed)
    catalogue = _catalogue(rng, etcd)
    planned: list[Planned] = []
    at = round(rng.uniform(*QUIET_S), 2)  # rounded as planned: the checks see what will run
    while at + DURATION_S[0] <= seconds:
        busy = [p for p in planned if p.at <= at < p.at + p.seconds]
        if len(busy) < MAX_AT_ONCE:
            for _ in range(10):  # a fault on zones nothing else touches now
                kind, target, options, zones = rng.choice(catalogue)()
                if not {z for p in busy for z in p.zones} & set(zones):
                    length = round(min(rng.uniform(*DURATION_S), seconds - at), 2)
                    planned.append(Planned(at, length, kind, target, options, zones))
                    break
        at = round(at + rng.uniform(*QUIET_S), 2)
    return planned


def run(planned: list[Planned], faults: FaultRunner, timeline: Timeline, seed: int,
        say: Callable[[str], None] = lambda _: None) -> list[ActiveFault]:
    """Inject and heal each planned fault at its time (every fault healed at the end, also on
    failure); an injection that fails ends the exploration: a schedule half applied is not the
    one its seed names."""
    timeline.mark("schedule", f"seed {seed}", seed=seed, faults=[asdict(p) for p in planned])
    events = sorted([(p.at, 1, i) for i, p in enumerate(planned)] + [(p.at + p.seconds, 0, i) for i, p in enumerate(planned)])
    active: dict[int, ActiveFault] = {}
    applied: list[ActiveFault] = []
    start = time.monotonic()
    try:
        for at, begins, i in events:
            time.sleep(max(0.0, start + at - time.monotonic()))
            p = planned[i]
            if begins:
                say(f"{at:6.1f} s: {p.kind} on {p.target} for {p.seconds:g} s")
                try:
                    active[i] = faults.inject(p.kind, p.target, p.options, wait_healthy=False)
                except FaultError as e:
                    raise FaultError(f"the schedule of seed {seed} could not apply {p.kind} on {p.target} at "
                                     f"{at:g} s: {e}") from e
                applied.append(active[i])
            elif i in active:
                faults.heal(active.pop(i), wait=False)
    finally:
        for fault in list(active.values()):
            faults.heal(fault, wait=False)
    return applied


def replay_command(seed: int, seconds: float | None) -> str:
    return f"harness explore --seed {seed}" + (f" --seconds {seconds:g}" if seconds else "")
