"""Graph state: small, JSON-able (ids, counters, metric summaries). Datasets and verdicts live in the run store."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.store import RunStore

ProgressLine = Any  # Callable[[str], None] | None; typed loosely to keep the context dataclass simple


class LoopState(TypedDict, total=False):
    """The loop's state, checkpointed after every node."""

    run_id: str
    """The run (also the checkpoint thread id)."""
    iteration: int
    """The current iteration, from 1."""
    memory_version: str
    """Content hash of the memory the last evaluation used."""
    memory_size: int
    """Examples in memory when the last evaluation ran."""
    proposed: int
    """Candidates proposed in this iteration."""
    new_approved: int
    """Examples the last commit added to memory."""
    stop_reason: str
    """Why the loop stopped (empty while running)."""
    final_reason: str
    """Why the loop stops after this commit (auto-approved candidates of a last pass still enter memory)."""
    history: Annotated[list[dict[str, Any]], operator.add]
    """One summary per iteration (metrics of each split, costs)."""


@dataclass
class AuditContext:
    """What the nodes need and the checkpoint must not hold (passed as LangGraph runtime context)."""

    spec: AuditSpec
    store: RunStore
    project_dir: Path
    run_dir: Path
    progress: Any = None
    """``Callable[[str], None]`` for status lines, or None."""
    eval_progress: Any = None
    """``Callable[[int, int], None]`` for the evaluation progress bar, or None."""
    _memory: Any = field(default=None, repr=False)
    _items: dict[str, Any] = field(default_factory=dict, repr=False)
    _verdicts: dict[tuple[str, int], Any] = field(default_factory=dict, repr=False)

    def items(self, run_id: str) -> list[Any]:
        """The run's items (read once per process: they never change during a run)."""
        if run_id not in self._items:
            self._items[run_id] = self.store.items(run_id)
        return self._items[run_id]

    def verdicts(self, run_id: str, iteration: int) -> dict[str, Any]:
        """Item id -> verdict of an iteration (read once per process)."""
        key = (run_id, iteration)
        if key not in self._verdicts:
            self._verdicts = {key: self.store.verdicts(run_id, iteration)}
        return self._verdicts[key]

    def remember_verdicts(self, run_id: str, iteration: int, verdicts: dict[str, Any]) -> None:
        """Keep an iteration's verdicts just written, so later nodes need not read them back."""
        self._verdicts = {(run_id, iteration): verdicts}

    def say(self, line: str) -> None:
        """Send a status line to the caller, if it listens."""
        if self.progress:
            self.progress(line)

    def memory(self) -> Any:
        """The episodic memory (opened once)."""
        if self._memory is None:
            from allure.memory import EpisodicMemory

            loc = self.spec.memory.location
            if "://" not in loc and not Path(loc).is_absolute():
                loc = str(self.project_dir / loc)
            self._memory = EpisodicMemory.open(loc, collection=self.spec.memory.collection)
        return self._memory
