"""Guessing the label set from a label column: whether a column holds labels at all, a numeric
gold score turned into 0/1, merged spellings, and the order of a pairwise judge's labels."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from allure.dataset._guess_columns import as_label, column_values, is_number, missing_count
from allure.dataset._guess_result import Guess

_PAIR_FIRST = re.compile(r"(^|[^a-z0-9])(a|1|first|model_?a|response_?a|output_?a)$", re.I)
_PAIR_SECOND = re.compile(r"(^|[^a-z0-9])(b|2|second|model_?b|response_?b|output_?b)$", re.I)


def order_pairwise(labels: list[Any]) -> list[Any]:
    """First-response labels first, then second-response labels, then the rest (ties)."""

    def rank(lab: Any) -> tuple[int, str]:
        text = str(lab)
        if _PAIR_FIRST.search(text):
            return (0, text)
        if _PAIR_SECOND.search(text):
            return (1, text)
        return (2, text)

    return sorted(labels, key=rank)


MAX_LABELS = 100
"""A label column may hold up to this many distinct values (if they recur)."""


def label_like(rows: list[dict[str, Any]], column: str) -> bool:
    """Labels: numbers (or lists of numbers), or at most :data:`MAX_LABELS` distinct short values that recur."""
    return not not_labels(rows, column)


def not_labels(rows: list[dict[str, Any]], column: str) -> str:
    """Why the values of ``column`` are not read as labels (``""``: they are)."""
    values = column_values(rows, column)
    if not values:
        nulls, nans = missing_count(rows, column)
        what = " and ".join(
            x for x in (f"{nulls} null or blank" if nulls else "", f"{nans} NaN" if nans else "") if x
        )
        return f"it holds no value in the first {len(rows)} rows ({what or 'absent'})"
    if all(is_number(v) or (isinstance(v, list) and all(is_number(x) for x in v)) for v in values):
        return ""
    distinct = {str(_key(v)) for v in values if not isinstance(v, list | dict)}
    if not distinct:
        return "it holds lists or objects, not labels"
    if len(distinct) > MAX_LABELS:
        return f"it has {len(distinct)} distinct values in {len(values)} rows (more than {MAX_LABELS})"
    if len(distinct) > max(2, len(values) // 2):  # labels recur; answers mostly do not
        return f"its {len(distinct)} distinct values in {len(values)} rows hardly recur (labels do)"
    longest = max(distinct, key=len)
    if len(longest) > 40:
        return f"some values are long text ({len(longest)} characters), not labels"
    return ""


MAX_GUESSED_LABELS = 20
"""Distinct values up to which a column is taken for labels without a word; word values beyond it
are still mapped, with a note."""


def many_word_labels(rows: list[dict[str, Any]], column: str) -> int | None:
    """The number of distinct values when ``column`` holds more than 20 distinct short words that
    recur (labels of a many-class judge), else ``None``."""
    values = [v for v in column_values(rows, column) if not isinstance(v, list | dict)]
    distinct = {str(v).strip() for v in values}
    if len(distinct) <= MAX_GUESSED_LABELS or any(is_number(v) for v in values):
        return None
    short_words = all(len(v) <= 40 and len(v.split()) <= 3 for v in distinct)
    return len(distinct) if short_words and len(distinct) < len(values) else None


def drop_foreign_recorded(g: Guess, rows: list[dict[str, Any]]) -> None:
    """Unmap a 'judge' column whose values are not the gold column's labels (an annotator's name)."""
    rec, gold = g.columns.get("recorded_label"), g.columns.get("gold_label")
    if rec is None or gold is None:
        return
    gold_values = {
        str(as_label(v)).lower() for v in column_values(rows, gold) if not isinstance(v, list | dict)
    }
    rec_values = [
        str(as_label(v)).lower() for v in column_values(rows, rec) if not isinstance(v, list | dict)
    ]
    if not rec_values or sum(v in gold_values for v in rec_values) < len(rec_values) / 2:
        g.columns.pop("recorded_label")
        g.notes["recorded_label"] = f"column '{rec}' does not hold the labels of '{gold}': not used"


def _key(value: Any) -> int | str:
    """What makes two label cells one label: the number, or the text ignoring case and spaces (as the
    dataset reader reads them: ``"Yes"`` is ``yes``)."""
    lab = as_label(value)
    return lab if isinstance(lab, int) else " ".join(lab.casefold().split())


def _spellings(values: list[Any]) -> dict[int | str, int | str]:
    """Each label's key -> its first spelling in the column (the label written in ``label_set``)."""
    out: dict[int | str, int | str] = {}
    for v in values:
        if not isinstance(v, list | dict):
            out.setdefault(_key(v), as_label(v))
    return out


