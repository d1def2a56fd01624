"""Position-debiased verdicts of a pairwise judge from its two orders (Zheng et al. 2023, MT-Bench).

METHODS.md section 10. Both functions take the verdicts of one pass in both orders: ``original[i]``
with response A shown first, ``swapped[i]`` with B shown first (in the swapped order's own terms:
``first`` names the response shown first there).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

DebiasStatus = Literal["ok", "inconsistent", "unparsed"]
"""``ok``: a debiased label; ``inconsistent``: the two orders disagree (no label, never coerced);
``unparsed``: an order has no label (unparsed or failed call)."""


@dataclass
class DebiasedVerdicts:
    """Debiased labels in item order (``None`` unless the status is ``ok``)."""

    labels: list[Hashable | None] = field(default_factory=list)
    """The debiased label per item."""
    status: list[DebiasStatus] = field(default_factory=list)
    """Why an item has no label."""
    prob_fallback: int = 0
    """``logprob_mean``: items decided by the ``consistent`` rule for want of label probabilities."""


def debias_pairwise(
    original: Sequence[Hashable | None],
    swapped: Sequence[Hashable | None],
    *,
    first: Hashable,
    second: Hashable,
    mode: Literal["consistent", "logprob_mean"],
    original_probs: Sequence[Mapping[str, float] | None] | None = None,
    swapped_probs: Sequence[Mapping[str, float] | None] | None = None,
    labels: Sequence[Hashable] = (),
) -> DebiasedVerdicts:
    """One verdict per item from its two orders.

    A swapped verdict is mapped back first (``first`` <-> ``second``; a tie label unchanged).

    - ``consistent``: the label when both orders agree, else ``inconsistent``.
    - ``logprob_mean``: ``argmax_l (p_orig(l) + p_swap(back(l))) / 2`` over the label
      probabilities (keyed by ``str(label)``); an exact tie between the best labels is
      ``inconsistent``. An item lacking probabilities in either order falls back to ``consistent``
      (counted in :attr:`DebiasedVerdicts.prob_fallback`).

    An item with no label in either order is ``unparsed`` in both modes. ``labels`` (the label
    set) turns a probability's key back into its label (an integer label from ``"1"``).
    """
    back = {first: second, second: first}
    by_form = {str(x): x for x in (*(labels or ()), first, second)}
    back_form = {str(first): str(second), str(second): str(first)}
    n = len(original)
    if len(swapped) != n:
        raise ValueError(f"{n} original verdicts but {len(swapped)} swapped ones")
    po = list(original_probs) if original_probs is not None else [None] * n
    ps = list(swapped_probs) if swapped_probs is not None else [None] * n
    out = DebiasedVerdicts()
    for a, b, pa, pb in zip(original, swapped, po, ps, strict=True):
        if mode == "logprob_mean" and pa and pb:
            mean = {lab: (p + pb.get(back_form.get(lab, lab), 0.0)) / 2 for lab, p in pa.items()}
            best = max(mean.values())
            top = [lab for lab, p in mean.items() if p == best]
            if len(top) == 1 and top[0] in by_form:
                out.labels.append(by_form[top[0]])
                out.status.append("ok")
            else:
                out.labels.append(None)
                out.status.append("inconsistent")
            continue
        if mode == "logprob_mean" and a is not None and b is not None:
            out.prob_fallback += 1
        if a is None or b is None:
            out.labels.append(None)
            out.status.append("unparsed")
        elif a == back.get(b, b):
            out.labels.append(a)
            out.status.append("ok")
        else:
            out.labels.append(None)
            out.status.append("inconsistent")
    return out


class DecidedAccuracy(BaseModel):
    """Accuracy of labels some of which are undecided (unparsed, failed or inconsistent)."""

    n: int
    """Items with a reference label."""
    decided: int
    """Of those, items with a label."""
    undecided_share: float | None
    """``1 - decided / n``."""
    accuracy_decided: float | None
    """Correct / decided."""
    accuracy_all: float | None
    """Correct / n: undecided items counted wrong."""


def decided_accuracy(
    reference: Sequence[Hashable | None], labels: Sequence[Hashable | None]
) -> DecidedAccuracy:
    """:class:`DecidedAccuracy` of ``labels`` against ``reference`` (items without a reference left out).

    accuracy_decided = sum_i [l_i = y_i] / #{l_i decided}; accuracy_all = sum_i [l_i = y_i] / n;
    undecided_share = 1 - #{l_i decided} / n.
    """
    pairs = [(y, x) for y, x in zip(reference, labels, strict=True) if y is not None]
    n = len(pairs)
    decided = [(y, x) for y, x in pairs if x is not None]
    right = sum(y == x for y, x in decided)
    return DecidedAccuracy(
        n=n,
        decided=len(decided),
        undecided_share=1 - len(decided) / n if n else None,
        accuracy_decided=right / len(decided) if decided else None,
        accuracy_all=right / n if n else None,
    )
