"""The CogEval adapter: cognitive-map conversations (github.com/cogeval/cogmaps) as items.

The mapping is fixed (``format = "cogeval"``, or auto-detected when a JSONL row has
``test_question`` and ``expected_answer``):

====================  ==========================================
Item field            CogEval field
====================  ==========================================
``id``                ``path`` (unique per conversation file)
``task``              ``test_question`` (the last user turn)
``response``          ``response`` (the last assistant turn)
``gold_answers``      ``expected_answer`` (a list; a bare string is wrapped)
``problem_type``      ``task`` (``1stepPath``, ``valuePath``, ...)
``group``             ``graph/domain`` (the cognitive map)
``generator``         ``model_dir`` (else the in-file ``model``)
``recorded_label``    ``score`` (the ``gpt_rubric`` grade, GPT-4 per the papers)
``recorded_output``   ``None`` (the grader's text is not in the data)
====================  ==========================================

Recorded labels: ``score`` is 0/1 with ``max_score`` 1 in all but one scored row; a
missing score (2,358 rows: pythia-12b, bloomz, n15star_cot, ...) gives ``None``. A
``max_score`` above 1 maps full marks to 1 and anything less to 0. A score *above*
``max_score`` is an invalid grade, not a label: the one such row at upstream HEAD
(``n21star/unordSpatial/nClusters/gpt-35-turbo/temp_0.5_015.json``, score 3.0 of 1.0)
is a response that never states a cluster count while the expected answer is
"there are 3 clusters": the grader wrote the count instead of a grade. It is left
unlabelled (``None``) with the reason in ``metadata["recorded_label_note"]``, as an
unparseable grade is, never coerced. Any other out-of-set score is a
:class:`~allure.errors.DatasetError`.

The heavy ``messages`` and ``score_history`` fields are dropped; small scalar fields
are kept in ``metadata``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from allure.dataset._spec import ColumnMap
from allure.dataset._values import as_text, is_empty, parse_gold, parse_label
from allure.errors import DatasetError
from allure.labels import Label
from allure.models import Item

logger = logging.getLogger(__name__)

COGEVAL_COLUMNS = ColumnMap(
    id="path",
    task="test_question",
    response="response",
    gold_answers="expected_answer",
    recorded_label="score",
    problem_type="task",
    group=["graph", "domain"],
    generator="model_dir",
)
"""The fixed CogEval mapping, as a :class:`ColumnMap` (documentation and reuse)."""

COGEVAL_REQUIRED: tuple[str, ...] = ("path", "test_question", "response", "expected_answer", "task")
"""Fields every CogEval row must have."""

COGEVAL_METADATA: tuple[str, ...] = (
    "path",
    "graph",
    "domain",
    "model",
    "variant",
    "temperature",
    "rep",
    "test_key",
    "parsed_response",
    "score",
    "max_score",
    "rubric",
)
"""Small fields kept in ``Item.metadata`` (``messages`` and ``score_history`` are dropped)."""


def is_cogeval_row(row: dict[str, Any]) -> bool:
    """True when a JSON row looks like a CogEval conversation (auto-detection)."""
    return "test_question" in row and "expected_answer" in row


def cogeval_label(
    score: Any, max_score: Any, *, where: str, label_set: Sequence[Label] = (0, 1)
) -> tuple[Label | None, str | None]:
    """The recorded label for a CogEval ``score``/``max_score`` pair, and a note when it is not used.

    Returns:
        ``(label, note)``: ``(None, None)`` for no score; ``(None, reason)`` for a score above
        ``max_score`` (an invalid grade); else the label and ``None``.

    Raises:
        DatasetError: the score is not an integer grade in ``label_set`` (after scaling).
    """
    if is_empty(score):
        return None, None
    top = max_score if isinstance(max_score, int | float) and not isinstance(max_score, bool) else 1.0
    if isinstance(score, int | float) and not isinstance(score, bool):
        if score > top:
            return None, f"score {score} exceeds max_score {top}: an invalid grade, left unlabelled"
        if top > 1 and score >= 0:
            return (1 if score >= top else 0), None
    return parse_label(score, where=where, label_set=label_set), None


def item_from_cogeval_row(
    row: dict[str, Any], *, where: str, label_set: Sequence[Label] = (0, 1), gold_separator: str = "||"
) -> Item:
    """Build an :class:`Item` from one CogEval row (see the module docstring for the mapping).

    Args:
        row: The parsed JSON object.
        where: ``"file:line"`` of the row, for error messages.
        label_set: Allowed labels.
        gold_separator: Splits a string ``expected_answer`` into answers.

    Raises:
        DatasetError: a required field is missing, or the score is out of the label set.
    """
    for name in COGEVAL_REQUIRED:
        if name not in row:
            have = ", ".join(sorted(row)) or "(none)"
            raise DatasetError(
                f"CogEval field '{name}' is missing (the row has: {have})",
                where=f"{where}, field '{name}'",
                fix='this row is not CogEval: set [dataset] format = "jsonl" and map [dataset.columns]',
            )
    if is_empty(row["path"]):
        raise DatasetError(
            "CogEval 'path' is empty",
            where=f"{where}, field 'path'",
            fix="every row needs its conversation path",
        )
    label, note = cogeval_label(
        row.get("score"), row.get("max_score"), where=f"{where}, field 'score'", label_set=label_set
    )
    metadata = {k: row[k] for k in COGEVAL_METADATA if k in row}
    if note is not None:
        metadata["recorded_label_note"] = note
        logger.warning("%s: %s", where, note)
    return Item(
        id=as_text(row["path"]),
        task=as_text(row["test_question"]),
        response=as_text(row["response"]),
        gold_answers=parse_gold(
            row["expected_answer"], where=f"{where}, field 'expected_answer'", separator=gold_separator
        ),
        recorded_label=label,
        problem_type=as_text(row["task"]),
        group=f"{as_text(row.get('graph'))}/{as_text(row.get('domain'))}",
        generator=as_text(row.get("model_dir") or row.get("model")),
        metadata=metadata,
    )
