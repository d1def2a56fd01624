"""Which column holds which item field: column names per field, and reading a column's values
from the first rows (nested keys as ``a.b``)."""

from __future__ import annotations

import math
import re
from typing import Any

from allure.dataset._values import as_text, is_conversation, is_missing_label

# Column names per field, most specific first; a name matches after lower-casing and dropping
# everything but letters and digits ("User Query" -> "userquery").
COLUMN_NAMES: dict[str, tuple[str, ...]] = {
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
        "graderlabel",
        "graderverdict",
        "graderscore",
        "gpt4verdict",
        "gpt4score",
        "gptlabel",
        "gptverdict",
        "gptscore",
        "llmverdict",
        "llmscore",
        "modelverdict",
        "modelscore",
        "evaluatorverdict",
        "evaluatorscore",
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
        "graderoutput",
        "graderresponse",
        "graderraw",
        "grader",
    ),
    "gold_label": (
        "humanlabel",
        "humanverdict",
        "humanannotation",
        "human",
        "annotatorlabel",
        "annotator",
        "truelabel",
        "referencelabel",
        "expectedlabel",
        "groundtruthlabel",
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


def norm_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def column_names(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key, value in row.items():
            seen.setdefault(key, None)
            if isinstance(value, dict):
                for sub, v in value.items():
                    if not isinstance(v, dict | list):
                        seen.setdefault(f"{key}.{sub}", None)
    return list(seen)


def column_values(rows: list[dict[str, Any]], column: str) -> list[Any]:
    out = []
    for row in rows:
        value: Any = row
        for part in [column] if column in row else column.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not is_missing_label(value):
            out.append(value)
    return out


def missing_count(rows: list[dict[str, Any]], column: str) -> tuple[int, int]:
    """``(null or blank cells, NaN cells)`` of ``column`` in ``rows``."""
    nulls = nans = 0
    for row in rows:
        value: Any = row
        for part in [column] if column in row else column.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if (isinstance(value, float) and math.isnan(value)) or (
            isinstance(value, str) and value.strip().casefold() == "nan"
        ):
            nans += 1
        elif is_missing_label(value):
            nulls += 1
    return nulls, nans


EXACT_ONLY = frozenset({"human", "annotator", "grader"})
"""Names a column must carry whole: ``human_written_summary`` is no human label."""


def word_bounds(name: str) -> set[int]:
    """Where the words of ``name`` start and end in :func:`norm_name`'s text: at separators, at a
    lower-to-upper case change and between letters and digits (``grader_raw``: 0, 6, 9;
    ``humanLabel``: 0, 5, 10)."""
    bounds, pos = {0}, 0
    for word in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+", name):
        pos += len(word)
        bounds.add(pos)
    return bounds


def _at_word(norm: str, bounds: set[int], start: int, end: int) -> bool:
    """``norm[start:end]`` begins at a word's start and ends at a word's end, a plural ``s`` or
    ``es`` after it allowed."""
    if start not in bounds:
        return False
    return end in bounds or any(
        norm[end : end + len(tail)] == tail and end + len(tail) in bounds for tail in ("s", "es")
    )


def match_column(columns: list[str], names: tuple[str, ...], taken: set[str]) -> str | None:
    """The column named ``names``' first (most specific) name; else the first column whose leading or
    trailing words spell one (``human_label_v2`` is a ``humanlabel``, ``grader_raw`` no ``grade``)."""
    by_norm = {norm_name(c): c for c in reversed(columns) if c not in taken}
    for name in names:  # exact names, most specific first
        if name in by_norm:
            return by_norm[name]
    words = {norm: word_bounds(col) for norm, col in by_norm.items()}  # once a column, not once a name
    for name in names:  # then a column whose first or last words spell one of them
        if len(name) < 4 or name in EXACT_ONLY:
            continue
        for norm, col in by_norm.items():
            bounds = words[norm]
            if norm.startswith(name) and _at_word(norm, bounds, 0, len(name)):
                return col
            for tail in ("", "s", "es"):
                if norm.endswith(name + tail) and _at_word(
                    norm, bounds, len(norm) - len(name + tail), len(norm) - len(tail)
                ):
                    return col
    return None


def is_number(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    try:
        number = float(v) if isinstance(v, float) else float(str(v))
    except ValueError:
        return False
    return math.isfinite(number)  # NaN and infinity are no score


def as_label(v: Any) -> int | str:
    if isinstance(v, bool):
        return int(v)
    if is_number(v) and float(str(v)).is_integer():
        return int(float(str(v)))
    return str(v).strip()


def long_text(rows: list[dict[str, Any]], column: str) -> bool:
    values = [as_text(v) for v in column_values(rows, column) if isinstance(v, str) or is_conversation(v)]
    return bool(values) and sum(len(v) for v in values) / len(values) > 20
