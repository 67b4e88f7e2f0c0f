"""Faults of an etcd's backups: the object store unreachable."""

from __future__ import annotations

from typing import Any, ClassVar

from harness.errors import ConfigError
from harness.faults.base import Injection, lacks
from harness.providers.base import BackupStoreNetwork, EtcdBackups, Environment

ALL = "all"


class BackupStoreOutage:
    """The backup store unreachable from one zone (target: the zone) or from every zone ("all"), as
    an S3 endpoint or a gateway endpoint that stops answering: the leading sidecar's snapshots
    fail and are counted, and etcd must not care. Heal makes it reachable again."""

    kind: ClassVar[str] = "backup-store-outage"

    def available(self, env: Environment) -> str | None:
        return lacks(env, EtcdBackups, "back its etcd up") or lacks(env, BackupStoreNetwork,
                                                                    "cut a zone off from its backup store")

    def validate(self, env: Environment, target: str) -> str:
        if target == ALL:
            return ALL
        try:
            return env.zone(target)
        except ConfigError:
            raise ConfigError(f"backup-store-outage takes a zone ({', '.join(env.zones)}) or {ALL!r}, "
                              f"got {target!r}") from None

    def _zones(self, env: Environment, target: str) -> list[str]:
        return list(env.zones) if target == ALL else [target]

    def inject(self, env: Environment, target: str, ctx: Injection) -> dict[str, Any]:
        assert isinstance(env, BackupStoreNetwork)
        return env.cut_backup_store(self._zones(env, target), ctx.run_id)

    def effect(self, env: Environment, target: str, data: dict[str, Any]) -> dict[str, Any] | None:
        assert isinstance(env, BackupStoreNetwork)
        return env.backup_store_cut_effect(data)

    def heal(self, env: Environment, target: str, data: dict[str, Any]) -> None:
        assert isinstance(env, BackupStoreNetwork)
        env.restore_backup_store(data)
