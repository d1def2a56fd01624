"""Guess an audit spec from the first rows of a dataset file (``allure init``).

The guess names, for every field, what it found and what the user should check; :func:`render_spec`
writes it as an ``audit.toml`` whose guessed lines carry those notes as comments.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from allure.dataset._spec import SINGLE_COLUMN_FIELDS
from allure.dataset._values import as_text, is_conversation
from allure.errors import DatasetError
from allure.labels import guess_positive
from allure.records import iter_rows, kind_from_name

SAMPLE_ROWS = 5000
"""Rows read to guess the mapping and the label set."""

# Column names per field, most specific first; a name matches after lower-casing and dropping
# everything but letters and digits ("User Query" -> "userquery").
_NAMES: dict[str, tuple[str, ...]] = {
    "id": (
        "id",
        "uid",
        "idx",
        "questionid",
        "itemid",
        "exampleid",
        "sampleid",
        "key",
        "index",
        "docid",
        "qid",
    ),
    "response_b": (
        "responseb",
        "outputb",
        "answerb",
        "completionb",
        "generationb",
        "response2",
        "output2",
        "answer2",
        "completion2",
        "summaryb",
        "modelbresponse",
        "responsemodelb",
        "conversationb",
        "response2text",
    ),
    "response": (
        "responsea",
        "outputa",
        "answera",
        "completiona",
        "generationa",
        "response1",
        "output1",
        "answer1",
        "completion1",
        "summarya",
        "modelaresponse",
        "responsemodela",
        "conversationa",
        "response",
        "output",
        "answer",
        "completion",
        "generation",
        "generatedtext",
        "modeloutput",
        "modelanswer",
        "modelresponse",
        "prediction",
        "summary",
        "claim",
        "systemoutput",
        "chatgptresponse",
        "hypothesis",
        "candidate",
        "text",
    ),
    "task": (
        "prompt",
        "question",
        "input",
        "instruction",
        "query",
        "userquery",
        "task",
        "problem",
        "context",
        "source",
        "document",
        "article",
        "premise",
        "conversation",
        "dialogue",
        "request",
        "userprompt",
    ),
    "recorded_label": (
        "judgelabel",
        "judgeverdict",
        "judgescore",
        "judgedecision",
        "judgepreference",
        "judge",
        "evaluatorlabel",
        "gpt4label",
        "gpt4judgment",
        "gpt4judgement",
        "llmlabel",
        "llmjudge",
        "llmjudgment",
        "modellabel",
        "predictedlabel",
        "predlabel",
        "autolabel",
        "verdictjudge",
    ),
    "recorded_output": (
        "judgeoutput",
        "judgeresponse",
        "judgeexplanation",
        "judgerationale",
        "judgereasoning",
        "evaluatoroutput",
        "rawoutput",
        "llmoutput",
        "gpt4output",
        "judgment",
        "judgement",
    ),
    "gold_label": (
        "humanlabel",
        "goldlabel",
        "humanpreference",
        "humanwinner",
        "humanjudgment",
        "humanjudgement",
        "humanscore",
        "humanrating",
        "label",
        "gold",
        "preference",
        "winner",
        "annotation",
        "annotations",
        "rating",
        "score",
        "verdict",
        "iscorrect",
        "correct",
        "hallucination",
        "ishallucination",
        "consistency",
        "factuality",
        "faithful",
        "consistent",
        "grade",
        "class",
        "category",
    ),
    "gold_answers": (
        "goldanswer",
        "goldanswers",
        "correctanswer",
        "correctanswers",
        "expectedanswer",
        "expectedanswers",
        "referenceanswer",
        "reference",
        "references",
        "target",
        "answers",
        "groundtruth",
        "expected",
    ),
    "rubric": ("rubric", "criteria", "criterion", "scoringrubric", "guideline", "guidelines"),
    "problem_type": ("problemtype", "tasktype", "type", "subject", "domain", "topic", "subset", "split"),
    "generator": (
        "generator",
        "model",
        "modelname",
        "modela",
        "system",
        "systemid",
        "systemname",
        "generatormodel",
    ),
}

_PAIR_FIRST = re.compile(r"(^|[^a-z0-9])(a|1|first|model_?a|response_?a|output_?a)$", re.I)
_PAIR_SECOND = re.compile(r"(^|[^a-z0-9])(b|2|second|model_?b|response_?b|output_?b)$", re.I)

JudgeShape = str
"""``grader``, ``pairwise``, ``rubric`` or ``reference_free`` (the prompt set's name)."""


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


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


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            seen.setdefault(key, None)
            if isinstance(value, dict):
                for sub, v in value.items():
                    if not isinstance(v, dict | list):
                        seen.setdefault(f"{key}.{sub}", None)
    return list(seen)


def _values(rows: list[dict[str, Any]], column: str) -> list[Any]:
    out = []
    for row in rows:
        value: Any = row
        for part in [column] if column in row else column.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if value is not None and not (isinstance(value, str) and not value.strip()):
            out.append(value)
    return out


def _match(columns: list[str], names: tuple[str, ...], taken: set[str]) -> str | None:
    by_norm = {_norm(c): c for c in reversed(columns) if c not in taken}
    for name in names:  # exact names, most specific first
        if name in by_norm:
            return by_norm[name]
    for name in names:  # then a column whose name ends with or starts with one of them
        if len(name) < 4:
            continue
        for norm, col in by_norm.items():
            if norm.endswith(name) or norm.startswith(name):
                return col
    return None


def _is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return True
    try:
        float(str(v))
    except ValueError:
        return False
    return True


def _as_label(v: Any) -> int | str:
    if isinstance(v, bool):
        return int(v)
    if _is_number(v) and float(str(v)).is_integer():
        return int(float(str(v)))
    return str(v).strip()


def _order_pairwise(labels: list[Any]) -> list[Any]:
    """First-response labels first, then second-response labels, then the rest (ties)."""

    def rank(lab: Any) -> tuple[int, str]:
        text = str(lab)
        if _PAIR_FIRST.search(text):
            return (0, text)
        if _PAIR_SECOND.search(text):
            return (1, text)
        return (2, text)

    return sorted(labels, key=rank)


def _long_text(rows: list[dict[str, Any]], column: str) -> bool:
    values = [as_text(v) for v in _values(rows, column) if isinstance(v, str) or is_conversation(v)]
    return bool(values) and sum(len(v) for v in values) / len(values) > 20


MAX_LABELS = 100
"""A label column may hold up to this many distinct values (if they recur)."""


def _label_like(rows: list[dict[str, Any]], column: str) -> bool:
    """Labels: numbers (or lists of numbers), or at most :data:`MAX_LABELS` distinct short values that recur."""
    return not _not_labels(rows, column)


def _not_labels(rows: list[dict[str, Any]], column: str) -> str:
    """Why the values of ``column`` are not read as labels (``""``: they are)."""
    values = _values(rows, column)
    if not values:
        return "it is empty"
    if all(_is_number(v) or (isinstance(v, list) and all(_is_number(x) for x in v)) for v in values):
        return ""
    distinct = {str(v) for v in values if not isinstance(v, list | dict)}
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


def _many_word_labels(rows: list[dict[str, Any]], column: str) -> int | None:
    """The number of distinct values when ``column`` holds more than 20 distinct short words that
    recur (labels of a many-class judge), else ``None``."""
    values = [v for v in _values(rows, column) if not isinstance(v, list | dict)]
    distinct = {str(v).strip() for v in values}
    if len(distinct) <= MAX_GUESSED_LABELS or any(_is_number(v) for v in values):
        return None
    short_words = all(len(v) <= 40 and len(v.split()) <= 3 for v in distinct)
    return len(distinct) if short_words and len(distinct) < len(values) else None


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
    g = Guess(path=p, all_columns=_columns(rows), n_rows=len(rows))
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
        col = _match(cols, _NAMES[fld], taken)
        if col is None:
            continue
        first = tuple(n for n in _NAMES["response"] if n[-1] in "a1")  # names of a first response
        if fld == "response_b" and _match([c for c in cols if c != col], first, taken) is None:
            continue  # a "second response" with no first one is not a pair
        if fld in ("response", "task", "gold_answers", "recorded_output") and not _long_text(rows, col):
            if fld == "response":
                g.notes["response"] = f"column '{col}' holds short values; check it is the judged response"
            elif fld != "gold_answers":
                continue
        if fld in ("gold_label", "recorded_label") and (why := _not_labels(rows, col)):
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
        if fld in ("gold_label", "recorded_label") and (words := _many_word_labels(rows, col)):
            g.notes["label_set"] = (
                f"column '{col}' holds {words} distinct word labels (more than {MAX_GUESSED_LABELS}): all "
                "mapped; check that they are labels and merge synonyms under [label_synonyms]"
            )
        if fld == "gold_answers" and _label_like(rows, col) and not _long_text(rows, col):
            continue  # a short closed set of values is a label, not an answer
        if fld == "id" and len(set(map(str, _values(rows, col)))) < len(rows):
            continue  # not unique or not always there: line numbers are better ids
        g.columns[fld] = col
        taken.add(col)
    if "response" not in g.columns:
        text = [c for c in cols if c not in taken and _long_text(rows, c)]
        if not text:
            raise DatasetError(
                "no column looks like the judged response",
                where=str(p),
                fix="name the response column 'response' (or 'output', 'answer'), or write the spec by hand "
                f"(columns found: {', '.join(cols)})",
            )
        g.columns["response"] = text[-1]
        g.notes["response"] = f"no usual name found; took '{text[-1]}', the last long-text column: check it"
    _drop_foreign_recorded(g, rows)
    _guess_labels(g, rows)
    _guess_shape(g)
    return g


def _drop_foreign_recorded(g: Guess, rows: list[dict[str, Any]]) -> None:
    """Unmap a 'judge' column whose values are not the gold column's labels (an annotator's name)."""
    rec, gold = g.columns.get("recorded_label"), g.columns.get("gold_label")
    if rec is None or gold is None:
        return
    gold_values = {str(_as_label(v)).lower() for v in _values(rows, gold) if not isinstance(v, list | dict)}
    rec_values = [str(_as_label(v)).lower() for v in _values(rows, rec) if not isinstance(v, list | dict)]
    if not rec_values or sum(v in gold_values for v in rec_values) < len(rec_values) / 2:
        g.columns.pop("recorded_label")
        g.notes["recorded_label"] = f"column '{rec}' does not hold the labels of '{gold}': not used"


def _guess_labels(g: Guess, rows: list[dict[str, Any]]) -> None:
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
    values = _values(rows, source)
    lists = [v for v in values if isinstance(v, list)]
    distinct = list(dict.fromkeys(_as_label(v) for v in values if not isinstance(v, list | dict)))
    numeric = [v for v in values if _is_number(v)]
    fractional = any(not float(str(v)).is_integer() for v in numeric)
    if gold and lists and all(_is_number(x) for v in lists for x in v):
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
    counts = Counter(str(_as_label(v)) for v in values if not isinstance(v, list | dict))
    seen = ", ".join(f"{k} ({n})" for k, n in counts.most_common(8))
    g.notes.setdefault("label_set", f"values of '{source}' in the first {g.n_rows} rows: {seen}")
    forms: dict[Any, set[str]] = {}
    for v in values:
        if not isinstance(v, list | dict):
            forms.setdefault(_as_label(v), set()).add(json.dumps(v, ensure_ascii=False))
    merged = {lab: sorted(f) for lab, f in forms.items() if len(f) > 1}
    if merged:
        said = "; ".join(f"{', '.join(f)} read as {json.dumps(lab)}" for lab, f in merged.items())
        g.notes["label_merge"] = f"different values of '{source}' were merged into one label: {said}: check"


def _guess_shape(g: Guess) -> None:
    c = g.columns
    if "response_b" in c:
        g.shape = "pairwise"
        g.label_set = _order_pairwise(list(g.label_set))
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
    )
    if g.gold_score is not None:
        g.rubric = f"1: the response is correct and consistent with the task; 0: it is not (dataset column '{source}')."
    else:
        g.rubric = f"Label the response as the dataset column '{source}' does: {_label_text(g.label_set)}."
    if g.positive_label is None and len(g.label_set) == 2:
        g.positive_label = guess_positive(list(g.label_set))


