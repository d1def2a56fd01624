"""Decide on evidence: is B *better* than A on the decision data (issue 34 item 0)?

One rule for every choice that replaces the active judge (a calibration mode, a read-out, a memory
version): B is adopted only when ``delta = objective(B) - objective(A) > margin`` and the one-sided
test of "B better than A" (:func:`allure.metrics.better_p`: for balanced accuracy, conditioned on
the reference labels, issue 41 item 1) gives ``p < alpha``, and only when the decision data holds at
least ``min_per_label`` reference labels of every label (fewer cannot detect a difference of the
size that matters: 30 dev items holding 3 "yes" cannot tell +0.02 from -0.15). ``alpha`` is the
level the run's :class:`allure.metrics.DecisionFamily` gives the decision, not the run's own.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from allure.metrics._common import Label, optional
from allure.metrics._model import OBJECTIVE_NAMES, Objective
from allure.metrics._objective import objective_rows, one_confusion, paired_codes
from allure.metrics._objective_difference import ObjectiveComparison
from allure.metrics._stratified import better_p, coded_p


def too_few(labels: Sequence[Label], references: Sequence[Label | None], least: int) -> str:
    """``3 'yes' items`` when some label has fewer than ``least`` references among ``references``
    (the rarest such label), else ``""``: decision data that cannot detect a difference that matters."""
    counts = {lab: sum(1 for r in references if r == lab) for lab in labels}
    rarest = min(counts, key=lambda lab: counts[lab]) if counts else None
    if rarest is None or counts[rarest] >= least:
        return ""
    n = counts[rarest]
    return f"{n} {str(rarest)!r} item{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class BetterDecision:
    """Whether B is better than A on the decision data, and the figures (one clause)."""

    better: bool
    figures: str
    """``balanced accuracy 0.537 -> 0.556 (+0.019, one-sided p = 0.41, n = 30)``, or why not."""
    thin: str = ""
    """Non-empty when the data holds too few of a label (``3 'yes' items``)."""
    comparison: ObjectiveComparison | None = None


def significantly_better(
    references: Sequence[Label | None],
    a: Sequence[Label | None],
    b: Sequence[Label | None],
    *,
    labels: Sequence[Label],
    objective: Objective = "balanced_accuracy",
    alpha: float = 0.05,
    margin: float = 0.0,
    min_per_label: int = 10,
    seed: int | None = 0,
    groups: Sequence[Hashable] | None = None,
) -> BetterDecision:
    """The rule of the module on paired labellings ``a`` (active) and ``b`` (new) of the same items;
    ``groups``: one key per item (its task: items that share one are tested as a group,
    :func:`allure.metrics.better_p`)."""
    keep = [i for i, r in enumerate(references) if r is not None]
    refs = [references[i] for i in keep]
    thin = too_few(labels, refs, min_per_label)
    if thin:
        return BetterDecision(False, f"the decision data holds {thin}", thin)
    kept_groups = None if groups is None else [groups[i] for i in keep]
    cmp = one_sided(
        refs, [a[i] for i in keep], [b[i] for i in keep], labels, objective, alpha, seed, kept_groups
    )
    if cmp.delta is None or cmp.value_a is None or cmp.value_b is None:
        return BetterDecision(False, f"{OBJECTIVE_NAMES[objective]} undefined (n = {cmp.n})", comparison=cmp)
    p = 1.0 if cmp.p_value is None else cmp.p_value
    figures = (
        f"{OBJECTIVE_NAMES[objective]} {cmp.value_a:.3f} -> {cmp.value_b:.3f} "
        f"({cmp.delta:+.3f}, one-sided p = {p:.3g}, n = {cmp.n})"
    )
    return BetterDecision(cmp.delta > margin and p < alpha, figures, comparison=cmp)


def one_sided(
    references: Sequence[Label | None],
    a: Sequence[Label | None],
    b: Sequence[Label | None],
    labels: Sequence[Label],
    objective: Objective,
    alpha: float,
    seed: int | None,
    groups: Sequence[Hashable] | None = None,
) -> ObjectiveComparison:
    """Both values, ``delta`` and the one-sided ``p`` of :func:`allure.metrics.better_p` (no interval)."""
    labs, t, ca, cb = paired_codes(references, a, b, labels)
    va = optional(objective_rows(objective, one_confusion(t, ca, len(labs)), len(labs))[0])
    vb = optional(objective_rows(objective, one_confusion(t, cb, len(labs)), len(labs))[0])
    delta = None if va is None or vb is None else vb - va
    p = None
    if delta is not None:
        p = (
            coded_p(t, ca, cb, objective, seed=seed, groups=groups, n_labels=len(labs))
            if objective in ("balanced_accuracy", "accuracy")
            else better_p(references, a, b, labels=labels, objective=objective, seed=seed, groups=groups)
        )
    if objective in ("balanced_accuracy", "accuracy"):
        m = int(((ca == t) != (cb == t)).sum())
    else:
        m = int((ca != cb).sum())
    return ObjectiveComparison(
        objective=objective,
        n=len(t),
        value_a=va,
        value_b=vb,
        delta=delta,
        ci_low=None,
        ci_high=None,
        p_value=p,
        alternative="greater",
        n_discordant=m,
        method="exact" if objective == "accuracy" or len(set(t.tolist())) <= 2 else "monte-carlo",
        n_permutations=0,
        alpha=alpha,
        helped="yes" if delta is not None and p is not None and delta > 0 and p < alpha else "unclear",
        statement=f"one-sided p = {p if p is not None else 'undefined'} over {len(t)} items ({m} differ)",
    )
