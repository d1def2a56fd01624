"""Retrieval policies: which memory examples go into an item's prompt.

Every policy returns its examples in a *stable* order, (problem type, id), never
by similarity, so items that share an ICL block render an identical prompt prefix
and a server's prefix cache can re-use it.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from allure.errors import MemoryStoreError
from allure.labels import Label
from allure.models import FAILURE_MODES, FailureMode, IclExample, Item

RetrievalKind = Literal["all", "same_problem_type", "same_group", "top_k", "sample", "label_prior", "nearest"]
"""How examples are chosen for an item.

- ``all``: every example in memory.
- ``same_problem_type``: examples whose problem type equals the item's.
- ``same_group``: examples whose group equals the item's (CogEval: the same cognitive map; the paper's choice).
- ``top_k``: the ``k`` examples whose responses are most similar to the item's response.
- ``sample``: at most ``x`` examples sampled uniformly with ``seed`` (ICL_x); the same sample for every item.
- ``label_prior``: ``x`` examples whose correct labels follow ``prior`` (the audit split's reference
  shares: ``round(x * share)`` per label, at least one per label the memory has), seeded; the same
  block for every item. A 50/50 block pulls a judge towards the minority label on imbalanced data.
- ``nearest``: per group of items (``group_by``: problem type, or all items in one group), the ``k``
  examples nearest (cosine of all-MiniLM-L6-v2 embeddings of task + response) to the group's mean,
  one block per group so a server's prefix cache computes it once; an item whose best similarity to
  the block is below ``min_similarity`` gets no example.
