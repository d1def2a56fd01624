"""The judge's client: a runner that labels items through one :class:`ChatBackend` protocol.

What turns its answers into verdicts (swap, debias, calibrate, the read-out) is the pass pipeline,
:mod:`allure.passes`, one layer above; nothing here imports it.

Backend kinds (``[evaluator] kind``) are registered (:mod:`allure.backends`,
:class:`BackendKind`, ``@register_backend``). Backends: any OpenAI-compatible server (:class:`OpenAIBackend`), the embedded llama.cpp server
(:class:`allure.evaluator.local.EmbeddedBackend`), replay of recorded outputs
(:class:`ReplayBackend`) and any LangChain chat model (:class:`LangChainBackend`). Names are
imported on first use, so that ``allure --help`` and ``allure.evaluator.local`` do not pay for
aiohttp and LangChain at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure._chat_http import ChatCallError, ChatCompletionsClient
    from allure.backends import register_backend
    from allure.evaluator._backend import CallSettings, ChatBackend, Reply, RetryKind, Usage, retry_kind
    from allure.evaluator._kind import BackendKind, backend_kind
    from allure.evaluator._langchain import LangChainBackend
    from allure.evaluator._open import open_evaluator, warm_http_client
    from allure.evaluator._openai import OpenAIBackend, build_openai_backend
    from allure.evaluator._options import (
        AnswerKey,
        EvalPlan,
        EvalResult,
        EvalStats,
        EvaluatorOptions,
        ExamplesFor,
        PassOptions,
        ProgressFn,
    )
    from allure.evaluator._parse import LabelParser, prob_positive
    from allure.evaluator._redact import REDACTED, redact
    from allure.evaluator._replay import ReplayBackend
    from allure.evaluator._runner import Evaluator
    from allure.evaluator._tokens import TokenCounter

_WHERE = {
    "BackendKind": "_kind",
    "backend_kind": "_kind",
    "register_backend": "allure.backends",
    "RetryKind": "_backend",
    "ChatBackend": "_backend",
    "Reply": "_backend",
    "CallSettings": "_backend",
    "Usage": "_backend",
    "retry_kind": "_backend",
    "ChatCallError": "allure._chat_http",
    "ChatCompletionsClient": "allure._chat_http",
    "LangChainBackend": "_langchain",
    "OpenAIBackend": "_openai",
    "build_openai_backend": "_openai",
    "ReplayBackend": "_replay",
    "open_evaluator": "_open",
    "warm_http_client": "_open",
    "LabelParser": "_parse",
    "prob_positive": "_parse",
    "REDACTED": "_redact",
    "redact": "_redact",
    "AnswerKey": "_options",
    "EvalPlan": "_options",
    "EvalResult": "_options",
    "EvalStats": "_options",
    "EvaluatorOptions": "_options",
    "ExamplesFor": "_options",
    "PassOptions": "_options",
    "ProgressFn": "_options",
    "TokenCounter": "_tokens",
    "Evaluator": "_runner",
}

__all__ = [
    "BackendKind",
    "backend_kind",
    "register_backend",
    "RetryKind",
    "AnswerKey",
    "ChatBackend",
    "ChatCallError",
    "ChatCompletionsClient",
    "EvalPlan",
    "EvalResult",
    "EvalStats",
    "Evaluator",
    "EvaluatorOptions",
    "ExamplesFor",
    "LabelParser",
    "LangChainBackend",
    "OpenAIBackend",
    "PassOptions",
    "ProgressFn",
    "REDACTED",
    "ReplayBackend",
    "Reply",
    "CallSettings",
    "TokenCounter",
    "Usage",
    "build_openai_backend",
    "open_evaluator",
    "warm_http_client",
    "prob_positive",
    "redact",
    "retry_kind",
]


__getattr__ = lazy_exports(__name__, _WHERE)
