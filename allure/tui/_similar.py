"""Similar examples already in memory, looked up off the UI thread.

The first lookup may load the embedding model (seconds), so lookups run on daemon
threads: the screen never waits for them and quitting never waits either. Results
are cached per candidate and handed back to the UI thread through ``deliver``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence

from allure.errors import AllureError
from allure.models import IclExample

SimilarRows = Sequence[tuple[IclExample, float]]
"""Examples from memory with their similarity to a candidate, nearest first."""

SimilarFn = Callable[[IclExample], SimilarRows]
"""Returns the examples in memory most similar to a candidate, with their similarity."""

SEARCHING = "searching the memory …"
"""What the panel says while a lookup runs."""


class SimilarLookup:
    """Cached, threaded calls of a :data:`SimilarFn`.

    Args:
        find: The lookup; ``None`` means no memory is connected.
        deliver: Called as ``deliver(callback, candidate_id, result)`` from the lookup
            thread; it must run ``callback`` on the UI thread (``App.call_from_thread``)
            and may raise ``RuntimeError`` once the app has exited.
    """

    def __init__(self, find: SimilarFn | None, deliver: Callable[..., object]) -> None:
        self.find = find
        self.deliver = deliver
        self.cache: dict[str, SimilarRows | str] = {}
        self.busy: set[str] = set()

    def request(
        self, example: IclExample, show: Callable[[str, SimilarRows | str], None]
    ) -> SimilarRows | str:
        """What to show now for ``example``; starts a lookup whose result goes to ``show``."""
        if self.find is None:
            return "(no memory connected)"
        if example.id in self.cache:
            return self.cache[example.id]
        if example.id not in self.busy:
            self.busy.add(example.id)
            threading.Thread(target=self._run, args=(example, show), daemon=True, name="similar").start()
        return SEARCHING

    def clear(self) -> None:
        """Forget the cached results (the memory may have grown)."""
        self.cache.clear()

    def _run(self, example: IclExample, show: Callable[[str, SimilarRows | str], None]) -> None:
        assert self.find is not None
        result: SimilarRows | str
        try:
            result = list(self.find(example))
        except (AllureError, OSError, ValueError, RuntimeError) as exc:
            result = f"(memory unavailable: {exc})"
        with contextlib.suppress(RuntimeError):  # the app has exited meanwhile
            self.deliver(self._done, example.id, result, show)

    def _done(
        self, candidate_id: str, result: SimilarRows | str, show: Callable[[str, SimilarRows | str], None]
    ) -> None:
        self.busy.discard(candidate_id)
        self.cache[candidate_id] = result
        show(candidate_id, result)
