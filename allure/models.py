"""Records that cross layers or reach disk.

Graph state never holds these objects: it holds ids and summaries; the records
live in the run store (``allure.store``) and the memory (``allure.memory``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel, Field

from allure.labels import Label

FailureMode = Literal[
    "partial_correctness",
    "keywords",
    "lengthy_argument",
    "gibberish",
    "parroting",
    "other",
]
"""ALLURE's five failure modes of an evaluator (seed 003, Section 4.1), plus ``other``.

- ``partial_correctness``: the response holds part of the expected answer but is incomplete or wrong.
- ``keywords``: the response uses keywords of the task, and that alone swayed the evaluator.
- ``lengthy_argument``: a long, tangential response that may not answer explicitly.
- ``gibberish``: unintelligible to a human auditor.
- ``parroting``: repeats the task or prompt without a novel continuation.
- ``other``: none of the rules fired.
"""

FAILURE_MODES: tuple[FailureMode, ...] = get_args(FailureMode)
"""The failure modes in :data:`FailureMode`'s order."""

VerdictStatus = Literal["ok", "unparsed", "error", "inconsistent"]
"""``ok``: a label was parsed; ``unparsed``: the output held no label (never coerced);
``error``: the call failed after all retries (the error is recorded); ``inconsistent``: a
position-debiased pairwise verdict whose two orders disagree (no label; never a stored call)."""

ReviewDecisionKind = Literal["approve", "reject"]
"""What an auditor decided about a candidate ICL example. Editing the label or the
failure mode is an ``approve`` with ``label``/``failure_mode`` set."""

Split = Literal["audit", "heldout"]
"""``audit``: ICL examples are mined from it; ``heldout``: never enters memory, measures gain."""


def utcnow() -> str:
    """The current UTC time as an ISO-8601 string (seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def stable_hash(*parts: Any, length: int = 16) -> str:
    """A short, stable sha256 hex digest of JSON-serialised ``parts``."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


ITEM_TEXT = ("task", "response", "response_b", "rubric", "gold_answers")
"""The :class:`Item` fields a prompt can show: the task, the response(s), the rubric, the accepted answers."""

ITEM_CONTENT = (*ITEM_TEXT, "problem_type", "group", "generator")
"""What an :class:`Item` holds besides its id, labels and metadata: what an example copies from its
item, and what a judge's input may give."""


class Item(BaseModel):
    """One generator response to be labelled by the evaluator."""

    id: str
    """Unique id of the item within its dataset."""
    task: str
    """The task (question) the generator answered."""
    response: str
    """The generator's response, untrusted text."""
    gold_answers: list[str] = Field(default_factory=list)
    """Accepted correct answers; the gold check matches the response against them."""
    response_b: str | None = None
    """The second response of a pairwise item (``response`` is the first); ``None`` otherwise."""
    rubric: str = ""
    """The item's own rubric text (rubric prompt sets; empty: the spec's rubric)."""
    gold_label: Label | None = None
    """A reference label given directly by the dataset; when set, it wins over the regex check."""
    recorded_label: Label | None = None
    """A label recorded for this item by an earlier evaluator (replay mode uses it)."""
    recorded_output: str | None = None
    """The raw output recorded with ``recorded_label``, if any (replay parses it only when no label is
    recorded)."""
    recorded_label_swapped: Label | None = None
    """Pairwise: the label recorded with the two responses swapped, in the original order's terms
    (the label naming ``response`` means ``response``), whatever order the file wrote it in."""
    problem_type: str = ""
    """The kind of task (CogEval: ``task``, e.g. ``1stepPath``); used for stratification."""
    group: str = ""
    """A grouping of items sharing context (CogEval: ``graph/domain``)."""
    generator: str = ""
    """The model that wrote the response."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else from the source row."""


