"""The guard: a new memory version is adopted only when it is *better* on the decision data.

Zero-shot is candidate 0 (as DSPy's random search and MIPROv2 keep the unoptimised program
unless it is beaten). After each pass with a new memory version, the loop compares it with the
*active* version on the decision data, by the loop's objective (balanced accuracy by default: the
label prior cannot game it), paired on the same items (METHODS.md section 13, issue 34):

- ``delta`` = objective(new) - objective(active);
- the new version is **adopted** only when ``delta > guard_margin`` and the one-sided test of "new
  is better" (:func:`allure.metrics.better_p`) gives ``p`` below the memory's level in the run's
  declared family (:class:`allure.metrics.DecisionFamily`: ``guard_alpha`` split over every kind of
  decision the run may take; docs/DECISIONS.md); otherwise the active version
  stays. Decide on evidence, not on its absence: "not significantly worse" adopted noise (a dev
  split of 30 items holding 3 "yes" cannot tell +0.02 from -0.15);
- when the decision data holds fewer than ``guard_min_per_label`` reference labels of some label,
  it cannot detect a difference of the size that matters, and the guard says so and keeps the
  active version.

The decision data (``[loop] folds``): with ``folds >= 2`` (the default) every audit item with a
reference label, cross-fitted: each audit item's verdict came from a prompt whose examples were
mined from the *other* folds (:mod:`allure.graphs.crossfit`), so 100 audit items give 100 paired
out-of-fold decisions; with ``folds = 0`` the dev split (audit items never mined). The reason line
names it, its size and the smallest class. The held-out split is never read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from allure.labels import Label
from allure.metrics import OBJECTIVE_NAMES

if TYPE_CHECKING:
    from allure.config import LoopSpec
    from allure.metrics import DecisionFamily, ObjectiveComparison
    from allure.models import Verdict


@dataclass(frozen=True)
class GuardDecision:
    """What the guard decided for one pass, and why (one status line)."""

    adopt: bool
    """Whether the pass's memory version becomes the active one."""
    reason: str
    """One sentence: the figures on dev and the rule applied."""
    comparison: ObjectiveComparison | None = None
    """The paired comparison on dev (``None`` when the guard could not compare)."""


def guard_decision(
    loop: LoopSpec,
    labels: list[Label],
    references: dict[str, Label | None],
    dev_ids: set[str],
    active: dict[str, Verdict],
    new: dict[str, Verdict],
    *,
    active_name: str,
    new_name: str,
    folds: int = 0,
    family: DecisionFamily | None = None,
    groups: dict[str, str] | None = None,
) -> GuardDecision:
    """Decide whether the pass whose verdicts are ``new`` replaces the ``active`` one (see the module).

    Args:
        loop: The loop's settings (objective, guard, margin, alpha, seed).
        labels: The label set.
        references: Item id -> reference label.
        dev_ids: The decision data's item ids: every audit item when cross-fitted, else the dev split.
        active: Verdicts of the active memory version's pass.
        new: Verdicts of the pass with the new memory version.
        active_name: How the active version is named in the reason (``iteration 1 (zero-shot)``).
        new_name: How the new version is named.
        folds: The cross-fitting folds of ``dev_ids`` (0: they are the dev split), as the reason says it.
        family: The run's declared decisions (:func:`allure.config.decision_family`): the guard tests
            at the memory's level; ``None``: at ``guard_alpha`` alone.
        groups: Item id -> its task (:func:`allure.dataset.task_groups`): the test swaps the responses
            to one task together (:func:`allure.metrics.better_p`); ``None``: item by item.
    """
    from allure.metrics import significantly_better

    alpha = loop.guard_alpha if family is None else family.level("memory")
    if not loop.guard:
        return GuardDecision(True, f"{new_name} adopted: the guard is off ([loop] guard = false)")
    keep = sorted(i for i in dev_ids if references.get(i) is not None)
    where = "the audit split" if folds else "dev"
    if not keep:
        return GuardDecision(
            True,
            f"{new_name} adopted unchecked: no {'audit' if folds else 'dev'} item has a reference label"
            + ("" if folds else " (set [loop] dev_fraction above 0 to let the guard compare versions)"),
        )
    d = significantly_better(
        [references[i] for i in keep],
        [v.label if (v := active.get(i)) else None for i in keep],
        [v.label if (v := new.get(i)) else None for i in keep],
        labels=labels,
        objective=loop.objective,
        alpha=alpha,
        margin=loop.guard_margin,
        min_per_label=loop.guard_min_per_label,
        seed=loop.seed,
        groups=None if groups is None else [groups.get(i, i) for i in keep],
    )
    if d.thin:
        power = "a larger audit split" if folds else "a larger audit split or dev_fraction"
        return GuardDecision(
            False,
            f"{new_name} not adopted: {where} holds {d.thin}: the guard cannot detect a difference of the size "
            f"that matters and keeps {active_name} (fewer than [loop] guard_min_per_label = "
            f"{loop.guard_min_per_label} of a label; {power} gives it power)",
        )
    cmp = d.comparison
    data = f"the audit split out of fold ({folds} folds)" if folds else "the dev split"
    if cmp is None or cmp.delta is None:
        return GuardDecision(
            False, f"{new_name} not adopted: {d.figures} on {data}; keeping {active_name}", cmp
        )
    name = OBJECTIVE_NAMES[loop.objective]
    figures = f"{name} on {data}{d.figures[len(name) :]}"
    if d.better:
        level = (
            ""
            if family is None
            else f" at alpha {alpha:.3g} (the memory's share of the run's {family.alpha:g})"
        )
        return GuardDecision(True, f"{new_name} adopted: {figures}, significantly better{level}", cmp)
    why = (
        f"not a rise beyond the margin {loop.guard_margin:g}"
        if cmp.delta <= loop.guard_margin
        else f"a rise not significant at alpha {alpha:.3g}"
        + ("" if family is None else f" (the memory's share of the run's {family.alpha:g})")
    )
    return GuardDecision(False, f"{new_name} not adopted: {figures}, {why}; keeping {active_name}", cmp)
