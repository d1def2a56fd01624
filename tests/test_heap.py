"""``heap_frozen``: the heap alive before the work is out of collection while it runs, and back after."""

from __future__ import annotations

import gc

from allure._heap import YOUNG_THRESHOLD, heap_frozen


def test_frozen_inside_restored_after_and_nesting_is_free() -> None:
    before = gc.get_threshold()
    with heap_frozen():
        frozen = gc.get_freeze_count()
        assert frozen > 0 and gc.get_threshold()[0] >= YOUNG_THRESHOLD
        with heap_frozen():  # nested: leaves the outer freeze as it is
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen  # the inner end did not unfreeze
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


def test_a_callers_own_freeze_is_left_alone() -> None:
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        with heap_frozen():
            pass
        assert gc.get_freeze_count() == mine
    finally:
        gc.unfreeze()
