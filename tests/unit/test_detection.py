"""Time to detect from detector events: the verdict before the window, the first "failing" in it,
stretches the harness could not read, and a source whose read failed marking its detectors."""

from __future__ import annotations

from harness.probes.detectors import FAILING, OK, UNREADABLE, DetectorProbe, source
from harness.probes.samples import Sample
from harness.timeline import Event, Timeline
from harness.validate.detection import detections, first_failure, table


def _said(name: str, at: float, verdict: str, zone: str = "zone-a") -> Event:
    kind, subject = name.split(" ", 1)
    return Event("detector", name, at, at, {"detector": kind, "subject": subject, "zone": zone, "verdict": verdict})


def test_the_first_failing_verdict_in_the_window_is_the_detection() -> None:
    events = [_said("etcd-health etcd-0", 0.5, OK), _said("etcd-health etcd-0", 11.2, FAILING),
              _said("etcd-health etcd-0", 15.0, OK), _said("etcd-health etcd-0", 16.0, FAILING),
              _said("node-ready n1", 0.4, OK, "zone-b")]
    found = {d.name: d for d in detections(events, 10.0, 20.0)}
    health = found["etcd-health etcd-0"]
    assert (health.before, health.at, health.recovered, health.after(10.0)) == (OK, 11.2, 15.0, 11.2 - 10.0)
    assert found["node-ready n1"].at is None and found["node-ready n1"].before == OK  # never saw it


def test_a_detector_failing_before_the_window_is_said_so() -> None:
    found = detections([_said("etcd-peers etcd-1", 1.0, FAILING)], 10.0, 20.0)
    assert found[0].before == FAILING and found[0].at is None


def test_stretches_it_could_not_be_read_are_kept_up_to_the_windows_end() -> None:
    events = [_said("load-balancer 10.0.0.5", 1.0, UNREADABLE), _said("load-balancer 10.0.0.5", 12.0, FAILING),
              _said("load-balancer 10.0.0.5", 13.0, UNREADABLE)]
    (d,) = detections(events, 10.0, 20.0)
    assert d.unreadable == ((10.0, 12.0), (13.0, 20.0))
    assert d.blind_before(12.0) == (10.0, 12.0)  # it may have failed unseen: no time to detect


def test_the_clients_first_failure_is_the_end_of_the_first_failed_request_after_the_effect() -> None:
    samples = [Sample("write", "etcd-0", 9.0, 9.5, False), Sample("write", "etcd-0", 10.1, 10.2, True),
               Sample("read", "etcd-0", 10.3, 10.4, False), Sample("write", "etcd-0", 10.5, 11.5, False)]
    assert first_failure(samples, 10.0) == 11.5
    assert first_failure(samples[:2], 10.0) is None
    rows = table(detections([_said("etcd-health etcd-0", 0.0, OK)], 10.0, 20.0), 10.0, {"etcd via zone-b": 11.5})
    assert [r["detected_after_s"] for r in rows] == [None, 1.5]


def test_a_read_that_fails_marks_each_of_its_detectors_unreadable_and_changes_are_recorded_once() -> None:
    said = iter([{"a": (True, "fine"), "b": (False, "down")}, RuntimeError("socket gone"), {"a": (True, "fine")}])

    def read() -> dict[str, tuple[bool, str]]:
        got = next(said)
        if isinstance(got, Exception):
            raise got
        return got

    timeline = Timeline()
    lb = source("lb", "load-balancer", {"a": "zone-a", "b": "zone-b"}, read)
    probe = DetectorProbe([lb], timeline)
    for _ in range(3):
        probe._record(probe.sample(lb), timeline.now())
    probe._record(probe.sample(source("lb", "load-balancer", {"a": "zone-a"}, lambda: {"a": (True, "fine")})), 0.0)
    verdicts = [(e.data["subject"], e.data["verdict"]) for e in timeline.find("detector")]
    # b missing from the third answer stays unreadable: no new event; nor for a, ok again and again
    assert verdicts == [("a", OK), ("b", FAILING), ("a", UNREADABLE), ("b", UNREADABLE), ("a", OK)]
    assert "socket gone" in timeline.find("detector")[2].data["detail"]


def test_a_zone_outage_is_declared_once_its_state_held_for_the_threshold() -> None:
    from harness.validate.detection import held

    steady = [_said("zone-outage zone-a", 0.1, OK), _said("zone-outage zone-a", 12.0, FAILING)]
    (d,) = detections(steady, 10.0, 40.0)
    assert held(d, 10.0) == 22.0
    flapping = steady + [_said("zone-outage zone-a", 15.0, OK), _said("zone-outage zone-a", 16.0, FAILING)]
    (d,) = detections(flapping, 10.0, 40.0)
    assert held(d, 10.0) is None  # ok again before the threshold: no outage declared from that run
    blind = steady + [_said("zone-outage zone-a", 14.0, UNREADABLE), _said("zone-outage zone-a", 15.0, FAILING)]
    (d,) = detections(blind, 10.0, 40.0)
    assert held(d, 10.0) is None  # not seen all along: not seen held
    (d,) = detections([_said("zone-outage zone-a", 0.1, OK)], 10.0, 40.0)
    assert held(d, 10.0) is None
