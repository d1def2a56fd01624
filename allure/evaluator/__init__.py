"""The evaluator: a runner that labels items through one :class:`ChatBackend` protocol.

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
    from allure._http import ChatCallError, ChatCompletionsClient
    from allure.backends import register_backend
    from allure.evaluator._backend import CallSettings, ChatBackend, Reply, RetryKind, Usage, retry_kind
    from allure.evaluator._calibrate import (
        NO_PROBS,
        CalibrationOutcome,
        CalibrationTarget,
        FittedCalibration,
        apply_fitted,
        calibrate_pass,
    )
    from allure.evaluator._content_free import CF_PREFIX, block_name, content_free_item
    from allure.evaluator._kind import BackendKind, backend_kind
    from allure.evaluator._langchain import LangChainBackend
    from allure.evaluator._learning_curve import CurveDraw, judge_verdicts, readout_curve, review_order
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
    from allure.evaluator._pipeline import (
        RECORDED,
        DebiasSummary,
        PassOutcome,
        PassPlan,
        PassStats,
        Readout,
        ReadoutOutcome,
        run_pass,
    )
    from allure.evaluator._plan_spec import extra_calls, plan_from_spec, readout_reads, reference_shares
    from allure.evaluator._polarity import REVERSED, PolarityVariant, polarity_variant
    from allure.evaluator._readout import (
        LearnedReadout,
        ReadoutInputMissing,
        ReadoutLeak,
        ReadoutMode,
        VoteSource,
        fit_learned_readout,
        memory_vote_source,
        probability_features,
    )
    from allure.evaluator._readout_step import PassReadout, ReadoutRead
    from allure.evaluator._readout_stored import spec_readout, stored_readout
    from allure.evaluator._redact import REDACTED, redact
    from allure.evaluator._replay import ReplayBackend
    from allure.evaluator._runner import Evaluator
    from allure.evaluator._swap import (
        FALLBACK_NOTE,
        SWAPPED,
        debias_verdicts,
        replay_items,
        swapped_item,
        swapped_order,
        swaps_positions,
    )
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
    "ChatCallError": "allure._http",
    "ChatCompletionsClient": "allure._http",
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
    "CF_PREFIX": "_content_free",
    "NO_PROBS": "_calibrate",
    "CalibrationOutcome": "_calibrate",
    "CalibrationTarget": "_calibrate",
    "calibrate_pass": "_calibrate",
    "FittedCalibration": "_calibrate",
    "apply_fitted": "_calibrate",
    "block_name": "_content_free",
    "content_free_item": "_content_free",
    "REVERSED": "_polarity",
    "PolarityVariant": "_polarity",
    "polarity_variant": "_polarity",
    "RECORDED": "_pipeline",
    "DebiasSummary": "_pipeline",
    "PassOutcome": "_pipeline",
    "PassPlan": "_pipeline",
    "PassStats": "_pipeline",
    "Readout": "_pipeline",
    "ReadoutOutcome": "_pipeline",
    "extra_calls": "_plan_spec",
    "plan_from_spec": "_plan_spec",
    "readout_reads": "_plan_spec",
    "reference_shares": "_plan_spec",
    "run_pass": "_pipeline",
    "FALLBACK_NOTE": "_swap",
    "SWAPPED": "_swap",
    "debias_verdicts": "_swap",
    "swapped_item": "_swap",
    "swapped_order": "_swap",
    "replay_items": "_swap",
    "swaps_positions": "_swap",
    "Evaluator": "_runner",
    "LearnedReadout": "_readout",
    "PassReadout": "_readout_step",
    "ReadoutRead": "_readout_step",
    "ReadoutInputMissing": "_readout",
    "ReadoutLeak": "_readout",
    "ReadoutMode": "_readout",
    "VoteSource": "_readout",
    "fit_learned_readout": "_readout",
    "spec_readout": "_readout_stored",
    "stored_readout": "_readout_stored",
    "memory_vote_source": "_readout",
    "CurveDraw": "_learning_curve",
    "readout_curve": "_learning_curve",
    "judge_verdicts": "_learning_curve",
    "review_order": "_learning_curve",
    "probability_features": "_readout",
}

__all__ = [
    "BackendKind",
    "backend_kind",
    "register_backend",
    "RetryKind",
    "AnswerKey",
    "DebiasSummary",
    "FittedCalibration",
    "PassOutcome",
    "PassPlan",
    "PassStats",
    "RECORDED",
    "REVERSED",
    "PolarityVariant",
    "polarity_variant",
    "Readout",
    "ReadoutOutcome",
    "apply_fitted",
    "block_name",
    "content_free_item",
    "extra_calls",
    "plan_from_spec",
    "readout_reads",
    "reference_shares",
    "run_pass",
    "CF_PREFIX",
    "CalibrationOutcome",
    "CalibrationTarget",
    "ChatBackend",
    "ChatCallError",
    "ChatCompletionsClient",
    "EvalPlan",
    "EvalResult",
    "EvalStats",
    "Evaluator",
    "EvaluatorOptions",
    "ExamplesFor",
    "FALLBACK_NOTE",
    "LabelParser",
    "LangChainBackend",
    "NO_PROBS",
    "OpenAIBackend",
    "PassOptions",
    "ProgressFn",
    "REDACTED",
    "ReplayBackend",
    "Reply",
    "CallSettings",
    "SWAPPED",
    "TokenCounter",
    "Usage",
    "build_openai_backend",
    "calibrate_pass",
    "debias_verdicts",
    "open_evaluator",
    "warm_http_client",
    "prob_positive",
    "redact",
    "retry_kind",
    "swapped_item",
    "swapped_order",
    "replay_items",
    "swaps_positions",
    "LearnedReadout",
    "CurveDraw",
    "readout_curve",
    "judge_verdicts",
    "review_order",
    "PassReadout",
    "ReadoutRead",
    "ReadoutInputMissing",
    "ReadoutLeak",
    "ReadoutMode",
    "VoteSource",
    "fit_learned_readout",
    "spec_readout",
    "stored_readout",
    "memory_vote_source",
    "probability_features",
]


__getattr__ = lazy_exports(__name__, _WHERE)
