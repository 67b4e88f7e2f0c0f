"""Data-safety checks over recorded histories."""

from __future__ import annotations

from typing import Iterable, Mapping


def lost_writes(acked: Iterable[int], present: Iterable[int], gone: Iterable[int] = ()) -> list[int]:
    """Acknowledged writes that are not in the store, or that a read-back found gone (`gone`, even
    if back by the end): each one is data loss."""
    have, acked_ = set(present), set(acked)
    return sorted({seq for seq in acked_ if seq not in have} | (set(gone) & acked_))


def seqs_from_keys(keys: Iterable[str], prefix: str) -> set[int]:
    return {int(k[len(prefix):]) for k in keys if k.startswith(prefix) and k[len(prefix):].isdigit()}


def diverging_hashes(hashes: Mapping[str, int]) -> dict[str, int]:
    """Empty when every member has the same HashKV; else every member's hash."""
    return {} if len(set(hashes.values())) <= 1 else dict(hashes)
