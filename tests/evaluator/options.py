"""The evaluator options the evaluator's unit tests start from: the shipped ``grader`` prompt set,
labels 0 / 1 read by ``score: N``; each test overrides what it is about."""

from __future__ import annotations

from typing import Any

from allure.evaluator import EvaluatorOptions
from allure.prompts import load_prompt_set

GRADER_PATTERN = r"score:\s*([01])\b"
"""The label pattern of the ``grader`` prompt set's answer format."""


def grader_options(**kw: Any) -> EvaluatorOptions:
    """``EvaluatorOptions`` for a toy grader judge (model ``m``, no params), with ``kw`` on top."""
    base: dict[str, Any] = {
        "model_name": "m",
        "params": {},
        "prompts": load_prompt_set("grader"),
        "label_set": [0, 1],
        "label_pattern": GRADER_PATTERN,
    }
    return EvaluatorOptions(**{**base, **kw})
