"""drarena.runs.execute: what it does around the tournament's event loop."""

from __future__ import annotations

import gc

import pytest

from drarena.runs.execute import INTERPRETER_FROZEN, YOUNG_COLLECTION_EVERY, frozen_heap


@pytest.fixture(autouse=True)
def nothing_frozen_but_the_interpreters() -> None:
    """Each test starts from the same state whatever ran before it in this process: no freeze
    beyond what the interpreter starts with (Python 3.12: a few hundred objects; 3.11 and
    3.13: none). Before: the tests asserted a freeze count of 0, which 3.12 never has."""
    if gc.get_freeze_count() > INTERPRETER_FROZEN:
        gc.unfreeze()


def test_frozen_heap_freezes_while_it_plays_and_restores_after() -> None:
    """Objects alive before the tournament are out of the collector's scans while it plays
    (and young collections are rarer), and both are given back afterwards, a failure
    included, so a process running many tournaments keeps collecting their cycles."""
    thresholds = gc.get_threshold()
    before = gc.get_freeze_count()
    with pytest.raises(RuntimeError, match="a match failed"), frozen_heap():
        assert gc.get_freeze_count() > max(before, 1000)  # the heap, not just the start's
        assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, *thresholds[1:])
        raise RuntimeError("a match failed")
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() <= before  # given back (3.12: the start's few too)
    with frozen_heap():  # and again: a process plays several tournaments
        assert gc.get_freeze_count() > 1000
    assert gc.get_freeze_count() == 0


def test_a_cycle_made_before_is_collected_after() -> None:
    """Frozen, a cycle left before the tournament is not collected while it plays; after, it
    is (the freeze was given back)."""

    class Node:
        other: object = None

    import weakref

    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del a, b
    with frozen_heap():
        gc.collect()
        assert ref() is not None  # frozen: not scanned
    gc.collect()
    assert ref() is None


def test_a_freeze_made_by_the_caller_is_left_alone() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with frozen_heap():
            pass
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
