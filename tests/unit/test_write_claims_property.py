"""The write claims written once more, as simply as possible, and compared with the validators the
steps use on generated probe histories: the longest gap, writes failing throughout, how finely
the probe places a resumption, and the writes a store lost ("no acknowledged write is lost" and
a restore's RPO, which read the same keys through two functions)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from harness.probes.availability import ProbeHistory
from harness.probes.samples import Sample
from harness.validate import availability as av
from harness.validate.history import lost_writes, seqs_from_keys

# A probe history: each request (begin, how long, acknowledged) from one writer, in order.
REQUESTS = st.lists(st.tuples(st.floats(0.001, 0.3), st.floats(0.001, 0.3), st.booleans()), max_size=40)


def history(requests: list[tuple[float, float, bool]]) -> list[Sample]:
    t, out = 0.0, []
    for seq, (pause, took, ok) in enumerate(requests):
        t += pause
        out.append(Sample("write", "m0", t, t + took, ok, seq=seq))
        t += took
    return out


def simple_longest(samples: list[Sample], start: float, end: float) -> float:
    """At every acknowledgement in the window (and at its start), the stretch to the next one or
    to the window's end, from the last acknowledgement at or before it (or the window's start)."""
    acked = sorted(s.end for s in samples if s.ok)
    best = 0.0
    for t in [start] + [a for a in acked if start < a <= end]:
        before = [a for a in acked if a <= t]
        after = [a for a in acked if t < a <= end]
        best = max(best, (after[0] if after else end) - (before[-1] if before else start))
    return best


@settings(max_examples=400, deadline=None, database=None)
@given(REQUESTS, st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_the_longest_gap_is_what_the_simple_reading_finds(requests: list[tuple[float, float, bool]], a: float,
                                                          length: float) -> None:
    samples = history(requests)
    gap = av.longest_write_gap(samples, a, a + length)
    assert abs(gap.length - simple_longest(samples, a, a + length)) < 1e-9
    # and no acknowledgement falls inside it
    assert not [s for s in samples if s.ok and gap.start < s.end < gap.end]


@settings(max_examples=400, deadline=None, database=None)
@given(REQUESTS, st.floats(0.0, 3.0), st.floats(0.0, 3.0))
def test_writes_failing_throughout_and_a_short_gap_never_both_hold(requests: list[tuple[float, float, bool]],
                                                                   a: float, length: float) -> None:
    samples = history(requests)
    acked, failed = av.writes_failed_between(samples, a, a + length)
    gap = av.longest_write_gap(samples, a, a + length)
    if acked == 0 and failed > 0:
        # nothing acknowledged from the first failed request's begin to the window's end
        first = min(s.start for s in samples if not s.ok and a <= s.start and s.end <= a + length)
        assert gap.length >= a + length - first - 1e-9


@settings(max_examples=400, deadline=None, database=None)
@given(REQUESTS, st.floats(0.0, 3.0), st.floats(0.1, 3.0))
def test_what_the_probe_could_not_place_never_exceeds_the_gap(requests: list[tuple[float, float, bool]], a: float,
                                                               length: float) -> None:
    samples = history(requests)
    gap = av.longest_write_gap(samples, a, a + length)
    unresolved = av.gap_unresolved(samples, gap)
    assert 0.0 <= unresolved <= gap.length + 1e-9
    if not gap.open and unresolved > 0:  # only a failed request right before the one that ended it
        ended = next(s for s in samples if s.ok and abs(s.end - gap.end) < 1e-9)
        before = max((s for s in samples if s.start < ended.start), key=lambda s: s.start)
        assert not before.ok


PREFIX = "/probe/w/"


@settings(max_examples=400, deadline=None, database=None)
@given(REQUESTS, st.data())
def test_no_write_lost_and_the_restores_rpo_read_one_loss(requests: list[tuple[float, float, bool]],
                                                         data: st.DataObject) -> None:
    """What a member holds: any of the writes (acknowledged or not: a failed request may have been
    applied), zero-padded or not, and keys of no probe write. A lost write, read plainly: an
    acknowledged one whose key is not there. "No acknowledged write is lost" holds exactly when the
    RPO step counts none, and both name the same writes and span."""
    samples = history(requests)
    held = data.draw(st.sets(st.sampled_from([s.seq for s in samples])) if samples else st.just(set()))
    keys = [f"{PREFIX}{seq:06d}" if seq % 2 else f"{PREFIX}{seq}" for seq in held]
    keys += data.draw(st.lists(st.sampled_from([f"{PREFIX}x", "/other/3", f"{PREFIX}", "/probe/w3"]), max_size=3))
    lost_plainly = [s for s in samples if s.ok and s.seq not in held]

    no_loss = not lost_writes(ProbeHistory(PREFIX, "zone-a", {}, samples).acked(), seqs_from_keys(keys, PREFIX))
    rpo = av.writes_lost(samples, PREFIX, keys)
    assert no_loss == (rpo.count == 0) == (not lost_plainly)
    assert [s.seq for s in rpo.writes] == [s.seq for s in lost_plainly]
    span = max(s.end for s in lost_plainly) - min(s.start for s in lost_plainly) if lost_plainly else 0.0
    assert abs(rpo.seconds - span) < 1e-9
