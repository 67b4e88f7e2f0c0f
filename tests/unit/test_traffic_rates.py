"""Cross-zone rates from two traffic samples."""

from __future__ import annotations

import pytest

from harness.probes.traffic import TrafficSample
from harness.validate.traffic import between, rates


def test_rates_per_pair_and_total() -> None:
    first = TrafficSample(10.0, {"a->b": 1000, "b->a": 0}, {"a->b": 500})
    last = TrafficSample(12.0, {"a->b": 1000 + 2 * 10240, "b->a": 2048}, {"a->b": 500 + 2 * 8192})
    figures = rates(first, last)
    assert figures["pairs"] == {"a->b": {"wire_kib_s": 10.0, "metrics_kib_s": 8.0},
                                "b->a": {"wire_kib_s": 1.0, "metrics_kib_s": 0.0}}
    assert figures["total_kib_s"] == {"wire": 11.0, "metrics": 8.0} and figures["seconds"] == 2.0
    assert between(figures, "a", "b") == {"wire_kib_s": 11.0, "metrics_kib_s": 8.0}


def test_a_counter_that_went_backwards_counts_as_nothing() -> None:
    # A member restarted: its metrics start again from zero.
    figures = rates(TrafficSample(0.0, {"a->b": 0}, {"a->b": 9999}), TrafficSample(1.0, {"a->b": 1024}, {"a->b": 10}))
    assert figures["pairs"]["a->b"] == {"wire_kib_s": 1.0, "metrics_kib_s": 0.0}


def test_samples_out_of_order_are_an_error() -> None:
    with pytest.raises(ValueError, match="later"):
        rates(TrafficSample(2.0, {}), TrafficSample(1.0, {}))
