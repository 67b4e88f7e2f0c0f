"""One-shot observations of etcd: what every member holds, and HashKV per member."""

from __future__ import annotations

import json

from harness.errors import HarnessError
from harness.etcd_gateway import EtcdRequestError
from harness.providers.local import netns
from harness.providers.local.region import LocalEnvironment


def keys_per_member(env: LocalEnvironment, prefix: str) -> dict[str, list[str] | str]:
    """Each member's own (serializable) view of the keys under `prefix`, or why it could not be read."""
    out: dict[str, list[str] | str] = {}
    for m in env.members:
        client = env.client(m.name, timeout=10.0)
        try:
            out[m.name] = client.keys(prefix, serializable=True)
        except EtcdRequestError as e:
            out[m.name] = str(e)
        finally:
            client.close()
    return out


def hashkv(env: LocalEnvironment, revision: int | None = None) -> dict[str, int]:
    """HashKV of every member at one revision (default: the lowest current revision)."""
    if revision is None:
        revs = [s.revision for s in env.status().values() if not isinstance(s, str)]
        if len(revs) != len(env.members):
            raise HarnessError("cannot compute HashKV: not every member answers status")
        revision = min(revs)
    hashes: dict[str, int] = {}
    for m in env.members:
        out = netns.ns_run(
            env.names.client_ns(m.zone),
            [env.etcdctl, f"--endpoints={m.client_url}", "endpoint", "hashkv",
             f"--rev={revision}", "-w", "json"],
            timeout=env.config.timeouts.command,
        )
        hashes[m.name] = int(json.loads(out)[0]["HashKV"]["hash"])
    return hashes
