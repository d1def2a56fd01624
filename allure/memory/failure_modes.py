"""Failure modes of ICL candidates by transparent rules (ALLURE Section 4.1).

Every candidate gets one :data:`~allure.models.FailureMode` from measurable features of
its response, its task and its gold answer(s), with the reason in words. The rules are
checked in this priority order; the first that fires wins:

1. ``gibberish``: the response is unintelligible: many symbols (``symbol_density``) or
   many chunks that are mostly symbols (``nonword_share``).
2. ``parroting``: most of the response's word trigrams occur in the task text
   (``task_trigram_overlap`` >= ``parrot_min_overlap``), or the response invents chat
   turns (``user:``/``assistant:`` lines) and repeats the task at a lower overlap.
   Then, still ``gibberish``: a long response that is highly repetitive (zlib
   ``compression_ratio`` low, or few distinct tokens): a degenerate loop.
3. ``keywords``: the answer holds every gold token but adds words that come from the
   task (``Room 1, Room 3`` for ``1, 3``; ``Lily field`` for ``lily``).
4. ``partial_correctness``: the answer holds at least ``partial_min_recall`` of the gold
   tokens but is not the gold answer (missing parts, extra parts or wrong order).
5. ``lengthy_argument``: the response is long (``response_tokens``) or has many sentences.
6. ``other``: no rule fired.

The *answer* is the extracted final answer when given (the gold check's ``extract``);
otherwise the whole response when it is short (at most ``max_answer_tokens`` tokens), else
there is no answer and the answer-based rules (3, 4) cannot fire. Tokens are lower-case
runs of letters or digits; ``answer`` is ignored.
"""

from __future__ import annotations

import re
import zlib

from pydantic import BaseModel, ConfigDict

from allure.models import FailureMode

_TOKEN = re.compile(r"[a-z]+|[0-9]+")
_SYMBOL = re.compile(r"[^\w\s,.;:!?'()\-]")
_NEUTRAL_CHUNK = re.compile(r"^(?:->|=>|→|-|–|—|\||:|#+)$")
_ROLE_MARKER = re.compile(r"(?im)^\s*(?:user|assistant|human|system)\s*:")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n|\\n|(?:^|\s)n(?=\s)")
_IGNORED = frozenset({"answer"})


class FailureModeConfig(BaseModel):
    """Thresholds of the failure-mode rules (defaults calibrated on CogEval disagreements)."""

    model_config = ConfigDict(extra="forbid")

    gibberish_symbol_density: float = 0.15
    """Gibberish when this share of non-space characters (or more) are symbols (not letters,
    digits or ``,.;:!?'()-``)."""
    gibberish_nonword_share: float = 0.3
    """Gibberish when this share of whitespace-separated chunks (or more) are mostly symbols."""
    gibberish_compression_ratio: float = 0.12
    """Gibberish when zlib-compressed size / raw size is at most this (heavy repetition)."""
    gibberish_distinct_ratio: float = 0.08
    """Gibberish when distinct tokens / tokens is at most this (in a response of ``min_tokens_for_ratios``+)."""
    min_tokens_for_ratios: int = 40
    """The repetition rules (compression, distinct ratio) apply only to responses with this many tokens."""
    parrot_min_overlap: float = 0.6
    """Parroting when at least this share of the response's word trigrams occur in the task."""
    parrot_min_overlap_with_roles: float = 0.15
    """Parroting at this lower overlap when the response invents chat turns (``user:`` ...)."""
    parrot_min_tokens: int = 12
    """Responses shorter than this many tokens are never parroting."""
    keywords_min_task_share: float = 0.5
    """Keywords when at least this share of the answer's extra words occur in the task."""
    partial_min_recall: float = 0.5
    """Partial correctness needs at least this share of the gold tokens in the answer."""
    max_answer_tokens: int = 25
    """With no extracted answer, a response of at most this many tokens is its own answer."""
    lengthy_min_tokens: int = 80
    """Lengthy argument when the response has at least this many tokens ..."""
    lengthy_min_sentences: int = 5
    """... or at least this many sentences."""


