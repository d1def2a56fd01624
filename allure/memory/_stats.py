"""Counts that describe a memory: size, per failure mode, per problem type, per group."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from allure.memory._collection import content_hash
from allure.memory._store import EpisodicMemory
from allure.models import FAILURE_MODES


class MemoryStats(BaseModel):
    """A summary of the memory's contents."""

    size: int
    """Number of examples."""
    content_hash: str
    """The memory's content hash (see :class:`MemoryVersion`)."""
    by_mode: dict[str, int]
    """Failure mode -> count; every mode is listed, zero included."""
    by_problem_type: dict[str, int]
    """Problem type -> count, sorted by name."""
    by_group: dict[str, int]
    """Group -> count, sorted by name."""
    by_correct_label: dict[str, int]
    """Correct label -> count."""
    reviewers: dict[str, int]
    """Reviewer -> count."""

    def empty_modes(self) -> list[str]:
        """Failure modes (``other`` excluded) with no example."""
        return [m for m in FAILURE_MODES if m != "other" and self.by_mode.get(m, 0) == 0]


def memory_stats(memory: EpisodicMemory, *, reload: bool = True) -> MemoryStats:
    """Count the memory's examples (reloads the snapshot unless ``reload`` is False)."""
    examples = memory.refresh() if reload else memory.all()
    modes = Counter(ex.failure_mode for ex in examples)
    return MemoryStats(
        size=len(examples),
        content_hash=content_hash(examples),
        by_mode={m: modes.get(m, 0) for m in FAILURE_MODES},
        by_problem_type=dict(sorted(Counter(ex.problem_type for ex in examples).items())),
        by_group=dict(sorted(Counter(ex.group for ex in examples).items())),
        by_correct_label=dict(sorted(Counter(str(ex.correct_label) for ex in examples).items())),
        reviewers=dict(sorted(Counter(ex.reviewer for ex in examples).items())),
    )
