"""The leader's readings a catch-up is judged by, from etcd's metrics text as etcd 3.5 writes it."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.probes.catch_up import leader_reading

METRICS = """# HELP etcd_network_snapshot_send_success Total number of successful snapshot sends
# TYPE etcd_network_snapshot_send_success counter
etcd_network_snapshot_send_success{To="f3c15d400e8fcd6a"} 2
etcd_network_snapshot_send_success{To="aa"} 5
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
"""


class Metrics:
    def __init__(self, text: str) -> None:
        self.text = text

    def metrics(self, member: str) -> str:
        return self.text


def test_the_snapshots_sent_to_the_member_and_the_cpu_seconds_are_read() -> None:
    reading = leader_reading(Metrics(METRICS), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
    assert (reading.snapshots_sent, reading.cpu_seconds) == (2.0, 12.5)


def test_no_snapshot_series_yet_is_none_sent() -> None:
    text = METRICS.split("# HELP process")[0].replace('To="f3c15d400e8fcd6a"', 'To="bb"')
    reading = leader_reading(Metrics(text + "process_cpu_seconds_total 1\n"), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
    assert reading.snapshots_sent == 0.0


def test_metrics_without_the_cpu_counter_are_refused() -> None:
    with pytest.raises(HarnessError, match="no process_cpu_seconds_total"):
        leader_reading(Metrics(METRICS.split("# HELP process")[0]), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
