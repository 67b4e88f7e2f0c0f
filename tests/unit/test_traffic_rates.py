"""Cross-zone rates from two traffic samples, and what they could not count."""

from __future__ import annotations

import importlib
from typing import Any, Callable

import pytest

from harness.judge import ToleranceViolation
from harness.probes.traffic import Scrape, TrafficSample, parse_metrics
from harness.steps import STEP_MODULES
from harness.validate.traffic import between, rates, uncounted

WIRE = {"a->b": 0, "b->a": 0}


def _at(t: float, wire: dict[str, int], **members: Scrape) -> TrafficSample:
    return TrafficSample(t, wire, dict(members))


def test_rates_per_pair_and_total() -> None:
    first = _at(10.0, {"a->b": 1000, "b->a": 0}, m1=Scrape("a", {"a->b": 500}), m2=Scrape("b", {}))
    last = _at(12.0, {"a->b": 1000 + 2 * 10240, "b->a": 2048}, m1=Scrape("a", {"a->b": 500 + 2 * 8192}),
               m2=Scrape("b", {}))
    figures = rates(first, last)
    assert figures["pairs"] == {"a->b": {"wire_kib_s": 10.0, "metrics_kib_s": 8.0},
                                "b->a": {"wire_kib_s": 1.0, "metrics_kib_s": 0.0}}
    assert figures["total_kib_s"] == {"wire": 11.0, "metrics": 8.0} and figures["seconds"] == 2.0
    assert figures["gaps"] == figures["resets"] == []
    assert between(figures, "a", "b") == {"wire_kib_s": 11.0, "metrics_kib_s": 8.0}


def test_a_failed_first_scrape_is_a_gap_not_the_members_lifetime_bytes() -> None:
    # m1's first scrape failed; its counter at the end holds everything it sent since it started.
    first = _at(0.0, WIRE, m1=Scrape("a", error="ConnectionRefusedError: refused"), m2=Scrape("b", {"b->a": 0}))
    last = _at(1.0, {"a->b": 1024, "b->a": 1024}, m1=Scrape("a", {"a->b": 10**9}), m2=Scrape("b", {"b->a": 2048}))
    figures = rates(first, last)
    assert figures["pairs"]["a->b"] == {"wire_kib_s": 1.0, "metrics_kib_s": None}
    assert figures["pairs"]["b->a"] == {"wire_kib_s": 1.0, "metrics_kib_s": 2.0}  # b's members were read at both ends
    assert figures["total_kib_s"] == {"wire": 2.0, "metrics": None}
    assert figures["gaps"] == [{"source": "metrics", "member": "m1", "zone": "a",
                                "reason": "scrape failed at the first sample: ConnectionRefusedError: refused"}]
    assert uncounted(figures, "metrics") == ["m1 (a): scrape failed at the first sample: ConnectionRefusedError: refused"]
    assert uncounted(figures, "wire") == []
    assert between(figures, "a", "b") == {"wire_kib_s": 2.0, "metrics_kib_s": None}


def test_a_failed_last_scrape_and_a_member_missing_from_a_sample_are_gaps_too() -> None:
    first = _at(0.0, WIRE, m1=Scrape("a", {"a->b": 100}), m2=Scrape("b", {"b->a": 0}))
    last = _at(1.0, WIRE, m1=Scrape("a", error="TimeoutError: timed out"))
    figures = rates(first, last)
    assert [(g["member"], g["reason"]) for g in figures["gaps"]] == [
        ("m1", "scrape failed at the last sample: TimeoutError: timed out"), ("m2", "not scraped at the last sample")]
    assert figures["pairs"]["a->b"]["metrics_kib_s"] is None and figures["pairs"]["b->a"]["metrics_kib_s"] is None


def test_a_counter_that_went_down_is_a_reset_and_not_counted() -> None:
    # A member restarted: its metrics start again from zero.
    figures = rates(_at(0.0, {"a->b": 0}, m1=Scrape("a", {"a->b": 9999})),
                    _at(1.0, {"a->b": 1024}, m1=Scrape("a", {"a->b": 10})))
    assert figures["pairs"]["a->b"] == {"wire_kib_s": 1.0, "metrics_kib_s": None}
    assert figures["resets"] == [{"source": "metrics", "member": "m1", "zone": "a",
                                  "reason": "counters went down: a->b 9999 -> 10 bytes"}]
    assert figures["gaps"] == []


def test_a_restart_is_a_reset_even_when_the_counter_grew_past_its_old_value() -> None:
    figures = rates(_at(0.0, {"a->b": 0}, m1=Scrape("a", {"a->b": 100}, started=1000.0)),
                    _at(1.0, {"a->b": 1024}, m1=Scrape("a", {"a->b": 5000}, started=1000.5)))
    assert figures["pairs"]["a->b"]["metrics_kib_s"] is None
    assert figures["resets"][0]["reason"].startswith("restarted during the interval")