class Verdict(BaseModel):
    """The evaluator's label for one item under one prompt; one row per evaluator call."""

    item_id: str
    """The item labelled."""
    label: Label | None
    """Parsed label; ``None`` when ``status`` is ``unparsed`` or ``error``."""
    status: VerdictStatus = "ok"
    """Outcome of the call."""
    raw_output: str = ""
    """The evaluator's text exactly as returned."""
    prob_positive: float | None = None
    """P(label == positive) from logprobs, when the server returns them."""
    label_probs: dict[str, float] | None = None
    """Each label's probability (by its string form, normalised over the label set) at the label's
    position in the output, from the logprobs the server returned; ``None`` without them."""
    raw_label: Label | None = None
    """The label parsed from the output when a post-processing (``[evaluator] calibration``) set
    ``label`` to another; ``None`` when ``label`` is the parsed one."""
    error: str | None = None
    """What failed, when ``status`` is ``error``."""
    prompt_hash: str = ""
    """Hash of the rendered messages plus model and parameters (the cache key)."""
    model: str = ""
    """The evaluator model name."""
    icl_ids: list[str] = Field(default_factory=list)
    """Ids of the memory examples in the prompt, in prompt order."""
    latency_s: float = 0.0
    """Wall time of the call (0 for a cache hit)."""
    prompt_tokens: int = 0
    """Prompt tokens reported by the server."""
    completion_tokens: int = 0
    """Completion tokens reported by the server."""
    cached_tokens: int = 0
    """Prompt tokens the server served from its prompt cache."""
    cache_hit: bool = False
    """True when the verdict came from the run store instead of a new call."""

    def positive_score(self, labels: Sequence[Label], positive: Label | None) -> float | None:
        """P(``positive``) for an AUC: ``prob_positive``, else, in a two-label set, the positive
        label's share of the two ``label_probs`` (``prob_positive`` reads one token, so a label
        written in several, such as ``not_entailment``, has only ``label_probs``); ``None`` without
        either."""
        if self.prob_positive is not None:
            return self.prob_positive
        if positive is None or not self.label_probs or len(labels) != 2 or positive not in labels:
            return None
        negative = labels[1 - list(labels).index(positive)]
        p, q = self.label_probs.get(str(positive)), self.label_probs.get(str(negative))
        if p is None or q is None or p + q <= 0:
            return None
        return p / (p + q)


Verdicts: TypeAlias = Mapping[str, Verdict]
"""Item id -> its verdict: one order of a pass (the main order, the swapped one, the reversed question)."""

ExtraOrder: TypeAlias = Mapping[str, Verdict] | None
"""A pass's swapped order or reversed question, in :data:`Verdicts`; ``None`` where the pass did not run it."""


class IclExample(BaseModel):
    """A candidate or approved in-context-learning example (ALLURE Fig. 2).

    The user turn repeats the response together with the expected correct answer;
    the assistant turn assigns the correct label.
    """

    id: str
    """Stable id: the same item and correct label always give the same id (idempotent commits)."""
    item_id: str
    """The item it was mined from."""
    run_id: str = ""
    """The run that proposed it."""
    task: str = ""
    """The item's task."""
    response: str
    """The generator's response."""
    response_b: str | None = None
    """The second response of a pairwise item."""
    rubric: str = ""
    """The item's own rubric text, if any."""
    gold_answers: list[str] = Field(default_factory=list)
    """The correct answer(s)."""
    correct_label: Label
    """The label the assistant turn assigns (the reference label, or the reviewer's edit)."""
    wrong_label: Label | None = None
    """The evaluator's label that was wrong (``None`` if it did not parse)."""
    evaluator_output: str = ""
    """The evaluator's raw output that was wrong."""
    problem_type: str = ""
    """The item's problem type."""
    group: str = ""
    """The item's group."""
    generator: str = ""
    """The item's generator."""
    failure_mode: FailureMode = "other"
    """Which failure mode this example corrects."""
    source: Literal["mistake", "success"] = "mistake"
    """``mistake``: a corrected wrong verdict (ALLURE's examples); ``success``: one of the judge's
    correct verdicts kept beside them, so a block need not be a biased sample of errors alone."""
    failure_reason: str = ""
    """Why the rules (or the reviewer) chose ``failure_mode``."""
    decision: ReviewDecisionKind | None = None
    """``None`` while pending."""
    reviewer: str = ""
    """Who decided."""
    comment: str = ""
    """The reviewer's comment."""
    decided_at: str = ""
    """When it was decided (ISO-8601 UTC)."""

    @staticmethod
    def make_id(item_id: str, correct_label: Label) -> str:
        """The stable id of the example for ``item_id`` with ``correct_label``."""
        return "icl-" + stable_hash(item_id, correct_label, length=20)


class ReviewDecision(BaseModel):
    """An auditor's decision about one candidate, as stored and as read from a decisions JSONL file."""

    candidate_id: str
    """The :attr:`IclExample.id` decided."""
    decision: ReviewDecisionKind
    """Approve or reject."""
    label: Label | None = None
    """A corrected label (approve only); ``None`` keeps the proposed label."""
    failure_mode: FailureMode | None = None
    """A corrected failure mode; ``None`` keeps the proposed one."""
    comment: str = ""
    """Free text."""
    reviewer: str = ""
    """Who decided."""
    decided_at: str = Field(default_factory=utcnow)
    """When (ISO-8601 UTC)."""