class FailureAssignment(BaseModel):
    """The failure mode assigned to a candidate, why, and the features the rules read."""

    mode: FailureMode
    """The assigned failure mode."""
    reason: str
    """The rule that fired, with the feature values it compared, in words."""
    features: dict[str, float]
    """Every measured feature (see :func:`measure_features`), by name."""


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _IGNORED]


def _trigrams(tokens: list[str]) -> set[tuple[str, str, str]]:
    return set(zip(tokens, tokens[1:], tokens[2:], strict=False))


def _answer_text(response: str, extracted: str | None, max_tokens: int) -> str | None:
    if extracted is not None:
        return extracted
    return response if len(_tokens(response)) <= max_tokens else None


def _nonword_share(chunks: list[str]) -> float:
    counted = [c for c in chunks if not _NEUTRAL_CHUNK.match(c)]
    if not counted:
        return 0.0
    return sum(sum(ch.isalnum() for ch in c) * 2 < len(c) for c in counted) / len(counted)


def measure_features(
    *, response: str, task: str, gold_answers: list[str], extracted: str | None, config: FailureModeConfig
) -> dict[str, float]:
    """Measure the features the rules read.

    Returns:
        ``response_tokens``; ``sentences``; ``symbol_density`` (share of non-space
        characters outside letters, digits and ``,.;:!?'()-``); ``nonword_share`` (share of
        whitespace-separated chunks, arrows and table bars aside, that are mostly not letters
        or digits); ``compression_ratio`` (zlib size / raw size); ``distinct_ratio``
        (distinct tokens / tokens); ``task_trigram_overlap`` (share of the response's word
        trigrams found in the task); ``role_markers`` (lines opening with ``user:``,
        ``assistant:``...: an invented continuation of the chat); ``has_answer`` (0/1);
        ``answer_tokens``; ``gold_recall`` and ``answer_precision`` against the gold
        answer with the best recall; ``exact`` (0/1: answer tokens equal gold tokens);
        ``extra_tokens`` (answer tokens not in the gold) and ``extra_task_share`` (share
        of those that occur in the task).
    """
    tokens = _tokens(response)
    stripped = "".join(response.split())
    raw = response.encode("utf-8")
    task_tokens = _tokens(task)
    response_grams = _trigrams(tokens)
    features: dict[str, float] = {
        "response_tokens": float(len(tokens)),
        "sentences": float(len([s for s in _SENTENCE_END.split(response) if _tokens(s)])),
        "symbol_density": len(_SYMBOL.findall(stripped)) / len(stripped) if stripped else 0.0,
        "nonword_share": _nonword_share(response.split()),
        "compression_ratio": len(zlib.compress(raw, 6)) / len(raw) if raw else 1.0,
        "distinct_ratio": len(set(tokens)) / len(tokens) if tokens else 1.0,
        "task_trigram_overlap": (
            len(response_grams & _trigrams(task_tokens)) / len(response_grams) if response_grams else 0.0
        ),
        "role_markers": float(len(_ROLE_MARKER.findall(response))),
    }
    answer = _answer_text(response, extracted, config.max_answer_tokens)
    answer_tokens = _tokens(answer) if answer is not None else []
    features["has_answer"] = float(answer is not None)
    features["answer_tokens"] = float(len(answer_tokens))
    best = (0.0, 0.0, 0.0, 0.0, 0.0)  # recall, precision, exact, extra, extra_task_share
    task_vocab = set(task_tokens)
    for gold in gold_answers:
        gold_tokens = _tokens(gold)
        if not gold_tokens or not answer_tokens:
            continue
        gold_set = set(gold_tokens)
        recall = len(gold_set & set(answer_tokens)) / len(gold_set)
        precision = sum(t in gold_set for t in answer_tokens) / len(answer_tokens)
        extra = [t for t in answer_tokens if t not in gold_set]
        extra_task = sum(t in task_vocab for t in extra) / len(extra) if extra else 0.0
        candidate = (recall, precision, float(answer_tokens == gold_tokens), float(len(extra)), extra_task)
        if candidate[:3] > best[:3]:
            best = candidate
    names = ("gold_recall", "answer_precision", "exact", "extra_tokens", "extra_task_share")
    features.update(zip(names, best, strict=True))
    return features


