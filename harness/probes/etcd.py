"""One-shot observations of etcd: what every member holds, and HashKV per member."""

from __future__ import annotations

from harness.errors import HarnessError
from harness.etcd_gateway import EtcdRequestError
from harness.providers.base import EtcdCluster


def keys_per_member(etcd: EtcdCluster, prefix: str) -> dict[str, list[str] | str]:
    """Each member's own (serializable) view of the keys under `prefix`, or why it could not be read."""
    out: dict[str, list[str] | str] = {}
    for m in etcd.members:
        client = etcd.client(m.name, timeout=10.0)
        try:
            out[m.name] = client.keys(prefix, serializable=True)
        except EtcdRequestError as e:
            out[m.name] = str(e)
        finally:
            client.close()
    return out


def raft_terms(etcd: EtcdCluster) -> dict[str, int | str]:
    """Each member's current raft term (a candidate's included), asked from its own zone, or why
    it could not be read."""
    out: dict[str, int | str] = {}
    for m in etcd.members:
        client = etcd.client(m.name)
        try:
            out[m.name] = client.raft_status().term
        except EtcdRequestError as e:
            out[m.name] = str(e)
        finally:
            client.close()
    return out


def hashkv(etcd: EtcdCluster, revision: int | None = None) -> dict[str, int]:
    """HashKV of every member at one revision (default: the lowest current revision), each asked
    from its own zone."""
    if revision is None:
        revs = [s.revision for s in etcd.status().values() if not isinstance(s, str)]
        if len(revs) != len(etcd.members):
            raise HarnessError("cannot compute HashKV: not every member answers status")
        revision = min(revs)
    hashes: dict[str, int] = {}
    for m in etcd.members:
        client = etcd.client(m.name, timeout=etcd.config.timeouts.command)
        try:
            hashes[m.name] = client.hashkv(revision)
        except EtcdRequestError as e:
            raise HarnessError(f"HashKV of {m.name} at revision {revision}: {e}") from None
        finally:
            client.close()
    return hashes
