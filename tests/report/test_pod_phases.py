"""Pods per zone and phase: the sampler's records, their summary and the timeline's pods panel."""

from __future__ import annotations

import threading
from typing import Any

from harness.kube.cluster import KubeApiError
from harness.kube.placement import PodPlacement
from harness.probes.pod_phases import PodPhaseSampler, counts
from harness.report import plot, summary
from harness.timeline import Timeline
from tests.report.timelines import outage_timeline, pods_timeline


def _pod(name: str, phase: str, ready: bool, zone: str | None, node: str | None = "n") -> PodPlacement:
    return PodPlacement(name=name, component="etcd-main", phase=phase, ready=ready, node=node if zone else None,
                        zone=zone, host=None, reason=None, deleting=phase == "Terminating", labels={})


PODS = [_pod("a0", "Running", True, "zone-a"), _pod("a1", "Running", False, "zone-a"),
        _pod("b0", "Running", True, "zone-b"), _pod("b1", "Terminating", False, "zone-b"),
        _pod("x0", "Pending", False, None), _pod("x1", "Pending", False, None)]


def test_pods_are_counted_per_zone_and_phase_unbound_ones_in_zone_dash() -> None:
    assert counts(PODS) == {
        "-": {"ready": 0, "not_ready": 0, "pending": 2, "other": 0},
        "zone-a": {"ready": 1, "not_ready": 1, "pending": 0, "other": 0},
        "zone-b": {"ready": 1, "not_ready": 0, "pending": 0, "other": 1},
    }


def test_the_sampler_records_counts_and_listing_errors_on_the_timeline_until_stopped() -> None:
    calls: list[int] = []
    third = threading.Event()

    def list_pods() -> list[PodPlacement]:
        calls.append(1)
        if len(calls) == 2:
            raise KubeApiError("listing pods in ns: timed out")
        if len(calls) >= 3:
            third.set()
        return PODS

    tl = Timeline()
    sampler = PodPhaseSampler(list_pods, tl, "ns", interval=0.01).start()
    assert third.wait(5)
    sampler.stop()
    got = tl.find("pods", "ns")
    assert len(got) == sampler.samples == len(calls) >= 3
    assert got[0].data == {"zones": counts(PODS)} and got[1].data["error"].startswith("KubeApiError: listing pods")
    assert [e.start for e in got] == sorted(e.start for e in got)
    assert [e.name for e in tl.find("probe")] == ["start", "stop"] and tl.find("probe", "stop")[0].data["samples"] == len(got)
    n = len(calls)
    assert not sampler._thread.is_alive() and len(calls) == n  # stopped means no more listing


def test_the_summary_keeps_the_first_last_fewest_ready_and_most_pending() -> None:
    s = summary.scenario({"nodeid": "x::gep20", "result": "passed"}, pods_timeline("x::gep20"))
    (ph,) = s["pod_phases"]
    assert ph["namespace"] == "shoot--harness--zone-multi-zone" and ph["samples"] == 22 and ph["errors"] == 1
    assert ph["min_ready"] == {"zone-a": 0, "zone-b": 3, "zone-c": 3} and ph["max_pending"] == 3
    assert ph["first"]["zone-a"]["ready"] == 3 and ph["last"]["zone-b"]["ready"] == 4 and ph["last"]["-"]["pending"] == 2
    assert summary.scenario({"nodeid": "x::y"}, outage_timeline("x::y"))["pod_phases"] == []


def test_the_pods_panel_draws_ready_per_zone_and_pending_only_when_sampled() -> None:
    namespace, times, ready, pending = plot.pod_series(pods_timeline("x::y")["events"])
    assert namespace.startswith("shoot--") and len(times) == 21  # the failed listing is a gap, not a zero
    assert ready["zone-a"][:4] == [3, 3, 3, 3] and ready["zone-a"][-1] == 0 and ready["zone-b"][-1] == 4
    assert max(pending) == 3 and pending[0] == 0

    fig = plot.timeline_figure(pods_timeline("x::y"), "gep20")
    axes = fig.get_axes()
    assert len(axes) == 2 and axes[1].get_title(loc="left").startswith("pods of shoot--harness--zone-multi-zone")
    labels = [line.get_label() for line in axes[1].get_lines()]
    assert labels == ["zone-a Running+ready", "zone-b Running+ready", "zone-c Running+ready", "Pending (all zones)"]
    plot.plt.close(fig)
    without: Any = plot.timeline_figure(outage_timeline("x::y"), "outage")
    assert len(without.get_axes()) == 1
    plot.plt.close(without)
    assert plot.timeline_png(pods_timeline("x::y"), "gep20")  # draws end to end


def test_the_page_lists_what_the_sampler_saw() -> None:
    from pathlib import Path

    from harness.report import page

    s = summary.scenario({"nodeid": "x::gep20", "result": "passed"}, pods_timeline("x::gep20"))
    html = page.scenario_html(0, s, None, Path("/r"))
    assert "<th>pods sampled in</th>" in html and "zone-a: 0, zone-b: 3, zone-c: 3" in html
    assert "pods sampled in" not in page.scenario_html(0, summary.scenario({"nodeid": "x::y"}, outage_timeline("x::y")),
                                                       None, Path("/r"))


def test_a_name_with_dollar_signs_is_drawn_as_text() -> None:
    # A parametrized test id such as "Kubernetes v0.0.0-master+$Format:%H$" once broke the whole report.
    assert plot.timeline_png(pods_timeline("x::y"), "test_parse_version[v0.0.0-master+$Format:%H$]")
