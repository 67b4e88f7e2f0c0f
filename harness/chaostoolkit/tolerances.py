"""Tolerances for steady-state hypotheses: chaostoolkit calls them with the probe's output as
`value`; each judges through harness.judge (the place the Gherkin Then-steps judge too), logs
what it expected and saw when the value is out of tolerance, and returns whether it is within.

    "tolerance": {"type": "probe", "name": "longest-gap-at-most-1s",
                  "provider": {"type": "python", "module": "harness.chaostoolkit.tolerances",
                               "func": "writes_available", "arguments": {"max_gap": 1.0}}}
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from harness import judge

__all__ = ["quorum", "writes_available", "at_most", "spread"]

logger = logging.getLogger("chaostoolkit")
UNITS = (("_kib_s", "KiB/s"), ("_s", "s"))  # key suffix -> unit, longest suffix first


def _within(check: Callable[[], object]) -> bool:
    """`value` defaults to None only so that chaostoolkit's validation, which binds the declared
    arguments without it, accepts the tolerance; a None value is out of tolerance."""
    try:
        check()
    except (judge.ToleranceViolation, TypeError, KeyError) as e:  # no value, or not a probe's output
        logger.warning(f"harness: out of tolerance: {e}")
        return False
    return True


def quorum(value: dict[str, Any] | None = None) -> bool:
    """A majority of the members answer the probe's client zone, and all that answer name one
    leader that answers too (output of probes.quorum): followers cut off from their leader still
    name it until they elect another, and that is no quorum for the client."""
    def check() -> None:
        seen = f"a client in {value['via_zone']}"
        judge.holds(len(value["healthy"]) > value["members"] // 2,
                    f"a majority of the {value['members']} etcd members answer {seen}", seen=value)
        judge.equal(len(value["leaders"]), 1, f"number of leaders the members name ({value['leaders']})")
        judge.holds(value["leaders"][0] in value["healthy"],
                    f"the leader the members name ({value['leaders'][0]}) answers {seen}", seen=value)
    return _within(check)


def writes_available(max_gap: float, value: dict[str, Any] | None = None) -> bool:
    """No stretch longer than `max_gap` seconds without an acknowledged write, the one still open
    at the end of the probe's window included (output of probes.write_availability or
    probes.shoot_api_availability)."""
    what = "longest write gap" + ("" if value["resumed"] else " (still open: writes had not resumed)")
    return _within(lambda: judge.at_most(value["longest_gap_s"], float(max_gap), what, seen=value))


def _unit_of(target: str | None) -> str:
    """The unit a probe's key names by its suffix: total_kib_s -> KiB/s, longest_gap_s -> s."""
    return next((unit for suffix, unit in UNITS if target and target.endswith(suffix)), "")


def at_most(limit: float, target: str | None = None, what: str | None = None, unit: str | None = None,
            value: Any = None) -> bool:
    """A figure (the probe's output, or its `target` key) is at most `limit`, in `unit` (default:
    from the key's suffix, e.g. KiB/s for total_kib_s; none for a bare figure)."""
    figure = value.get(target) if target and isinstance(value, dict) else value
    name, unit = what or target or "figure", _unit_of(target) if unit is None else unit
    if unit == "s":  # durations: judge.at_most's own wording
        return _within(lambda: judge.at_most(figure, float(limit), name, seen=value))

    def check() -> None:
        # judge.at_most words its message in seconds; other units are worded here, judged alike.
        suffix = f" {unit}" if unit else ""
        judge.holds(isinstance(figure, (int, float)),
                    f"{name}: expected at most {float(limit):.3f}{suffix}, but no figure was measured", seen=value)
        judge.holds(figure <= float(limit),
                    f"{name}: expected at most {float(limit):.3f}{suffix}, measured {figure:.3f}{suffix}", seen=value)
    return _within(check)


def spread(domains: int, per_domain: int = 1, pending: int = 0, value: dict[str, Any] | None = None) -> bool:
    """Running pods spread over `domains` domains, `per_domain` each, and exactly `pending` Pending
    (output of kube.placement)."""
    def check() -> None:
        counts = value["per_domain"]
        judge.equal(len(counts), int(domains), f"{value['component']}: {value['domain']}s with running pods ({counts})")
        judge.holds(all(n == int(per_domain) for n in counts.values()),
                    f"{value['component']}: {per_domain} running pod(s) per {value['domain']}", seen=counts)
        judge.equal(value["pending"], int(pending), f"{value['component']}: Pending pods")
    return _within(check)
