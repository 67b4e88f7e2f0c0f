"""Data-safety checks over recorded histories."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence


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


def first_divergence(histories: Mapping[str, Sequence[tuple[int, str, str | None]]],
                     oldest: int = 0) -> dict[str, Any]:
    """Where the members' own histories ((revision, key, value or None for a delete) each) first
    differ from revision `oldest` on: that revision and what each member holds at it (empty when
    they agree). As strong as HashKV at the last revision they all hold, and it says where."""
    by_member: dict[str, dict[int, list[tuple[str, str | None]]]] = {m: {} for m in histories}
    for member, writes in histories.items():
        for rev, key, value in writes:
            if rev >= oldest:
                by_member[member].setdefault(rev, []).append((key, value))
    for rev in sorted({r for held in by_member.values() for r in held}):
        seen = {m: sorted(held.get(rev, []), key=str) for m, held in by_member.items()}
        if len({repr(v) for v in seen.values()}) > 1:
            return {"revision": rev, **{m: [(k, v if v is None else v[:40]) for k, v in held[:5]]
                                        for m, held in seen.items()}}
    return {}


def store_split(stores: tuple[str, Any]) -> tuple[str, dict[str, Any]]:
    """Whether the members hold the same keys, from harness.probes.converge.stores_at: by their
    HashKV, or by their histories, which say where they first differ. ("HashKV" or "history", and
    what differs: empty when they agree.)"""
    how, seen = stores
    return how, diverging_hashes(seen) if how == "HashKV" else first_divergence(*seen)
