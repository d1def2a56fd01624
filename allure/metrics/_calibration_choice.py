"""``calibration = "auto"``: pick the calibration mode of a pass on the dev split (METHODS.md section 8).

Each candidate mode (``none``, ``contextual``, ``prior``, ``offset``) labels the same dev items. A
candidate whose labels **collapse** to one label on dev, while dev's reference labels hold two or
more, is refused: answering one label everywhere scores exactly chance on balanced accuracy, and a
judge that is worse than chance would otherwise "gain" by giving up (HaluEval: the prior-corrected
zero-shot judge answered "no" to every item, BA 0.433 -> 0.500). Among the others, the mode with the
highest objective wins; ``none`` is kept unless another mode is strictly better (ties go to the
earlier mode of :data:`AUTO_ORDER`: the simpler correction), and then only when it is *better* by
the guard's rule (:func:`allure.metrics.significantly_better`: one-sided paired permutation test at
``alpha``, at least ``min_per_label`` dev items of each label; issue 34: 30 dev items holding 3
"yes" chose contextual on noise). The held-out split is never read here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from allure.labels import Label
from allure.metrics._objective import Objective, objective_value

AUTO_ORDER = ("none", "contextual", "prior", "offset")
"""The candidate modes of ``auto``, simplest first (ties go to the earlier one)."""


@dataclass(frozen=True)
class CalibrationChoice:
    """What ``auto`` chose on dev, and why."""

    mode: str
    """The chosen mode (``none`` when no other mode was strictly better, or nothing could be scored)."""
    scores: dict[str, float | None] = field(default_factory=dict)
    """Mode -> the objective on the dev split (``None``: undefined)."""
    refused: tuple[str, ...] = ()
    """Modes refused because their dev labels collapsed to one label."""
    n: int = 0
    """Dev items with a reference label."""
    evidence: str = ""
    """Why the best mode was not applied (``none`` kept): not significantly better, or too few of a label."""
    data: str = "dev"
    """What the choice was made on, as said: ``dev``, or ``the audit split out of fold`` (cross-fitted)."""

    def describe(self) -> str:
        """One line: ``chose prior on dev (n = 120): none 0.433, contextual 0.47, ...; refused offset (one label)``."""
        figures = ", ".join(f"{m} {'-' if s is None else f'{s:.3f}'}" for m, s in self.scores.items())
        out = f"chose {self.mode} on {self.data} (n = {self.n}): {figures}"
        if self.refused:
            out += f"; refused {', '.join(self.refused)} (every {'dev' if self.data == 'dev' else 'audit'} item given one label)"
        if self.evidence:
            out += f"; {self.evidence}"
        return out


def collapsed(pred: Sequence[Label | None], references: Sequence[Label | None]) -> bool:
    """True when ``pred`` gives one label to every item with a reference while the references hold
    two or more labels (unparsed predictions are not a label)."""
    given = {str(p) for p, r in zip(pred, references, strict=True) if r is not None and p is not None}
    truth = {str(r) for r in references if r is not None}
    return len(truth) >= 2 and len(given) <= 1


def choose_calibration(
    candidates: Mapping[str, Sequence[Label | None]],
    references: Sequence[Label | None],
    *,
    objective: Objective = "balanced_accuracy",
    labels: Sequence[Label] | None = None,
    alpha: float | None = 0.05,
    min_per_label: int = 10,
    data: str = "dev",
) -> CalibrationChoice:
    """Choose among ``candidates`` (mode -> dev labels, in the order of ``references``) by ``objective``.

    Args:
        candidates: Each mode's labels of the dev items; ``none`` (the parsed labels) should be one.
        references: The dev items' reference labels (``None``: unknown, not scored).
        objective: The loop's objective.
        labels: The label set.
        alpha: Level of the one-sided test the best mode must pass against ``none`` (``None``: no
            test, the highest objective alone decides, as before issue 34).
        min_per_label: Fewest dev items of each label for any mode but ``none`` to be chosen.
        data: What the labels are of, as the line says it (``dev``; cross-fitted: the out-of-fold
            labels of every audit item, ``the audit split out of fold``).
    """
    n = sum(r is not None for r in references)
    scores: dict[str, float | None] = {}
    refused: list[str] = []
    for mode in sorted(candidates, key=lambda m: AUTO_ORDER.index(m) if m in AUTO_ORDER else len(AUTO_ORDER)):
        pred = candidates[mode]
        scores[mode] = objective_value(references, pred, objective=objective, labels=labels) if n else None
        if mode != "none" and collapsed(pred, references):
            refused.append(mode)
    order = list(scores)
    eligible = [m for m, s in scores.items() if s is not None and m not in refused]
    # the highest objective wins; a tie goes to the earlier (simpler) mode, so ``none`` is kept unless beaten
    best = max(eligible, key=lambda m: (scores[m], -order.index(m))) if eligible else "none"
    evidence = ""
    if alpha is not None and best != "none" and "none" in candidates:
        from allure.metrics._better import significantly_better

        labs = (
            list(labels) if labels is not None else sorted({r for r in references if r is not None}, key=str)
        )
        d = significantly_better(
            references,
            candidates["none"],
            candidates[best],
            labels=labs,
            objective=objective,
            alpha=alpha,
            min_per_label=min_per_label,
        )
        if not d.better:
            evidence = f"kept none: {best} not shown better on {data} ({d.figures})"
            best = "none"
    return CalibrationChoice(
        mode=best, scores=scores, refused=tuple(refused), n=n, evidence=evidence, data=data
    )