"""

Balance = Literal["label"]
"""How a ``sample`` draw is balanced: ``label`` draws equal shares per correct label."""


class RetrievalPolicy(BaseModel):
    """A retrieval policy; the failure-mode filters apply before the policy chooses."""

    kind: RetrievalKind = "same_group"
    """How to choose; see :data:`RetrievalKind`."""
    k: int = 8
    """Number of neighbours for ``top_k``."""
    x: int | None = None
    """Sample size for ``sample`` (required there)."""
    seed: int = 0
    """Random seed for ``sample``."""
    include_modes: list[FailureMode] | None = None
    """Keep only examples of these failure modes (``None``: all modes)."""
    exclude_modes: list[FailureMode] = []
    """Drop examples of these failure modes (cluster ablation)."""
    exclude_ids: list[str] = []
    """Drop these examples (ablation of an embedding cluster)."""
    balance: Balance | None = None
    """``sample`` only: ``label`` draws ``x // L`` examples per correct label (``L`` labels present; the
    remainder goes to the labels in ascending order; a label with too few examples gives all it has and
    the others fill up); ``None`` draws uniformly."""
    max_examples: int | None = None
    """Cap on the number returned (the first ones in the stable order)."""
    prior: dict[str, float] | None = None
    """``label_prior``: label (as written, ``str``) -> share; ``None``: the loop fills in the audit
    split's reference shares (a study, its audit run's)."""
    min_similarity: float = Field(default=0.0, ge=-1.0, le=1.0, allow_inf_nan=False)
    """``nearest``: an item whose best cosine similarity to its group's block is below this gets no example."""
    group_by: Literal["problem_type", "none"] = "problem_type"
    """``nearest``: the groups that share one block (``none``: one block for every item)."""
    sources: list[Literal["mistake", "success"]] | None = None
    """Keep only examples mined from the judge's mistakes, or from its correct verdicts (``None``: both)."""

    @field_validator("include_modes", "exclude_modes", mode="before")
    @classmethod
    def _known_modes(cls, value: Any, info: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            return value  # not a list: pydantic's type check says so
        unknown = [m for m in value if not isinstance(m, str) or m not in FAILURE_MODES]
        if unknown:
            raise MemoryStoreError(
                f"unknown failure mode(s) {', '.join(map(repr, unknown))}",
                where=f"retrieval policy, field '{info.field_name}'",
                fix=f"use names from: {', '.join(FAILURE_MODES)}",
            )
        return value

    @model_validator(mode="after")
    def _check_sizes(self) -> RetrievalPolicy:
        if self.kind in ("sample", "label_prior") and self.x is None:
            raise MemoryStoreError(
                f"the {self.kind!r} policy needs a sample size",
                where="retrieval policy, field 'x'",
                fix="set x, e.g. x = 30",
            )
        for name in ("k", "x", "max_examples"):
            val = getattr(self, name)
            if val is not None and val < 0:
                raise MemoryStoreError(
                    f"{name} must be >= 0, got {val}",
                    where=f"retrieval policy, field '{name}'",
                    fix="use 0 or more",
                )
        return self

    def allowed_modes(self) -> set[FailureMode]:
        """The failure modes the filters let through."""
        base = set(self.include_modes) if self.include_modes is not None else set(FAILURE_MODES)
        return base - set(self.exclude_modes)

    def chroma_where(self) -> dict[str, Any] | None:
        """The Chroma ``where`` filter for the failure-mode filters (``None``: no filter)."""
        if self.include_modes is None and not self.exclude_modes:
            return None
        return {"failure_mode": {"$in": sorted(self.allowed_modes())}}


def stable_order(examples: list[IclExample]) -> list[IclExample]:
    """Examples sorted by (problem type, id): the order of every ICL block."""
    return sorted(examples, key=lambda ex: (ex.problem_type, ex.id))


def select_examples(examples: list[IclExample], item: Item, policy: RetrievalPolicy) -> list[IclExample]:
    """Apply a non-similarity policy to a snapshot of the memory.

    Args:
        examples: The memory's examples, sorted by id.
        item: The item the prompt is for.
        policy: Any policy except ``top_k`` (which needs the vector index).

    Returns:
        The chosen examples in stable order.
    """
    if policy.kind in ("top_k", "nearest"):
        raise ValueError(f"{policy.kind} needs the embeddings; use EpisodicMemory.retrieve")
    pool = allowed_pool(examples, policy)
    if policy.kind == "same_problem_type":
        pool = [ex for ex in pool if ex.problem_type == item.problem_type]
    elif policy.kind == "same_group":
        pool = [ex for ex in pool if ex.group == item.group]
    elif policy.kind == "label_prior":
        ordered = sorted(pool, key=lambda ex: ex.id)
        pool = prior_sample(ordered, policy.x or 0, policy.prior, random.Random(policy.seed))
    elif policy.kind == "sample":
        size = policy.x or 0
        if size < len(pool):
            ordered = sorted(pool, key=lambda ex: ex.id)
            rng = random.Random(policy.seed)
            pool = (
                rng.sample(ordered, size) if policy.balance is None else balanced_sample(ordered, size, rng)
            )
    return cap(stable_order(pool), policy)


def allowed_pool(examples: list[IclExample], policy: RetrievalPolicy) -> list[IclExample]:
    """The examples the policy's filters let through (failure modes, excluded ids, sources)."""
    allowed = policy.allowed_modes()
    excluded = set(policy.exclude_ids)
    sources = set(policy.sources) if policy.sources is not None else None
    return [
        ex
        for ex in examples
        if ex.failure_mode in allowed and ex.id not in excluded and (sources is None or ex.source in sources)
    ]


def prior_quotas(size: int, prior: dict[str, float] | None, available: dict[str, int]) -> dict[str, int]:
    """Examples per label (``str``) for a block of ``size`` whose label shares follow ``prior``.

    ``round(size * share)`` per label (largest remainders first, so the quotas sum to ``size``), at
    least one for every label the memory has; a label with too few examples gives all it has and
    the shortfall goes to the others, most probable first. Without a prior: equal shares.
    """
    labels = sorted(available, key=lambda k: (-(prior or {}).get(k, 0.0), k))
    if not labels or size <= 0:
        return {lab: 0 for lab in labels}
    weights = {lab: (prior or {}).get(lab, 0.0) if prior else 1.0 / len(labels) for lab in labels}
    total = sum(weights.values()) or 1.0
    raw = {lab: size * weights[lab] / total for lab in labels}
    quota = {lab: int(raw[lab]) for lab in labels}
    for lab in sorted(labels, key=lambda k: raw[k] - int(raw[k]), reverse=True)[: size - sum(quota.values())]:
        quota[lab] += 1
    if size >= len(labels):
        for lab in labels:  # at least one per label, taken from the largest quota
            if quota[lab] == 0:
                donor = max(labels, key=lambda k: quota[k])
                quota[donor] -= 1
                quota[lab] = 1
    short = 0
    for lab in labels:
        if quota[lab] > available[lab]:
            short += quota[lab] - available[lab]
            quota[lab] = available[lab]
    for lab in labels:
        extra = min(short, available[lab] - quota[lab])
        quota[lab] += extra
        short -= extra
    return quota


def prior_sample(
    pool: list[IclExample], size: int, prior: dict[str, float] | None, rng: random.Random
) -> list[IclExample]:
    """``size`` examples of ``pool`` with label shares following ``prior`` (see :func:`prior_quotas`)."""
    by_label: dict[str, list[IclExample]] = {}
    for ex in pool:
        by_label.setdefault(str(ex.correct_label), []).append(ex)
    quota = prior_quotas(size, prior, {k: len(v) for k, v in by_label.items()})
    out: list[IclExample] = []
    for lab in sorted(by_label):
        out.extend(rng.sample(by_label[lab], quota[lab]))
    return out


def balanced_sample(pool: list[IclExample], size: int, rng: random.Random) -> list[IclExample]:
    """``size`` examples of ``pool`` with equal shares per correct label (see :attr:`RetrievalPolicy.balance`)."""
    by_label: dict[Label, list[IclExample]] = {}
    for ex in pool:
        by_label.setdefault(ex.correct_label, []).append(ex)
    labels = sorted(by_label, key=str)
    quota = {lab: size // len(labels) + (i < size % len(labels)) for i, lab in enumerate(labels)}
    # Labels with too few examples give all they have; the shortfall goes to the others, in label order.
    short = 0
    for lab in labels:
        if quota[lab] > len(by_label[lab]):
            short += quota[lab] - len(by_label[lab])
            quota[lab] = len(by_label[lab])
    for lab in labels:
        extra = min(short, len(by_label[lab]) - quota[lab])
        quota[lab] += extra
        short -= extra
    out: list[IclExample] = []
    for lab in labels:
        out.extend(rng.sample(by_label[lab], quota[lab]))
    return out


def cap(examples: list[IclExample], policy: RetrievalPolicy) -> list[IclExample]:
    """Truncate to ``policy.max_examples`` (order kept)."""
    if policy.max_examples is None:
        return examples
    return examples[: policy.max_examples]
