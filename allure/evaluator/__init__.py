"""The evaluator: every evaluator is a LangChain chat model (OpenAI-compatible, embedded local server, replay)."""

from allure.evaluator._chat import ReplayChatModel, build_openai_model
from allure.evaluator._open import open_evaluator
from allure.evaluator._parse import LabelParser, prob_positive
from allure.evaluator._runner import EvalResult, EvalStats, Evaluator, ExamplesFor, ProgressFn

__all__ = [
    "EvalResult",
    "EvalStats",
    "Evaluator",
    "ExamplesFor",
    "LabelParser",
    "ProgressFn",
    "ReplayChatModel",
    "build_openai_model",
    "open_evaluator",
    "prob_positive",
]