def _rule(f: dict[str, float], cfg: FailureModeConfig) -> tuple[FailureMode, str]:
    """The first rule that fires, in the documented priority order."""
    repetitive = f["response_tokens"] >= cfg.min_tokens_for_ratios and (
        f["compression_ratio"] <= cfg.gibberish_compression_ratio
        or f["distinct_ratio"] <= cfg.gibberish_distinct_ratio
    )
    if f["symbol_density"] >= cfg.gibberish_symbol_density:
        return "gibberish", f"symbol density {f['symbol_density']:.2f} >= {cfg.gibberish_symbol_density}"
    if f["nonword_share"] >= cfg.gibberish_nonword_share:
        return "gibberish", f"non-word share {f['nonword_share']:.2f} >= {cfg.gibberish_nonword_share}"
    if f["response_tokens"] >= cfg.parrot_min_tokens:
        overlap = f["task_trigram_overlap"]
        if overlap >= cfg.parrot_min_overlap:
            return (
                "parroting",
                f"{overlap:.0%} of the response's trigrams repeat the task (>= {cfg.parrot_min_overlap:.0%})",
            )
        if f["role_markers"] >= 1 and overlap >= cfg.parrot_min_overlap_with_roles:
            return "parroting", (
                f"the response invents {int(f['role_markers'])} chat turn(s) and {overlap:.0%} of its trigrams "
                f"repeat the task (>= {cfg.parrot_min_overlap_with_roles:.0%})"
            )
    if repetitive:
        return "gibberish", (
            f"repetitive: compression ratio {f['compression_ratio']:.2f}, distinct-token ratio "
            f"{f['distinct_ratio']:.2f} (<= {cfg.gibberish_compression_ratio} or <= {cfg.gibberish_distinct_ratio})"
        )
    if (
        f["has_answer"]
        and f["gold_recall"] == 1.0
        and f["extra_tokens"] > 0
        and f["extra_task_share"] >= cfg.keywords_min_task_share
    ):
        return "keywords", (
            f"the answer holds the whole gold answer plus {int(f['extra_tokens'])} extra word(s), "
            f"{f['extra_task_share']:.0%} of them from the task (>= {cfg.keywords_min_task_share:.0%})"
        )
    if f["has_answer"] and f["gold_recall"] >= cfg.partial_min_recall and not f["exact"]:
        return "partial_correctness", (
            f"the answer holds {f['gold_recall']:.0%} of the gold tokens (>= {cfg.partial_min_recall:.0%}) "
            f"but is not the gold answer (precision {f['answer_precision']:.0%})"
        )
    if f["response_tokens"] >= cfg.lengthy_min_tokens or f["sentences"] >= cfg.lengthy_min_sentences:
        return "lengthy_argument", (
            f"{int(f['response_tokens'])} tokens, {int(f['sentences'])} sentences "
            f"(>= {cfg.lengthy_min_tokens} tokens or >= {cfg.lengthy_min_sentences} sentences)"
        )
    return "other", "no rule fired"


def classify_failure(
    *,
    response: str,
    task: str,
    gold_answers: list[str],
    extracted: str | None = None,
    config: FailureModeConfig | None = None,
) -> FailureAssignment:
    """Assign a failure mode to a response that deceived (or could deceive) the evaluator.

    Args:
        response: The generator's response.
        task: The task text the generator saw (the whole prompt, when available: parroting
            is measured against it).
        gold_answers: The accepted correct answers.
        extracted: The final answer the gold check extracted, if any.
        config: Rule thresholds; defaults when ``None``.

    Returns:
        The mode of the first rule that fires (order in the module docstring), its reason
        and all measured features.
    """
    cfg = config or FailureModeConfig()
    features = measure_features(
        response=response, task=task, gold_answers=gold_answers, extracted=extracted, config=cfg
    )
    mode, reason = _rule(features, cfg)
    return FailureAssignment(mode=mode, reason=reason, features=features)
