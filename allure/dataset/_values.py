"""Cell values to item fields: labels, gold answers, text.

Every parser takes ``where`` (``"file:line, field 'x'"``) so that a bad value is
reported at its place, with the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from allure.errors import DatasetError
from allure.labels import Label, LabelVocabulary, label_list


def is_empty(value: Any) -> bool:
    """True for a missing cell: JSON ``null``, a string that is blank, or a float NaN (what pandas
    and Parquet write for a missing value, and Python's JSON reader for ``NaN``)."""
    return (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and math.isnan(value))
    )


def is_missing_label(value: Any) -> bool:
    """A label cell with no label: an empty cell (:func:`is_empty`) or the text ``NaN`` (any case),
    which pandas writes for a missing value and reads back as one."""
    return is_empty(value) or (isinstance(value, str) and value.strip().casefold() == "nan")


def parse_label(
    value: Any,
    *,
    where: str,
    label_set: Sequence[Label],
    synonyms: Mapping[str, Sequence[str]] | None = None,
) -> Label | None:
    """The label a cell names, or ``None`` for an empty one.

    Integer label sets accept ints, integral floats (``1.0``) and their string forms (``"1"``);
    string label sets match the label or one of its ``synonyms``, ignoring case and surrounding
    quotes (``"Yes"`` is ``yes``).

    Raises:
        DatasetError: the value names no label of ``label_set``.
    """
    if is_missing_label(value):
        return None
    vocab = LabelVocabulary(label_set, synonyms)
    if isinstance(value, bool):
        return _bool_label(value, vocab, where=where)
    label = vocab.resolve(value)
    if label is not None:
        return label
    allowed = label_list(label_set)
    if vocab.is_int and not _is_integral(value):
        raise DatasetError(
            f"label {value!r} is not an integer",
            where=where,
            fix=f"use one of {{{allowed}}} (or leave the cell empty for no label), or map the column "
            "with a threshold ([dataset.gold_score])",
        )
    raise DatasetError(
        f"label {value!r} is outside the label set {{{allowed}}}",
        where=where,
        fix=f"correct the value, add it to label_set, or name it under [label_synonyms] as a form of one of "
        f"{{{allowed}}}",
    )


def _bool_label(value: bool, vocab: LabelVocabulary, *, where: str) -> Label:
    """A JSON ``true``/``false`` cell: the label spelled ``true``/``false`` (a label or a synonym),
    never 1/0 by Python's ``bool`` being an ``int`` (``true`` would be score 1 of a 1-5 scale)."""
    text = json.dumps(value)
    label = vocab.resolve(text)
    if label is not None:
        return label
    allowed = label_list(vocab.labels)
    example = vocab.labels[-1] if value else vocab.labels[0]
    raise DatasetError(
        f"label {text} is a boolean, which names no label of {{{allowed}}}",
        where=where,
        fix=f"write the label itself (e.g. {label_list([example])}), or say what {text} means under "
        f'[label_synonyms], e.g. {label_list([example])} = ["{text}"]',
    )


def _is_integral(value: Any) -> bool:
    try:
        return float(str(value).strip()).is_integer()
    except ValueError:
        return False


def parse_gold(value: Any, *, where: str, separator: str) -> list[str]:
    """Gold answers from a cell: a JSON list, or a string split on ``separator``.

    Blank answers are dropped; an empty cell gives ``[]``.

    Raises:
        DatasetError: the value is an object or a list holding non-scalars.
    """
    if is_empty(value):
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(separator) if part.strip()]
    if isinstance(value, bool | int | float):
        return [str(value)]
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return [str(v).strip() for v in value if str(v).strip()]
    raise DatasetError(
        f"gold answers must be a string or a list of strings, got {type(value).__name__}",
        where=where,
        fix=f'write e.g. ["Answer: 1, 3"] or "Answer: 1, 3{separator}Answer: 1,3"',
    )


def response_text(value: Any, *, where: str) -> str:
    """A response cell as text: a string, a number, or a conversation (see :func:`as_text`).

    Raises:
        DatasetError: the cell is missing (null, NaN, an empty CSV cell) or holds a list or an object
            that is not a conversation: there is nothing to judge.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        raise DatasetError(
            "the response is missing (null, NaN or an empty cell)",
            where=where,
            fix='give every row a response to judge (an empty string "" is an empty response), or drop the row',
        )
    if isinstance(value, list | dict) and not is_conversation(value):
        raise DatasetError(
            f"the response is a JSON {'list' if isinstance(value, list) else 'object'}, not text",
            where=where,
            fix='write the response as a string, or as a conversation: [{"role": "...", "content": "..."}, ...]; '
            "map a key inside an object as column.key",
        )
    return as_text(value)


def as_text(value: Any) -> str:
    """A cell as text: ``None`` becomes ``""``; a conversation (a list of ``{"role", "content"}``
    messages) becomes one ``role: content`` paragraph per message; other values ``str(value)``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if is_conversation(value):
        return "\n\n".join(f"{m.get('role', '')}: {as_text(m.get('content'))}".strip() for m in value)
    return str(value)


def is_conversation(value: Any) -> bool:
    """True for a non-empty list of chat messages (objects with ``content``)."""
    return (
        isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "content" in m for m in value)
    )


def small_metadata(row: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    """The row's other fields that are scalars or lists of scalars (nested objects are dropped)."""
    return {key: value for key, value in row.items() if key not in skip and _is_small(value)}


def _is_small(value: Any) -> bool:
    if value is None or isinstance(value, str | int | float | bool):
        return True
    return isinstance(value, list) and all(isinstance(v, str | int | float | bool) for v in value)
