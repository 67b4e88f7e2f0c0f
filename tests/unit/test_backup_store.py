"""The backup store's names, chains and delta snapshots (no S3 needed: pure functions)."""

from __future__ import annotations

import json

import pytest

from harness.backup.store import SnapshotName, StoreSpec, chain, decode_delta, delta_name, encode_delta, full_name
from harness.errors import EnvironmentStateError


def test_names_round_trip_as_etcd_backup_restore_writes_them() -> None:
    name = delta_name(101, 250, taken=1700000000)
    assert name.name == "Incr-00000101-00000250-1700000000"
    assert SnapshotName.parse(name.name) == name
    assert full_name(100, taken=1).name == "Full-00000000-00000100-1"
    assert SnapshotName.parse("Full-1-2-3") is None and SnapshotName.parse("other") is None


def test_chain_is_the_newest_full_and_the_deltas_that_follow_on() -> None:
    names = [full_name(50, 1), delta_name(51, 80, 2), full_name(100, 3), delta_name(81, 100, 3),
             delta_name(101, 120, 4), delta_name(121, 121, 5)]
    found = chain(names)
    assert found.full == full_name(100, 3)
    assert [d.name for d in found.deltas] == [delta_name(101, 120, 4).name, delta_name(121, 121, 5).name]
    assert found.revision == 121 and found.broken is None


def test_a_gap_in_the_deltas_breaks_the_chain_there() -> None:
    found = chain([full_name(100, 1), delta_name(101, 110, 2), delta_name(115, 120, 3), delta_name(121, 130, 4)])
    assert found.revision == 110
    assert found.broken == delta_name(115, 120, 3)


def test_overlapping_deltas_the_one_reaching_furthest_is_taken() -> None:
    # The new leader's sidecar read revision 110 from the store before the old leader's last delta
    # (111-118) landed, and carried on from 111.
    found = chain([full_name(100, 1), delta_name(101, 110, 2), delta_name(111, 118, 3), delta_name(111, 130, 4),
                   delta_name(131, 140, 5)])
    assert [d.end for d in found.deltas] == [110, 130, 140] and found.broken is None


def test_no_full_snapshot_is_no_chain() -> None:
    with pytest.raises(EnvironmentStateError, match="no full snapshot"):
        chain([delta_name(1, 5, 1)])


def test_a_delta_is_checked_against_its_digest_and_name() -> None:
    events = [{"revision": 7, "type": "PUT", "key": "YQ==", "value": "MQ=="},
              {"revision": 8, "type": "DELETE", "key": "YQ==", "value": ""}]
    name, body = encode_delta(events, 6)  # its watch began at 6: revision 6 had no event
    assert (name.start, name.end) == (6, 8)
    assert decode_delta(name, body) == events
    doc = json.loads(body)
    doc["events"][0]["value"] = "Mg=="
    with pytest.raises(EnvironmentStateError, match="digest"):
        decode_delta(name, json.dumps(doc).encode())
    with pytest.raises(EnvironmentStateError, match="not those its name says"):
        decode_delta(delta_name(6, 9), body)
    with pytest.raises(EnvironmentStateError, match="not readable"):
        decode_delta(name, body[:20])


def test_a_delta_starts_where_its_watch_began() -> None:
    with pytest.raises(ValueError, match="from revision 9"):
        encode_delta([{"revision": 8, "type": "PUT", "key": "YQ==", "value": ""}], 9)


def test_the_store_round_trips_through_etcd_druids_backup_secret() -> None:
    spec = StoreSpec("http://10.76.0.1:5000", "eu-west-1", "bucket", "ignored", "AKIA", "secret")
    data = spec.secret_data()
    assert data["bucketName"] == "bucket" and data["accessKeyID"] == "AKIA" and data["endpoint"] == spec.endpoint_url
    assert StoreSpec.from_secret(data, "shoot--x/etcd-main") == StoreSpec(
        "http://10.76.0.1:5000", "eu-west-1", "bucket", "shoot--x/etcd-main", "AKIA", "secret")
    with pytest.raises(EnvironmentStateError, match="no accessKeyID, secretAccessKey"):
        StoreSpec.from_secret({"bucketName": "b", "region": "r"}, "p")
