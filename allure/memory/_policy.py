"""Retrieval policies: which memory examples go into an item's prompt.

Every policy returns its examples in a *stable* order, (problem type, id), never
by similarity, so items that share an ICL block render an identical prompt prefix
and a server's prefix cache can re-use it.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, field_validator, model_validator

from allure.errors import MemoryStoreError
from allure.labels import Label
from allure.models import FAILURE_MODES, FailureMode, IclExample, Item

RetrievalKind = Literal["all", "same_problem_type", "same_group", "top_k", "sample"]
"""How examples are chosen for an item.

- ``all``: every example in memory.
- ``same_problem_type``: examples whose problem type equals the item's.
- ``same_group``: examples whose group equals the item's (CogEval: the same cognitive map; the paper's choice).
- ``top_k``: the ``k`` examples whose responses are most similar to the item's response.
- ``sample``: at most ``x`` examples sampled uniformly with ``seed`` (ICL_x); the same sample for every item.
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

    @field_validator("include_modes", "exclude_modes", mode="before")
    @classmethod
    def _known_modes(cls, value: Any, info: Any) -> Any:
        if value is None:
            return value
        if isinstance(value, str):
            value = [value]
        unknown = [m for m in value if m not in FAILURE_MODES]
        if unknown:
            raise MemoryStoreError(
                f"unknown failure mode(s) {', '.join(map(repr, unknown))}",
                where=f"retrieval policy, field '{info.field_name}'",
                fix=f"use names from: {', '.join(FAILURE_MODES)}",
            )
        return value

    @model_validator(mode="after")
    def _check_sizes(self) -> RetrievalPolicy:
        if self.kind == "sample" and self.x is None:
            raise MemoryStoreError(
                "the 'sample' policy needs a sample size",
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
    if policy.kind == "top_k":
        raise ValueError("top_k needs the vector index; use EpisodicMemory.retrieve")
    allowed = policy.allowed_modes()
    excluded = set(policy.exclude_ids)
    pool = [ex for ex in examples if ex.failure_mode in allowed and ex.id not in excluded]
    if policy.kind == "same_problem_type":
        pool = [ex for ex in pool if ex.problem_type == item.problem_type]
    elif policy.kind == "same_group":
        pool = [ex for ex in pool if ex.group == item.group]
    elif policy.kind == "sample":
        size = policy.x or 0
        if size < len(pool):
            ordered = sorted(pool, key=lambda ex: ex.id)
            rng = random.Random(policy.seed)
            pool = (
                rng.sample(ordered, size) if policy.balance is None else balanced_sample(ordered, size, rng)
            )
    return cap(stable_order(pool), policy)


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
