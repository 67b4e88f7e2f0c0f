"""Every registered fault meets the contract the runner calls, and what it offers besides (a dry
run's plan, a look at its effect, a wait on purpose) is found by the runner's isinstance checks,
not lost to a name spelt differently."""

from __future__ import annotations

import pytest

from harness.faults import FAULTS, fault_class
from harness.faults.base import Observable, Planned, ReadsBackLate, WaitsOnPurpose, reads_back_late

REQUIRED = ("available", "validate", "inject", "heal")
OPTIONAL = {"plan": Planned, "effect": Observable, "waits_up_to": WaitsOnPurpose, "effect_reads_late": ReadsBackLate}


def _bare(kind: str) -> object:
    """The fault's class made without its options: what it has, not how it is set up."""
    cls = fault_class(kind)
    return cls.__new__(cls)


@pytest.mark.parametrize("kind", sorted(FAULTS))
def test_a_fault_has_the_contract_and_its_extras_are_seen(kind: str) -> None:
    fault = _bare(kind)
    assert type(fault).kind and all(callable(getattr(fault, name, None)) for name in REQUIRED)
    for name, protocol in OPTIONAL.items():
        assert isinstance(fault, protocol) == hasattr(type(fault), name), (kind, name)


def test_only_the_faults_looked_at_through_an_api_read_back_late() -> None:
    late = sorted(kind for kind in FAULTS if reads_back_late(_bare(kind)))
    assert late and all(kind.startswith("aws-") for kind in late), late
    assert not reads_back_late(_bare("zone-outage"))
