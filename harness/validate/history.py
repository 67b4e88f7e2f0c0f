"""Data-safety checks over recorded histories."""

from __future__ import annotations

from typing import Iterable, Mapping


def lost_writes(acked: Iterable[int], present: Iterable[int]) -> list[int]:
    """Acknowledged writes that are not in the store: each one is data loss."""
    have = set(present)
    return sorted(seq for seq in set(acked) if seq not in have)


def seqs_from_keys(keys: Iterable[str], prefix: str) -> set[int]:
    return {int(k[len(prefix):]) for k in keys if k.startswith(prefix) and k[len(prefix):].isdigit()}


def diverging_hashes(hashes: Mapping[str, int]) -> dict[str, int]:
    """Empty when every member has the same HashKV; else every member's hash."""
    return {} if len(set(hashes.values())) <= 1 else dict(hashes)
