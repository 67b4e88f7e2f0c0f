"""The leader's readings a catch-up is judged by, from etcd's metrics text as etcd 3.5 writes it."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.probes.catch_up import leader_reading

METRICS = """# HELP etcd_network_snapshot_send_success Total number of successful snapshot sends
# TYPE etcd_network_snapshot_send_success counter
etcd_network_snapshot_send_success{To="f3c15d400e8fcd6a"} 2
etcd_network_snapshot_send_success{To="aa"} 5
# HELP etcd_network_peer_sent_bytes_total The total number of bytes sent to peers.
# TYPE etcd_network_peer_sent_bytes_total counter
etcd_network_peer_sent_bytes_total{To="aa"} 1.5e+06
etcd_network_peer_sent_bytes_total{To="f3c15d400e8fcd6a"} 3.145728e+07
# HELP etcd_mvcc_db_total_size_in_bytes Total size of the underlying database physically allocated in bytes.
# TYPE etcd_mvcc_db_total_size_in_bytes gauge
etcd_mvcc_db_total_size_in_bytes 2.097152e+07
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
"""


class Metrics:
    def __init__(self, text: str) -> None:
        self.text = text

    def metrics(self, member: str) -> str:
        return self.text


def test_the_snapshots_and_bytes_sent_to_the_member_the_cpu_seconds_and_the_db_size_are_read() -> None:
    reading = leader_reading(Metrics(METRICS), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
    assert (reading.snapshots_sent, reading.cpu_seconds, reading.sent_bytes, reading.db_bytes) == (
        2.0, 12.5, 31457280.0, 20971520.0)


def test_no_series_yet_for_the_member_is_nothing_sent() -> None:
    text = METRICS.replace('To="f3c15d400e8fcd6a"', 'To="bb"')
    reading = leader_reading(Metrics(text), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
    assert (reading.snapshots_sent, reading.sent_bytes) == (0.0, 0.0)


@pytest.mark.parametrize("family", ["process_cpu_seconds_total", "etcd_mvcc_db_total_size_in_bytes"])
def test_metrics_without_the_cpu_counter_or_the_db_size_are_refused(family: str) -> None:
    text = "".join(f"# HELP{part}" for part in METRICS.split("# HELP")[1:] if not part.startswith(f" {family} "))
    with pytest.raises(HarnessError, match=f"no {family}"):
        leader_reading(Metrics(text), "etcd-0", "f3c15d400e8fcd6a")  # type: ignore[arg-type]
