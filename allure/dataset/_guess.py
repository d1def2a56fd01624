"""Guess an audit spec from the first rows of a dataset file (``allure init``).

The guess names, for every field, what it found and what the user should check
(:class:`~allure.dataset._guess_result.Guess`): the columns here and in ``_guess_columns``, the
label set in ``_guess_labels``; :func:`~allure.dataset._render.render_spec` writes it as an
``audit.toml`` whose guessed lines carry those notes as comments.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path
from typing import Any

from allure.dataset._guess_columns import COLUMN_NAMES, column_names, column_values, long_text, match_column
from allure.dataset._guess_labels import (
    MAX_GUESSED_LABELS,
    drop_foreign_recorded,
    guess_labels,
    label_like,
    many_word_labels,
    not_labels,
    order_pairwise,
)
from allure.dataset._guess_result import SAMPLE_ROWS, Guess
from allure.errors import DatasetError
from allure.labels import guess_positive
from allure.records import iter_rows, kind_from_name


def guess_spec(path: str | Path) -> Guess:
    """Guess the column mapping, the label set and the judge shape from the first rows of ``path``.

    Raises:
        DatasetError: the file is missing, unreadable, empty, or has no column that could be a response.
    """
    p = Path(path)
    if not p.is_file():
        raise DatasetError(
            "dataset file not found", where=str(p), fix="pass an existing JSONL, JSON, CSV or Parquet file"
        )
    kind = kind_from_name(p, error=DatasetError)
    rows = [row for _, row in islice(iter_rows(p, kind=kind, error=DatasetError), SAMPLE_ROWS)]
    if not rows:
        raise DatasetError(
            "the dataset has no rows", where=str(p), fix="pass a file with a header and at least one row"
        )
    g = Guess(path=p, all_columns=column_names(rows), n_rows=len(rows))
    cols, taken = g.all_columns, set[str]()
    order = (
        "id",
        "response_b",
        "response",
        "recorded_output",
        "recorded_label",
        "gold_label",
        "task",
        "gold_answers",
        "rubric",
        "problem_type",
        "generator",
    )
    for fld in order:
        col = match_column(cols, COLUMN_NAMES[fld], taken)
        if col is None:
            continue
        first = tuple(n for n in COLUMN_NAMES["response"] if n[-1] in "a1")  # names of a first response
        if fld == "response_b" and match_column([c for c in cols if c != col], first, taken) is None:
            continue  # a "second response" with no first one is not a pair
        if fld in ("response", "task", "gold_answers", "recorded_output") and not long_text(rows, col):
            if fld == "response":
                g.notes["response"] = f"column '{col}' holds short values; check it is the judged response"
            elif fld == "recorded_output":
                g.notes["recorded_output"] = (
                    f"column '{col}' is named like the judge's recorded output but holds short values: to "
                    "replay that judge, map it here (each value parsed as a verdict; or, when its values "
                    'are labels of label_set, as recorded_label) and set [evaluator] kind = "replay"'
                )
                continue
            elif fld != "gold_answers":
                continue
        if fld in ("gold_label", "recorded_label") and (why := not_labels(rows, col)):
            g.notes[fld] = (
                f"column '{col}' was not mapped: {why}. If it holds the labels, map it here and list "
                "every label in label_set"
                + (
                    "; a numeric score can become labels with [dataset.gold_score]"
                    if fld == "gold_label"
                    else ""
                )
            )
            continue
        if fld in ("gold_label", "recorded_label") and (words := many_word_labels(rows, col)):
            g.notes["label_set"] = (
                f"column '{col}' holds {words} distinct word labels (more than {MAX_GUESSED_LABELS}): all "
                "mapped; check that they are labels and merge synonyms under [label_synonyms]"
            )
        if fld == "gold_answers" and label_like(rows, col) and not long_text(rows, col):
            continue  # a short closed set of values is a label, not an answer
        if fld == "id" and len(set(map(str, column_values(rows, col)))) < len(rows):
            continue  # not unique or not always there: line numbers are better ids
        g.columns[fld] = col
        taken.add(col)
    if "response" not in g.columns:
        text = [c for c in cols if c not in taken and long_text(rows, c)]
        if not text:
            raise DatasetError(
                "no column looks like the judged response",
                where=str(p),
                fix="name the response column 'response' (or 'output', 'answer'), or write the spec by hand "
                f"(columns found: {', '.join(cols)})",
            )
        g.columns["response"] = text[-1]
        g.notes["response"] = f"no usual name found; took '{text[-1]}', the last long-text column: check it"
    drop_foreign_recorded(g, rows)
    _label_column_by_values(g, rows, taken)
    guess_labels(g, rows)
    _guess_shape(g)
    return g


def _label_column_by_values(g: Guess, rows: list[dict[str, Any]], taken: set[str]) -> None:
    """No column is named like a label or a gold answer: take the one column whose values look like
    labels (a few short values that recur: "yes"/"no", 0/1), with a note to check it; with several
    such columns, name them and map none (which is the reference is the user's to say)."""
    if {"gold_label", "recorded_label", "gold_answers"} & g.columns.keys() or {
        "gold_label",
        "recorded_label",
    } & g.notes.keys():
        return  # found by name, or a named column was refused with its reason (that note stands)
    found = [
        c for c in g.all_columns if c not in taken and c not in g.columns.values() and _recurring(rows, c)
    ]
    if len(found) == 1:
        g.columns["gold_label"] = found[0]
        taken.add(found[0])
        g.notes["gold_label"] = (
            f"no usual name found; took '{found[0]}', the one column whose values look like labels: check it "
            "holds the reference labels (not the judge's)"
        )
    elif found:
        g.notes["gold_label"] = (
            f"columns {', '.join(repr(c) for c in found)} hold values that look like labels; map the one "
            "with the reference labels here"
        )


def _recurring(rows: list[dict[str, Any]], column: str) -> bool:
    """Label-like values of which there are 2 to 20 distinct, each seen about twice or more (an id or a
    free number column does not qualify)."""
    if not_labels(rows, column):
        return False
    values = [v for v in column_values(rows, column) if not isinstance(v, list | dict)]
    distinct = {str(v) for v in values}
    return 2 <= len(distinct) <= min(MAX_GUESSED_LABELS, max(2, len(values) // 2))


def _guess_shape(g: Guess) -> None:
    c = g.columns
    if "response_b" in c:
        g.shape = "pairwise"
        g.label_set = order_pairwise(list(g.label_set))
        g.positive_label = None
        g.notes["shape"] = (
            f"two responses ('{c['response']}', '{c['response_b']}'): pairwise; the first label names "
            f"'{c['response']}', the second '{c['response_b']}'"
        )
        g.rubric = (
            f"The labels are those of the dataset column '{c.get('gold_label', c.get('recorded_label', ''))}': "
            f"{_label_text(g.label_set)}; the first names Response 1, the second Response 2."
        )
        return
    if "rubric" in c:
        g.shape = "rubric"
        g.notes["shape"] = f"a rubric column ('{c['rubric']}'): rubric"
        return
    if "gold_answers" in c and g.gold_score is None and "gold_label" not in c:
        g.shape = "grader"
        g.label_set, g.positive_label = [0, 1], 1
        g.notes["shape"] = (
            f"gold answers ('{c['gold_answers']}') and no label column: grader with the regex gold check"
        )
        return
    g.shape = "reference_free"
    source = c.get("gold_label") or c.get("recorded_label") or (g.gold_score or {}).get("column", "")
    g.notes["shape"] = (
        "a label column and no second response or rubric: reference_free (no answer in the prompt)"
        if source
        else "no label column, gold answers, second response or rubric: reference_free; map the reference "
        "labels (gold_label) or gold answers before auditing"
    )
    if g.gold_score is not None:
        g.rubric = f"1: the response is correct and consistent with the task; 0: it is not (dataset column '{source}')."
    elif source:
        g.rubric = f"Label the response as the dataset column '{source}' does: {_label_text(g.label_set)}."
    else:
        g.rubric = f"Label the response: {_label_text(g.label_set)}."
    if g.positive_label is None and len(g.label_set) == 2:
        g.positive_label = guess_positive(list(g.label_set))


def _label_text(labels: list[Any]) -> str:
    return ", ".join(json.dumps(x, ensure_ascii=False) if isinstance(x, str) else str(x) for x in labels)
