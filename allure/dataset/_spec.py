"""The ``[dataset]`` table of an audit spec: where the items are and how to read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from allure.models import ITEM_TEXT

DatasetFormat = Literal["auto", "jsonl", "json", "csv", "parquet", "cogeval"]
"""How a dataset file is read.

- ``auto``: by extension (``.jsonl``, ``.jsonl.gz``, ``.json``, ``.csv``, ``.parquet``); a JSONL file whose first
  row has ``test_question`` and ``expected_answer`` is read as ``cogeval`` unless
  ``columns`` maps anything.
- ``jsonl``: one JSON object per line (gzip when the name ends in ``.gz``), mapped by ``columns``.
- ``json``: one JSON array of objects, or one object whose values are objects (the key becomes
  the row's ``id`` unless it has one); a file holding one object per line is read as JSONL.
- ``csv``: a header row, then one row per item (stdlib ``csv``), mapped by ``columns``.
- ``parquet``: a Parquet table (read with pandas), mapped by ``columns``.
- ``cogeval``: the CogEval cognitive-map conversations with the fixed CogEval mapping
  (``columns`` is ignored); see :mod:`allure.dataset._cogeval`.
"""


SINGLE_COLUMN_FIELDS = (
    "id",
    *ITEM_TEXT,
    "gold_label",
    "recorded_label",
    "recorded_output",
    "recorded_label_swapped",
    "problem_type",
    "generator",
)
"""The item fields a :class:`ColumnMap` maps to one column each (``group`` may take several)."""


class ColumnMap(BaseModel):
    """Which source column fills each :class:`~allure.models.Item` field.

    Every value names a column (a JSON key or a CSV header; ``a.b`` reaches key ``b`` inside the
    object in column ``a``). Only ``response`` is always mapped; an unmapped field keeps the
    ``Item`` default.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    """Column with a unique id per row; unmapped: ids are ``line-N`` (N = the line in the file)."""
    task: str | None = None
    """Column with the task (question) the generator answered; unmapped: empty."""
    response: str = "response"
    """Column with the generator's response (required in every row); the first response of a pair."""
    response_b: str | None = None
    """Column with the second response of a pair (pairwise prompt sets)."""
    rubric: str | None = None
    """Column with each item's rubric text (rubric prompt sets; unmapped: ``[evaluator] rubric``)."""
    gold_answers: str | None = None
    """Column with the accepted correct answer(s): a JSON list, or a string split on ``gold_separator``."""
    gold_label: str | None = None
    """Column with a reference label (a label of the label set or a synonym; empty = none)."""
    recorded_label: str | None = None
    """Column with a label recorded by an earlier evaluator (replay mode; empty = none)."""
    recorded_output: str | None = None
    """Column with the raw evaluator output that went with ``recorded_label``."""
    recorded_label_swapped: str | None = None
    """Pairwise: column with the recorded label of the same judge with the two responses swapped
    (empty = none); ``[dataset] swapped_labels_in`` says in which order's terms it is written. Replay
    then reports position consistency and position bias from it."""
    problem_type: str | None = None
    """Column with the kind of task; ``limit`` stratifies on it."""
    group: str | list[str] | None = None
    """Column, or list of columns joined with ``/``, that groups items sharing context."""
    generator: str | None = None
    """Column with the name of the model that wrote the response."""

    @field_validator(*SINGLE_COLUMN_FIELDS)
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a column name must not be empty; leave the field out to unmap it")
        return value

    @field_validator("group")
    @classmethod
    def _group_columns(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and (not value or any(not c.strip() for c in value)):
            raise ValueError(
                'group must be a column name or a non-empty list of names, e.g. ["graph", "domain"]'
            )
        return value

    def group_columns(self) -> list[str]:
        """The ``group`` column(s) as a list (empty when unmapped)."""
        if self.group is None:
            return []
        return [self.group] if isinstance(self.group, str) else list(self.group)

    def mapped(self) -> dict[str, str]:
        """``{item field: column}`` for every mapped single-column field (``group`` excluded)."""
        return {f: col for f in SINGLE_COLUMN_FIELDS if (col := getattr(self, f)) is not None}


class GoldScore(BaseModel):
    """A numeric column that becomes the reference label by a threshold or bins (``[dataset.gold_score]``).

    ``threshold = 2.5`` with ``labels = [0, 1]``: a score below 2.5 is ``0``, 2.5 or more is ``1``
    (ALLURE's SummEval rule). ``bins = [2, 4]`` with three labels: below 2, 2 to below 4, 4 or more.
    A list of numbers in a cell (several annotators) is averaged first.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    column: str
    """The numeric column (a number, or a list of numbers that is averaged)."""
    threshold: float | None = None
    """One cut point: below it ``labels[0]``, at or above it ``labels[1]``."""
    bins: list[float] | None = None
    """Increasing cut points; ``len(bins) + 1`` labels."""
    labels: list[int | str] = Field(default_factory=lambda: list[int | str]([0, 1]))
    """The label of each bin, lowest scores first."""

    @field_validator("labels", mode="before")
    @classmethod
    def _no_bool_labels(cls, value: Any) -> Any:
        if isinstance(value, list) and any(isinstance(x, bool) for x in value):
            raise ValueError(
                "labels holds true/false, which are not labels; name labels of label_set, e.g. [0, 1]"
            )
        return value

    @model_validator(mode="after")
    def _cuts(self) -> GoldScore:
        if (self.threshold is None) == (self.bins is None):
            raise ValueError("set exactly one of threshold (one cut point) or bins (a list of cut points)")
        cuts = self.cuts()
        if any(b <= a for a, b in zip(cuts, cuts[1:], strict=False)):
            raise ValueError(f"bins must increase, got {cuts}")
        if len(self.labels) != len(cuts) + 1:
            raise ValueError(
                f"{len(cuts)} cut point(s) need {len(cuts) + 1} labels, got {len(self.labels)} in labels"
            )
        return self

    def cuts(self) -> list[float]:
        """The cut points."""
        return [self.threshold] if self.threshold is not None else list(self.bins or [])

    def label_of(self, score: float) -> int | str:
        """The label of ``score``: the bin it falls in (a score equal to a cut point goes up)."""
        return self.labels[sum(score >= c for c in self.cuts())]


SwappedLabelsIn = Literal["original", "swapped"]
"""How a ``recorded_label_swapped`` column names the responses.

- ``original``: already mapped back: the label naming response A (``response``) means A, as in
  ``recorded_label`` (what most published judge logs keep).
- ``swapped``: as the judge wrote it with B shown first: the first response's label means B.
"""


class DatasetSpec(BaseModel):
    """Where a dataset is and how to turn its rows into items (the ``[dataset]`` table)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    path: str = Field(min_length=1)
    """The dataset file; a relative path resolves against the spec file's folder."""
    format: DatasetFormat = "auto"
    """How to read the file (see :data:`DatasetFormat`)."""
    columns: ColumnMap = Field(default_factory=ColumnMap)
    """Column mapping for ``jsonl`` and ``csv`` (ignored for ``cogeval``)."""
    gold_score: GoldScore | None = None
    """A numeric column turned into reference labels by a threshold or bins (instead of ``gold_label``)."""
    swapped_labels_in: SwappedLabelsIn = "original"
    """The order whose terms the ``recorded_label_swapped`` column is written in (see :data:`SwappedLabelsIn`)."""
    gold_separator: str = "||"
    """Separator that splits a string of gold answers (CSV cells, JSON strings) into a list."""
    limit: int | None = Field(default=None, ge=1)
    """Keep at most this many items: a seeded sample stratified by problem type."""
    max_response_chars: int | None = Field(default=None, ge=1)
    """Drop rows whose response is longer than this many characters (before sampling)."""
    seed: int = 0
    """Seed of the ``limit`` sample."""
    sample_by: Literal["item", "task"] = "item"
    """The unit of the ``limit`` sample: single items, or whole tasks (every response to one
    task text, the tasks with the most responses first) so that the evaluator's prompt cache
    re-uses each task's text across its responses."""

    @field_validator("gold_separator")
    @classmethod
    def _separator_not_empty(cls, value: str) -> str:
        if not value:
            raise ValueError('gold_separator must not be empty (default "||")')
        return value

    def resolve_path(self, base_dir: Path | None = None) -> Path:
        """The dataset path, a relative one joined to ``base_dir`` (the spec file's folder)."""
        p = Path(self.path).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = Path(base_dir) / p
        return p
