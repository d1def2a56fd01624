"""``heap_frozen``: the heap alive before the work is out of collection while it runs, and back after.
(Frozen objects freed meanwhile leave the permanent generation: counts are compared with a slack.)"""

from __future__ import annotations

import gc

from allure._heap import YOUNG_THRESHOLD, heap_frozen

FRESH = 5000
"""Containers allocated after a freeze: a second freeze would add them all to the count."""


def test_frozen_inside_restored_after_and_nesting_is_free() -> None:
    before = gc.get_threshold()
    with heap_frozen():
        frozen = gc.get_freeze_count()
        assert frozen > FRESH and gc.get_threshold()[0] >= YOUNG_THRESHOLD
        fresh = [[] for _ in range(FRESH)]
        with heap_frozen():  # nested: freezes nothing more
            assert gc.get_freeze_count() < frozen + FRESH // 2
        assert gc.get_freeze_count() > frozen - FRESH // 2  # the inner end did not unfreeze
        del fresh
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_callers_own_freeze_is_left_alone() -> None:
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        fresh = [[] for _ in range(FRESH)]
        with heap_frozen():  # neither freezes the fresh containers nor unfreezes the caller's
            assert abs(gc.get_freeze_count() - mine) < FRESH // 2
        assert abs(gc.get_freeze_count() - mine) < FRESH // 2
        del fresh
    finally:
        gc.unfreeze()
