"""The evaluator's settings (:class:`EvaluatorOptions`, :class:`PassOptions`) and what a pass returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from allure.evaluator._backend import RetryKind, retry_kind
from allure.labels import Label
from allure.models import IclExample, Item, Verdict
from allure.prompts import PromptSet

if TYPE_CHECKING:
    from allure.evaluator._parse import ReplyReader
    from allure.evaluator._tokens import TokenCounter
    from allure.labels import LabelParser
    from allure.store import RunStore

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) as items are labelled; a callable with a true ``with_errors``
attribute is called with (done, total, errors so far) instead."""

ExamplesFor = Callable[[Item], list[IclExample]]
"""The ICL examples (stable order) that go into an item's prompt."""

AnswerKey = Callable[[Item], Any]
"""What an item's answer depends on besides its prompt (replay: the item's recorded output)."""


def report_progress(progress: Any, done: int, total: int, errors: int = 0) -> None:
    """Call ``progress`` with (done, total), adding the errors so far when it asks for them."""
    if progress is None:
        return
    if getattr(progress, "with_errors", False):
        progress(done, total, errors)
    else:
        progress(done, total)


@dataclass(frozen=True)
class EvaluatorOptions:
    """How an :class:`~allure.evaluator.Evaluator` labels items: what it asks, how it reads the
    answers, how hard it tries. A value: :func:`~allure.evaluator.open_evaluator` builds it from
    the audit spec; tests build it directly."""

    model_name: str
    """Name recorded with every verdict (part of the cache key)."""
    params: Mapping[str, Any]
    """The model's parameters (part of the cache key, stored with every call)."""
    prompts: PromptSet
    label_set: Sequence[Label]
    label_pattern: str
    """The regex whose last match in an answer is its label."""
    synonyms: Mapping[str, Sequence[str]] | None = None
    positive_label: Label | None = None
    """``None``: the last label of the set."""
    concurrency: int = 4
    """Calls in flight at most."""
    timeout_s: float = 120.0
    max_retries: int = 3
    """Retries of a transient failure (a 5xx, a timeout, a dead server)."""
    retry_backoff_s: float = 0.5
    """The first pause before a retry (doubled for each next one)."""
    retry_unparsed: int = 1
    """How often an answer with no label is asked again."""
    recorded_labels: Mapping[str, Label] | None = None
    """Replay: item id -> the recorded label, used as is (the recorded output is only shown)."""
    answer_key: AnswerKey | None = None
    """Part of the cache key besides the prompt, model and parameters (replay: the recorded output)."""
    secrets: Sequence[str] = ()
    """Values removed from stored error texts (the API key), besides anything shaped like a key."""
    max_prompt_tokens: int | None = None
    """The context budget per prompt (``None``: unlimited)."""
    temperature: float | None = None
    """Generation settings sent with every call (``None``: the backend's own)."""
    max_tokens: int | None = None
    logprobs: bool | None = None
    seed: int | None = None
    """The seed sent (a repeated sample adds its index); ``None``: the backend's, or ``params["seed"]``."""
    retry: Callable[[BaseException], RetryKind | None] = retry_kind
    """The backend kind's retry rule: how a failed call is retried (``None``: recorded, not retried)."""


@dataclass(frozen=True)
class PassOptions:
    """What one pass changes from the evaluator's own settings; a value, so passes (a study's arms)
    never share state through the evaluator. ``None`` fields keep the evaluator's setting (for the
    sample and generation: none)."""

    prompts: PromptSet | None = None
    """The prompt set of this pass."""
    sample: int | None = None
    """Index of a repeated sample (``None``: a single answer per prompt). It is part of the cache
    key, and the seed sent is the evaluator's seed plus it, so M samples of one prompt are M
    stored calls."""
    generation: str | None = None
    """A generation of fresh calls (``None``: the stored calls). It is part of the cache key, so a
    re-audit asking a provider again stores its answers beside the old ones, never over them."""


@dataclass
class EvalStats:
    """What one evaluation pass cost."""

    items: int = 0
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    unparsed: int = 0
    retries: int = 0
    server_restarts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    icl_total: int = 0
    icl_dropped: int = 0
    wall_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return dict(self.__dict__)

    def add(self, other: EvalStats) -> None:
        """Add ``other``'s counts and time to these (a pairwise pass's two orders are one pass)."""
        for name, value in other.__dict__.items():
            setattr(self, name, getattr(self, name) + value)


@dataclass
class EvalResult:
    """Verdicts by item id, and the pass's cost."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    stats: EvalStats = field(default_factory=EvalStats)
    call_ids: dict[str, int] = field(default_factory=dict)
    """Prompt hash -> id of the call stored for it in this pass."""
    dropped: dict[str, int] = field(default_factory=dict)
    """Item id -> ICL examples the context budget dropped from its prompt (items with drops only)."""


@dataclass
class EvalPlan:
    """What a pass would cost, before it runs."""

    items: int
    """Items to label."""
    uncached: int
    """Prompts not in the run store (calls the pass would send)."""
    cached_latency_s: float | None
    """Mean latency of the stored calls among the pass's prompts (``None`` when none is stored)."""


class EvaluatorView(Protocol):
    """What the runner's parts (``_prompting``, ``_pool``, ``_provenance``) read of an
    :class:`~allure.evaluator.Evaluator`; it has all of these."""

    options: EvaluatorOptions
    store: RunStore
    model_name: str
    params: dict[str, Any]
    label_set: list[Label]
    parser: LabelParser
    reader: ReplyReader
    positive_label: Label
    negative_label: Label | None
    recorded_labels: dict[str, Label]
    answer_key: AnswerKey | None
    secrets: list[str]
    concurrency: int
    timeout_s: float
    max_retries: int
    retry_backoff_s: float
    retry_unparsed: int
    flush_interval_s: float
    max_prompt_tokens: int | None
    token_counter: TokenCounter | None

    def resolved(self, options: PassOptions | None) -> tuple[PromptSet, int | None, str | None]:
        """The pass's prompt set, sample index and generation."""
        ...
