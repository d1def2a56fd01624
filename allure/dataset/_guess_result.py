"""What ``allure init`` guesses from a dataset: :class:`Guess`, an audit spec with a note per field."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SAMPLE_ROWS = 5000
"""Rows read to guess the mapping and the label set."""

JudgeShape = str
"""``grader``, ``pairwise``, ``rubric`` or ``reference_free`` (the prompt set's name)."""


@dataclass
class Guess:
    """A guessed audit spec with a note per guessed field."""

    path: Path
    """The dataset file."""
    columns: dict[str, str] = field(default_factory=dict)
    """Item field -> column."""
    shape: JudgeShape = "reference_free"
    """The prompt set."""
    label_set: list[Any] = field(default_factory=lambda: [0, 1])
    """The labels."""
    label_synonyms: dict[str, list[str]] = field(default_factory=dict)
    """Other forms of the labels (``[label_synonyms]``), e.g. ``true`` for ``1``."""
    positive_label: Any = None
    """The positive label (``None``: not guessed)."""
    gold_score: dict[str, Any] | None = None
    """``[dataset.gold_score]`` when the gold column is numeric with many values."""
    rubric: str = ""
    """What the labels mean (prompt sets other than grader)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Field -> what was found and what to check."""
    all_columns: list[str] = field(default_factory=list)
    """Every column seen (nested keys as ``a.b``)."""
    n_rows: int = 0
    """Rows read."""
