"""Steps for GEP-20's one-request traffic rows: many keys written first, then read in one range GET
or deleted in one DELETE inside a traffic measurement (its appendix's `etcdctl get 1 17999` and
`etcdctl del 0 99999`)."""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from pytest_bdd import given, parsers, when

from harness.errors import HarnessError
from harness.etcd_gateway import EtcdClient, EtcdRequestError
from harness.providers.base import EtcdCluster
from harness.steps.load import client_zone, measure, target_member
from harness.timeline import Timeline

TXN_OPS = 128  # etcd's default --max-txn-ops: puts per transaction


@dataclass(frozen=True)
class Keys:
    prefix: str
    count: int
    value: str

    def batches(self) -> list[dict[str, str]]:
        names = [f"{self.prefix}{i:06d}" for i in range(self.count)]
        return [{k: self.value for k in names[i:i + TXN_OPS]} for i in range(0, self.count, TXN_OPS)]


def _write(client: EtcdClient, keys: Keys) -> int:
    revision = 0
    for batch in keys.batches():
        revision = client.put_all(batch)
    return revision


@given(parsers.parse("{count:d} keys of {size:g} KiB"), target_fixture="keys")
def _(request: pytest.FixtureRequest, etcd: EtcdCluster, timeline: Timeline, count: int, size: float) -> Keys:
    """Written through the leader from its zone, in transactions; every member has applied them
    before the step ends, so their replication is not counted in what follows. Deleted at the
    scenario's end (a region's later scenarios would carry them)."""
    keys = Keys(f"/bulk/{uuid.uuid4().hex[:8]}/", count, "x" * int(size * 1024))
    leader = etcd.member(etcd.leader(etcd.wait_healthy()))  # type: ignore[arg-type]
    client = etcd.client(leader.name, leader.zone, timeout=10.0)
    request.addfinalizer(lambda: _forget(etcd, keys))
    try:
        with timeline.span("bulk", "write", keys=count, value_bytes=len(keys.value)):
            _write(client, keys)
    finally:
        client.close()
    etcd.wait_healthy(max_lag=0)
    return keys


def _forget(etcd: EtcdCluster, keys: Keys) -> None:
    for member in etcd.members:  # the first that takes it; a scenario may have left some down
        client = etcd.client(member.name, member.zone, timeout=10.0)
        try:
            client.delete_prefix(keys.prefix)
            return
        except EtcdRequestError:
            continue
        finally:
            client.close()
    print(f"[harness] could not delete the keys under {keys.prefix}: no member took the DELETE", file=sys.stderr)


def _range_get(client: EtcdClient, keys: Keys, timeline: Timeline) -> None:
    started = time.monotonic()
    count, size = client.range_read(keys.prefix)
    took = time.monotonic() - started
    if count != keys.count:
        raise HarnessError(f"the range GET of {keys.prefix} returned {count} keys, not the {keys.count} written")
    timeline.mark("figure", "range GET: MiB of values read", value=round(size / 2**20, 2), unit="MiB")
    timeline.mark("figure", "range GET: seconds", value=round(took, 3), unit="s")


def _delete(client: EtcdClient, keys: Keys, timeline: Timeline) -> None:
    started = time.monotonic()
    deleted = client.delete_prefix(keys.prefix)
    took = time.monotonic() - started
    if deleted != keys.count:
        raise HarnessError(f"the DELETE of {keys.prefix} removed {deleted} keys, not the {keys.count} written")
    timeline.mark("figure", "DELETE: keys deleted", value=deleted, unit="keys")
    timeline.mark("figure", "DELETE: seconds", value=round(took, 3), unit="s")


def _rewrite(client: EtcdClient, keys: Keys, timeline: Timeline) -> None:
    started = time.monotonic()
    _write(client, keys)
    timeline.mark("figure", "rewrite: seconds", value=round(time.monotonic() - started, 3), unit="s")


ACTIONS: dict[str, Callable[[EtcdClient, Keys, Timeline], None]] = {
    "a range GET": _range_get, "a DELETE": _delete, "a rewrite": _rewrite}


@when(parsers.re(r"cross-zone traffic is measured for (?P<seconds>[\d.]+) s around (?P<action>a range GET|a DELETE|a rewrite) "
                 r"of them (?:from|through) (?P<target>the leader|a follower) by a client in (?P<where>.+)"),
      target_fixture="traffic")
def _(env: Any, etcd: EtcdCluster, timeline: Timeline, keys: Keys, seconds: str, action: str, target: str,
      where: str) -> dict[str, Any]:
    """One request over all the keys, at the start of the measured window."""
    member = target_member(etcd, target)
    client = etcd.client(member.name, client_zone(etcd, member, where), timeout=60.0)
    try:
        return measure(env, etcd, timeline, float(seconds), during=lambda: ACTIONS[action](client, keys, timeline))
    finally:
        client.close()
