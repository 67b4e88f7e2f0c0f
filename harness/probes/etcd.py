"""One-shot observations of etcd: what every member holds, and HashKV per member."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import CapabilityMissing, HarnessError
from harness.etcd_gateway import EtcdRequestError, EtcdUnsupported
from harness.providers.base import EtcdCluster

ETCD_DEFAULT_ELECTION_MS = 1000  # etcd's --election-timeout when not given


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
        except EtcdUnsupported:
            raise
        except EtcdRequestError as e:
            raise HarnessError(f"HashKV of {m.name} at revision {revision}: {e}") from None
        finally:
            client.close()
    return hashes


def histories(etcd: EtcdCluster, through: int) -> tuple[dict[str, list[tuple[int, str, str | None]]], int]:
    """Every member's own record of the writes up to revision `through` (EtcdClient.history, from
    revision 1), and the oldest revision all of them still hold (what compaction left)."""
    out: dict[str, list[tuple[int, str, str | None]]] = {}
    oldest = 0
    for m in etcd.members:
        client = etcd.client(m.name, timeout=etcd.config.timeouts.command)
        try:
            out[m.name], compacted = client.history(1, through)
        except EtcdRequestError as e:
            raise HarnessError(f"the history of {m.name} through revision {through}: {e}") from None
        finally:
            client.close()
        oldest = max(oldest, compacted)
    return out, oldest


@dataclass(frozen=True)
class ElectionTimeout:
    """The members' --election-timeout, as they were started, and where that was read."""

    seconds: float
    said: str


def flag_value(command_line: list[str], name: str) -> str | None:
    """The value of `--name` (or Go's `-name`) given as `--name=v` or `--name v`; None when absent."""
    for i, arg in enumerate(command_line):
        key, eq, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and key == name:
            return value if eq else (command_line[i + 1] if i + 1 < len(command_line) else None)
    return None


def election_timeout(etcd: EtcdCluster) -> ElectionTimeout:
    """The election timeout the members run with, read from each one's command line (every member
    the harness can reach; they must agree, and one at least must answer). A member started from
    a config file (etcd-druid's) does not say it there: CapabilityMissing. (One given it through
    ETCD_ELECTION_TIMEOUT in its environment would be taken for etcd's default.)"""
    read: dict[str, int] = {}
    why: dict[str, str] = {}
    for m in etcd.members:
        client = etcd.client(m.name, None, timeout=1.0)  # a member cut off costs a second, not more
        try:
            line = client.command_line()
        except EtcdRequestError as e:
            why[m.name] = str(e)[-160:]
            continue
        finally:
            client.close()
        if flag_value(line, "config-file") is not None:
            raise CapabilityMissing(f"{m.name} reads its configuration from a file ({flag_value(line, 'config-file')}): "
                                    "its election timeout is not on its command line")
        value = flag_value(line, "election-timeout")
        try:
            read[m.name] = ETCD_DEFAULT_ELECTION_MS if value is None else int(value)
        except ValueError:
            raise HarnessError(f"{m.name} runs with --election-timeout={value!r}, not a number of ms") from None
    if not read:
        raise HarnessError(f"no member's command line could be read for its election timeout: {why}")
    if len(set(read.values())) > 1:
        raise HarnessError(f"the members run with different election timeouts (ms): {read}; a bound in election "
                           "timeouts needs one")
    ms = next(iter(read.values()))
    return ElectionTimeout(ms / 1000, f"--election-timeout {ms} ms, read from the command line of "
                                      f"{', '.join(sorted(read))}")
