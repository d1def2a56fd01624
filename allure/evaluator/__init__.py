"""The evaluator: every evaluator is a LangChain chat model (any OpenAI-compatible server, the embedded one, replay).

Names are imported on first use, so that ``allure --help`` and ``allure.evaluator.local``
do not pay for the OpenAI client and LangChain at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.evaluator._calibrate import CF_PREFIX, NO_PROBS, CalibrationOutcome, calibrate_pass
    from allure.evaluator._chat import OpenAICompatibleChat, ReplayChatModel, build_openai_model
    from allure.evaluator._http import ChatCompletionsClient, close_sessions
    from allure.evaluator._open import open_evaluator
    from allure.evaluator._parse import LabelParser, prob_positive
    from allure.evaluator._redact import REDACTED, redact
    from allure.evaluator._runner import (
        AnswerKey,
        EvalPlan,
        EvalResult,
        EvalStats,
        Evaluator,
        ExamplesFor,
        PassOptions,
        ProgressFn,
    )
    from allure.evaluator._swap import FALLBACK_NOTE, SWAPPED, debias_verdicts, swapped_item, swaps_positions
    from allure.evaluator._tokens import TokenCounter

_WHERE = {
    "ChatCompletionsClient": "_http",
    "close_sessions": "_http",
    "OpenAICompatibleChat": "_chat",
    "ReplayChatModel": "_chat",
    "build_openai_model": "_chat",
    "open_evaluator": "_open",
    "LabelParser": "_parse",
    "prob_positive": "_parse",
    "REDACTED": "_redact",
    "redact": "_redact",
    "AnswerKey": "_runner",
    "EvalPlan": "_runner",
    "EvalResult": "_runner",
    "TokenCounter": "_tokens",
    "CF_PREFIX": "_calibrate",
    "NO_PROBS": "_calibrate",
    "CalibrationOutcome": "_calibrate",
    "calibrate_pass": "_calibrate",
    "FALLBACK_NOTE": "_swap",
    "SWAPPED": "_swap",
    "debias_verdicts": "_swap",
    "swapped_item": "_swap",
    "swaps_positions": "_swap",
    "EvalStats": "_runner",
    "Evaluator": "_runner",
    "ExamplesFor": "_runner",
    "ProgressFn": "_runner",
    "PassOptions": "_runner",
}

__all__ = [
    "CF_PREFIX",
    "NO_PROBS",
    "CalibrationOutcome",
    "calibrate_pass",
    "FALLBACK_NOTE",
    "SWAPPED",
    "debias_verdicts",
    "swapped_item",
    "swaps_positions",
    "AnswerKey",
    "ChatCompletionsClient",
    "EvalPlan",
    "EvalResult",
    "EvalStats",
    "Evaluator",
    "ExamplesFor",
    "LabelParser",
    "OpenAICompatibleChat",
    "PassOptions",
    "ProgressFn",
    "REDACTED",
    "ReplayChatModel",
    "TokenCounter",
    "build_openai_model",
    "close_sessions",
    "open_evaluator",
    "prob_positive",
    "redact",
]


__getattr__ = lazy_exports(__name__, _WHERE)