def test_router_counters_that_went_down_or_are_missing_are_not_counted() -> None:
    figures = rates(_at(0.0, {"a->b": 5000, "b->a": 0}), _at(1.0, {"a->b": 100, "c->a": 7}))
    assert figures["pairs"]["a->b"]["wire_kib_s"] is None and figures["total_kib_s"]["wire"] is None
    assert uncounted(figures, "wire") == ["b->a: no router counter at the last sample",
                                          "c->a: no router counter at the first sample",
                                          "a->b: router counter went down from 5000 to 100 bytes"]


def test_samples_out_of_order_are_an_error() -> None:
    with pytest.raises(ValueError, match="later"):
        rates(TrafficSample(2.0, {}), TrafficSample(1.0, {}))


def test_metrics_text_becomes_bytes_per_zone_pair() -> None:
    text = ('etcd_network_peer_sent_bytes_total{To="a1"} 10\n'
            'etcd_network_peer_sent_bytes_total{To="b1"} 2.5e+03\n'
            'etcd_network_peer_sent_bytes_total{To="c1"} 30\n'
            "process_start_time_seconds 1.7e+09\n")
    got = parse_metrics(text, "a", {"a1": "a", "b1": "b", "c1": "c"})
    assert got == Scrape("a", {"a->b": 2500, "a->c": 30}, started=1.7e9)
    # Bytes to a peer no status has placed cannot go into a pair: the scrape does not count.
    unplaced = parse_metrics(text, "a", {"a1": "a", "b1": "b"})
    assert unplaced.sent is None and "peer c1" in (unplaced.error or "")


def _step(text: str) -> Callable[..., Any]:
    """The Then-step definition matching `text`, called with its parsed arguments."""
    for module in map(importlib.import_module, STEP_MODULES):
        for name in dir(module):
            if name.startswith("pytestbdd_stepdef_then"):
                ctx = getattr(module, name)._get_wrapped_function()()
                if ctx.parser.is_matching(text):
                    args = ctx.parser.parse_arguments(text) or {}
                    converted = {k: ctx.converters.get(k, lambda v: v)(v) for k, v in args.items()}
                    return lambda **fixtures: ctx.step_func(**converted, **fixtures)
    raise LookupError(text)


def test_a_then_step_on_the_estimate_fails_naming_the_member_whose_scrape_failed() -> None:
    first = _at(0.0, {"a->b": 0, "b->a": 0}, m1=Scrape("a", error="ConnectionRefusedError: refused"),
                m2=Scrape("b", {"b->a": 0}))
    last = _at(1.0, {"a->b": 10240, "b->a": 0}, m1=Scrape("a", {"a->b": 9 * 1024 + 10**9}), m2=Scrape("b", {"b->a": 0}))
    figures = rates(first, last)
    judge_share = _step("the peer metrics account for 70 to 100 % of the wire bytes")
    with pytest.raises(ToleranceViolation, match=r"peer metrics not counted.*m1 \(a\): scrape failed at the first sample"):
        judge_share(traffic=figures)
    # The same figures with m1 read at both ends pass: the failure was the scrape, not the share.
    ok = rates(_at(0.0, first.wire, m1=Scrape("a", {"a->b": 10**9}), m2=first.metrics["m2"]), last)
    judge_share(traffic=ok)
    # The wire figures come from the router and were counted whole: judged as before.
    _step("cross-zone traffic stays below 20 KiB/s")(traffic=figures)


def test_a_then_step_on_the_wire_fails_on_a_reset_router_counter() -> None:
    figures = rates(_at(0.0, {"a->b": 5000}), _at(1.0, {"a->b": 100}))
    with pytest.raises(ToleranceViolation, match="router counters not counted.*a->b: router counter went down"):
        _step("cross-zone traffic stays below 20 KiB/s")(traffic=figures)


def test_without_counters_on_the_wire_the_metrics_are_counted_and_a_wire_check_says_it_cannot_judge() -> None:
    """A real cluster counts no bytes on the wire: its pairs carry the peer metrics alone, and a
    Then-step on the wire is a skip naming what is missing, never a pass on the metrics."""
    from harness.errors import CapabilityMissing

    figures = rates(_at(0.0, None, m1=Scrape("a", {"a->b": 0})), _at(2.0, None, m1=Scrape("a", {"a->b": 4096})))  # type: ignore[arg-type]
    figures["not_available"] = {"wire": "not available on the cluster provider"}
    assert figures["pairs"] == {"a->b": {"wire_kib_s": None, "metrics_kib_s": 2.0}}
    assert figures["total_kib_s"] == {"wire": None, "metrics": 2.0} and figures["gaps"] == figures["resets"] == []
    with pytest.raises(CapabilityMissing, match="judges the bytes on the wire: not available on the cluster provider"):
        _step("cross-zone traffic stays below 20 KiB/s")(traffic=figures)
    with pytest.raises(CapabilityMissing, match="not available on the cluster provider"):
        _step("the peer metrics account for 70 to 100 % of the wire bytes")(traffic=figures)
