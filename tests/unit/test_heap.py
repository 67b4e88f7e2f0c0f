"""The heap is frozen while any probe runs and thawed when the last one stops."""

import gc
import weakref

from harness.probes import heap


def test_the_heap_is_frozen_from_the_first_probe_to_the_last() -> None:
    assert not heap.frozen() and gc.get_freeze_count() == 0
    held = [object() for _ in range(100)]
    first = heap.hold()
    assert heap.frozen() and gc.get_freeze_count() >= len(held)
    second = heap.hold()
    first()
    assert heap.frozen(), "a probe still runs"
    second()
    assert not heap.frozen() and gc.get_freeze_count() == 0


def test_a_release_counts_once() -> None:
    first, second = heap.hold(), heap.hold()
    first()
    first()
    assert heap.frozen(), "the second probe still runs; the first one's second release changed nothing"
    second()
    assert not heap.frozen() and gc.get_freeze_count() == 0


def test_garbage_from_before_the_probe_is_collected_not_frozen() -> None:
    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle: only the collector frees it
    gone = weakref.ref(a)
    del a, b
    release = heap.hold()
    try:
        assert gone() is None
    finally:
        release()
