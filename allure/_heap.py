"""Garbage collection around the work that allocates per item (a pass, a loop's evaluate node).

A pass allocates a few hundred objects per call while thousands of items, the memory and the models
stay alive; each full collection would walk all of them again. :func:`heap_frozen` leaves what is
alive before the work out of collection while it runs and collects the youngest generation less
often.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG_THRESHOLD = 100_000
"""Allocations between two collections of the youngest generation during a pass (Python's default: 700)."""

_frozen_here = False
"""Whether a :func:`heap_frozen` of this process froze the heap and has not ended yet."""


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """Leave the objects alive before a pass (the caller's items, memory, models) out of garbage
    collection while it runs (``gc.freeze``): a pass allocates a few hundred objects per call, and
    each full collection would otherwise walk the whole heap again. Nothing is leaked: they are
    collectable again after the pass; a caller's own freeze is left alone. The youngest generation
    is collected every :data:`YOUNG_THRESHOLD` allocations, not every 700: most of a call's objects
    are freed by their reference counts before that, and the calls in flight are not walked again
    and again (the thresholds are restored after the pass)."""
    global _frozen_here
    # nested in our own freeze: nothing to do (and gc.get_freeze_count() walks the frozen heap)
    freeze = not _frozen_here and gc.isenabled() and gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    if freeze:
        gc.freeze()
        gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
        _frozen_here = True
    try:
        yield
    finally:
        if freeze:
            _frozen_here = False
            gc.set_threshold(*thresholds)
            gc.unfreeze()
