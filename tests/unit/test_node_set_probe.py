"""The load balancer's node-set probe closes a window with a read begun after its end."""

from __future__ import annotations

import threading
import time

from harness.probes.load_balancer import NodeSetProbe
from harness.timeline import Timeline


def test_a_window_waits_for_the_read_begun_after_its_end() -> None:
    slow = threading.Event()

    def read() -> list[str]:
        if slow.is_set():
            time.sleep(0.3)  # a read in flight when the window ends
        return ["n1", "n2"]

    timeline = Timeline()
    probe = NodeSetProbe(read, timeline, "web", interval=0.05).start()
    try:
        time.sleep(0.2)
        slow.set()
        time.sleep(0.05)
        end = timeline.now()
        assert probe.snapshot()[-1].t < end  # what a judge reading now would have had
        samples = probe.through(end, timeout=5)
        assert samples[-1].t >= end and samples[-1].nodes == ("n1", "n2")
    finally:
        probe.stop()


def test_a_probe_that_never_reads_again_gives_up_at_the_timeout() -> None:
    gate = threading.Event()
    timeline = Timeline()
    probe = NodeSetProbe(lambda: gate.wait(5) and None, timeline, "web", interval=0.05).start()
    try:
        end = timeline.now() + 0.01
        began = time.monotonic()
        samples = probe.through(end, timeout=0.3)
        assert 0.3 <= time.monotonic() - began < 2
        assert not samples or samples[-1].t < end  # the judge sees the window left open
    finally:
        gate.set()
        probe.stop()


def test_each_read_keeps_its_end_and_the_record_reads_back_as_the_samples() -> None:
    import json

    from harness.probes.load_balancer import samples_of

    calls: list[int] = []

    def read() -> list[str]:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("cloud API away")
        time.sleep(0.02)
        return ["n1", "n2"]

    probe = NodeSetProbe(read, Timeline(), "web", interval=0.05).start()
    time.sleep(0.3)
    record = json.loads(json.dumps(probe.stop()))  # as the run's file holds it
    samples = samples_of(record)
    assert record["probe"] == "lb-nodes" and record["service"] == "web"
    assert samples == probe.snapshot() and samples[1].error == "RuntimeError: cloud API away"
    assert all(s.ended >= s.t for s in samples) and samples[0].ended - samples[0].t >= 0.02