def _bool_synonyms(g: Guess, values: list[Any]) -> None:
    """JSON ``true``/``false`` label cells: the dataset reader never reads them as 1/0 by itself, so
    the guess names them under ``[label_synonyms]`` (with a note to check)."""
    bools = sorted({v for v in values if isinstance(v, bool)})
    if not bools:
        return
    for b in bools:
        g.label_synonyms.setdefault(str(as_label(b)), []).append(json.dumps(b))
    said = ", ".join(f"{json.dumps(b)} as {as_label(b)}" for b in bools)
    g.notes["label_synonyms"] = f"the column holds true/false: read {said} (a synonym each): check"


def guess_labels(g: Guess, rows: list[dict[str, Any]]) -> None:
    gold = g.columns.get("gold_label")
    source = gold or g.columns.get("recorded_label")
    if source is None:
        refused = g.notes.get("gold_label")
        g.notes["label_set"] = (
            f"no label column mapped ({refused}): the regex gold check against gold answers gives 0/1"
            if refused
            else "no label column found: the regex gold check against gold answers gives 0/1"
        )
        return
    values = column_values(rows, source)
    lists = [v for v in values if isinstance(v, list)]
    spelling = _spellings(values)
    distinct = list(dict.fromkeys(spelling[_key(v)] for v in values if not isinstance(v, list | dict)))
    numeric = [v for v in values if is_number(v)]
    fractional = any(not float(str(v)).is_integer() for v in numeric)
    if gold and lists and all(is_number(x) for v in lists for x in v):
        scores = [sum(map(float, v)) / len(v) for v in lists if v]
        what = "holds lists of numbers ({lo:g} to {hi:g}); their mean below the threshold is 0"
        hint = " (SummEval: 2.5)"
    elif gold and numeric and len(numeric) == len(values) and (fractional or len(distinct) > 10):
        scores = [float(str(v)) for v in numeric]
        what = f"is numeric ({{lo:g}} to {{hi:g}}, {len(set(scores))} values); below the threshold is 0"
        hint = ""
    else:
        scores = []
    if gold and scores:
        lo, hi = min(scores), max(scores)
        g.columns.pop("gold_label")
        g.gold_score = {"column": gold, "threshold": round((lo + hi) / 2, 3), "labels": [0, 1]}
        g.notes["gold_score"] = (
            f"column '{gold}' {what.format(lo=lo, hi=hi)} (incorrect), at or above it 1: check the threshold{hint}"
        )
        g.label_set, g.positive_label = [0, 1], 1
        return
    if len(distinct) < 2:
        distinct = [
            *distinct,
            *[
                x
                for x in ([0, 1] if all(isinstance(d, int) for d in distinct) else ["yes", "no"])
                if x not in distinct
            ],
        ][:2]
    if all(isinstance(d, int) for d in distinct):
        g.label_set = sorted(distinct)
    else:
        g.label_set = [str(d) for d in distinct]
        if not all(isinstance(d, str) for d in distinct):
            g.notes["label_set"] = "mixed numbers and words were read as strings: check"
    counts = Counter(str(as_label(v)) for v in values if not isinstance(v, list | dict))
    seen = ", ".join(f"{k} ({n})" for k, n in counts.most_common(8))
    nulls, nans = missing_count(rows, source)
    if nulls or nans:
        seen += (
            "; no label in "
            + " and ".join(
                x for x in (f"{nulls} (null or blank)" if nulls else "", f"{nans} (NaN)" if nans else "") if x
            )
            + " rows: those items have no reference label"
        )
    g.notes.setdefault("label_set", f"values of '{source}' in the first {g.n_rows} rows: {seen}")
    _bool_synonyms(g, values)
    forms: dict[Any, set[str]] = {}
    for v in values:
        if not isinstance(v, list | dict):
            forms.setdefault(spelling[_key(v)], set()).add(json.dumps(v, ensure_ascii=False))
    merged = {lab: sorted(f) for lab, f in forms.items() if len(f) > 1}
    if merged:
        said = "; ".join(f"{', '.join(f)} read as {json.dumps(lab)}" for lab, f in merged.items())
        g.notes["label_merge"] = f"different values of '{source}' were merged into one label: {said}: check"