def _label_text(labels: list[Any]) -> str:
    return ", ".join(json.dumps(x, ensure_ascii=False) if isinstance(x, str) else str(x) for x in labels)


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_spec(g: Guess, *, spec_dir: Path) -> str:
    """The guessed spec as TOML text, each guessed line commented with what was found and what to check."""
    try:
        rel = g.path.resolve().relative_to(spec_dir.resolve())
        data_path = rel.as_posix()
    except ValueError:
        data_path = str(g.path.resolve())
    n = g.notes
    lines = [
        f"# Written by `allure init` from the first {g.n_rows} rows of {g.path.name}.",
        "# Every value below was guessed: check the lines marked CHECK, then run `allure validate` on this file.",
        f"# Columns found: {', '.join(g.all_columns)}",
        "",
        f"name = {_toml(g.path.stem)}",
        f"label_set = {_toml(g.label_set)}" + (f"    # CHECK: {n['label_set']}" if "label_set" in n else ""),
    ]
    if "label_merge" in n:
        lines.append(f"# CHECK: {n['label_merge']}")
    if g.positive_label is not None:
        lines.append(
            f"positive_label = {_toml(g.positive_label)}    # CHECK: the label that means correct/yes"
        )
    else:
        lines.append(
            "# positive_label = ...    # no positive class guessed (pairwise or multi-class): F1 is the macro F1"
        )
    lines += ["", "[dataset]", f"path = {_toml(data_path)}"]
    live = "recorded_label" not in g.columns and "recorded_output" not in g.columns
    if live and g.n_rows > 200:
        lines.append(
            f"limit = 200    # a seeded sample for a first live pass; remove it to label all "
            f"{g.n_rows if g.n_rows < SAMPLE_ROWS else 'the'} rows"
        )
    lines.append("[dataset.columns]")
    for fld in SINGLE_COLUMN_FIELDS:
        if fld in g.columns:
            note = n.get(fld, "")
            lines.append(f"{fld} = {_toml(g.columns[fld])}" + (f"    # CHECK: {note}" if note else ""))
        elif fld in n:
            lines.append(f"# {fld} = ...    # CHECK: {n[fld]}")
        else:
            lines.append(f'# {fld} = "..."    # not found')
    if g.gold_score is not None:
        gs = g.gold_score
        lines += [
            "[dataset.gold_score]    # reference labels from a number",
            f"column = {_toml(gs['column'])}",
            f"threshold = {gs['threshold']}    # CHECK: {n['gold_score']}",
            f"labels = {_toml(gs['labels'])}",
        ]
    lines += [
        "",
        "[evaluator]",
        f"prompt = {_toml(g.shape)}    # CHECK: {n.get('shape', '')}",
    ]
    if g.rubric:
        lines.append(f"rubric = {_toml(g.rubric)}    # CHECK: what the labels mean, as the evaluator is told")
    if not live:
        lines.append(
            'kind = "replay"    # CHECK: replays the recorded judge; for a live one: kind = "openai", '
            "model, base_url"
        )
    else:
        lines += [
            '# kind = "openai"    # a live evaluator: any OpenAI-compatible server; default: the embedded model',
            '# model = "gpt-4o-mini"',
            '# base_url = "https://api.openai.com/v1"',
        ]
    lines += [
        "",
        "[loop]",
        "max_iterations = 1    # one pass: the judge's agreement with the labels (raise it to run the ALLURE loop)",
        "heldout_fraction = 0    # every item audited; set e.g. 0.3 to measure whether ICL examples help",
        "",
    ]
    return "\n".join(lines)
