"""How many approvals does it take: the learned read-out refitted on the first ``n`` labelled items
of a review order, for several sizes and seeded orders (issue 34, item 7).

An audit team reviews its mined items one after another; :func:`review_order` is such an order (a
seeded shuffle of the pool, one per draw), and the read-out of size ``n`` is fitted on its first
``n`` items, so a larger size extends the smaller one as more reviewing would. Each fit is
:func:`~allure.passes.readout.fit_learned_readout`, the loop's own (features from the stored verdicts,
never the reference; an item outside the pool is refused with :class:`ReadoutLeak`), and the memory
vote, when asked, counts only the examples approved from the draw's own items. Nothing here calls
the evaluator: every feature comes from verdicts already stored. Those verdicts are the judge's own
(:func:`judge_verdicts`): a pass's stored labels may carry its calibration or read-out, fitted on the
very references the curve fits on, and its zero-shot baseline would then not be zero-shot.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from allure.labels import Label
from allure.models import Item, Verdict, stable_hash
from allure.passes.readout._learned import PassOrders, fit_learned_readout
from allure.passes.readout._vote import VoteSource


@dataclass(frozen=True)
class CurveDraw:
    """One fit of the curve: the first ``size`` items of review order ``repeat``, and what it gave."""

    size: int
    repeat: int
    fit_ids: tuple[str, ...]
    """The items fitted on (the first ``size`` of the order), in review order."""
    labels: dict[str, Label | None]
    """Item id -> the read-out's label, for the evaluated items (empty when nothing was fitted)."""
    probs: dict[str, float]
    """Item id -> the read-out's ``P(positive)``, for the evaluated items (empty when not fitted)."""
    describe: str
    """The fitted read-out in one line, or why none was fitted."""

    @property
    def fitted(self) -> bool:
        return bool(self.labels)


def judge_verdicts(verdicts: Mapping[str, Verdict]) -> dict[str, Verdict]:
    """The verdicts with the label the judge itself gave as ``label``: ``raw_label`` where a later step
    (calibration, a read-out) changed it, none for an unparsed or failed call a later step gave a
    label, else ``label``; ``raw_label`` then unset. What the learning curve reads (its zero-shot
    labels, and the feature ``z`` of a verdict without label probabilities)."""
    out: dict[str, Verdict] = {}
    for i, v in verdicts.items():
        own = v.raw_label if v.raw_label is not None else v.label if v.status == "ok" else None
        same = own == v.label and v.raw_label is None
        out[i] = v if same else v.model_copy(update={"label": own, "raw_label": None})
    return out


def review_order(pool: Sequence[str], repeat: int, seed: int) -> list[str]:
    """The pool's item ids in the seeded review order ``repeat`` (the same for the same pool and seed)."""
    order = sorted(pool)
    random.Random(int(stable_hash("review order", seed, repeat), 16)).shuffle(order)
    return order


def _restricted(vote: VoteSource | None, fit_ids: set[str]) -> VoteSource | None:
    """The approved examples of the fit items only (``n`` reviews give at most their own examples)."""
    if vote is None:
        return None
    rows = [j for j, i in enumerate(vote.item_ids) if i in fit_ids]
    return VoteSource(
        vote.vectors[rows], [vote.labels[j] for j in rows], [vote.item_ids[j] for j in rows], vote.embed
    )


def readout_curve(
    pool: Sequence[Item],
    evaluated: Sequence[Item],
    verdicts: Mapping[str, Verdict],
    references: Mapping[str, Label | None],
    *,
    sizes: Sequence[int],
    repeats: int,
    labels: Sequence[Label],
    positive: Label | None,
    vote: VoteSource | None = None,
    objective: str = "balanced_accuracy",
    seed: int = 0,
) -> list[CurveDraw]:
    """The read-out fitted on the first ``n`` items of each review order, applied to ``evaluated``.

    Args:
        pool: The items that may be fitted on (the mined audit items), each with a reference.
        evaluated: The items scored (the held-out split): never fitted on.
        verdicts: Stored verdicts (their label probabilities are the feature ``z``) of both, with the
            judge's own labels (:func:`judge_verdicts`: a verdict without label probabilities reads as
            its label).
        references: Item id -> reference label of the pool items (an auditor's label winning).
        sizes: The sizes ``n`` (each at most ``len(pool)``).
        repeats: Review orders (draws) per size.
        labels: The label set; positive: its positive label (two-label sets only).
        vote: The approved examples that vote (``None``: ``z`` alone).
        objective: What the read-out's cross-validation maximises.
        seed: Seed of the review orders and of the folds.

    Raises:
        ReadoutLeak: An evaluated item is in the pool.
    """
    ids = [it.id for it in pool]
    by_id = {it.id: it for it in pool}
    not_fit = {it.id for it in evaluated}
    out = []
    for repeat in range(repeats):
        order = review_order(ids, repeat, seed)
        for size in sizes:
            fit = [by_id[i] for i in order[:size]]
            chosen = {it.id for it in fit}
            learned = fit_learned_readout(
                "logistic",
                fit,
                verdicts,
                references,
                labels=labels,
                positive=positive,
                not_fit=not_fit,
                vote=_restricted(vote, chosen),
                objective=objective,
                seed=seed,
            )
            got, probs = (
                ({}, {}) if learned is None else learned.scored(list(evaluated), PassOrders(verdicts))
            )
            why = learned.record()["describe"] if learned else "not fitted: fewer than 2 items of a label"
            out.append(CurveDraw(size, repeat, tuple(order[:size]), got, probs, why))
    return out
