"""``calibration = "auto"``: pick the calibration mode of a pass on the decision data (METHODS.md section 8).

Each candidate mode (``none`` and the registered modes: :mod:`allure.calibrations`) labels the same decision items
(the dev split, or every audit item out of fold). A candidate whose labels **collapse** to one label
there, while the reference labels hold two or more, is refused: answering one label everywhere scores
exactly chance on balanced accuracy, and a judge that is worse than chance would otherwise "gain" by
giving up (HaluEval: the prior-corrected zero-shot judge answered "no" to every item, BA 0.433 ->
0.500). ``none`` (the parsed labels) is kept unless another mode is *better* by the guard's rule
(:func:`allure.metrics.significantly_better`: the one-sided test of :func:`allure.metrics.better_p`,
at ``alpha``: calibration's share of the run's :class:`allure.metrics.DecisionFamily`; at least
``min_per_label`` decision items of each label; issue 34: 30 dev items holding 3 "yes" chose
contextual on noise), and because up to three modes are tried, **every** remaining mode is tested
against ``none`` and the p-values are Holm-adjusted over the modes tested (:func:`holm_adjust`): testing
only the best of three would adopt a mode that is no better about three times as often as ``alpha``
(issue 34 review: 8.7 % against 2.5 % with one mode, n = 80). Among the modes whose rise is
significant after the correction, the highest objective wins (ties go to the earlier mode of
:func:`allure.calibrations.mode_names`, after ``none``: the simpler correction). The held-out split is never read here.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from allure.calibrations import NONE, mode_names
from allure.labels import Label
from allure.metrics._better import BetterDecision, significantly_better, too_few
from allure.metrics._holm import holm_adjust
from allure.metrics._objective import Objective, objective_value


@dataclass(frozen=True)
class CalibrationChoice:
    """What ``auto`` chose on the decision data, and why."""

    mode: str
    """The chosen mode (``none`` when no other mode was shown better, or nothing could be scored)."""
    scores: dict[str, float | None] = field(default_factory=dict)
    """Mode -> the objective on the decision data (``None``: undefined)."""
    refused: tuple[str, ...] = ()
    """Modes refused because their labels collapsed to one label."""
    n: int = 0
    """Decision items with a reference label."""
    evidence: str = ""
    """Why the mode was chosen, or why ``none`` was kept (no mode significantly better after Holm's
    correction, or too few of a label); empty when no mode scored higher than ``none``."""
    data: str = "dev"
    """What the choice was made on, as said: ``dev``, or ``the audit split out of fold`` (cross-fitted)."""
    p_holm: dict[str, float] = field(default_factory=dict)
    """Tested mode -> its one-sided p against ``none``, Holm-adjusted over the modes tested."""

    def describe(self) -> str:
        """One line: ``chose prior on dev (n = 120): none 0.433, contextual 0.47 (Holm p = 0.21), ...;
        refused offset (one label); adopted prior: ...``."""
        figures = ", ".join(
            f"{m} {'-' if s is None else f'{s:.3f}'}"
            + (f" (Holm p = {self.p_holm[m]:.3g})" if m in self.p_holm else "")
            for m, s in self.scores.items()
        )
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
    groups: Sequence[Hashable] | None = None,
) -> CalibrationChoice:
    """Choose among ``candidates`` (mode -> labels, in the order of ``references``) by ``objective``.

    Args:
        candidates: Each mode's labels of the decision items; ``none`` (the parsed labels) should be one.
        references: The decision items' reference labels (``None``: unknown, not scored).
        objective: The loop's objective.
        labels: The label set.
        alpha: Family-wise level of the one-sided tests of each mode against ``none``, Holm-adjusted
            over the modes tested (``[loop] guard_alpha``; ``None``: no test, the highest objective
            alone decides, as before issue 34).
        min_per_label: Fewest decision items of each label for any mode but ``none`` to be chosen
            (``[loop] guard_min_per_label``).
        data: What the labels are of, as the line says it (``dev``; cross-fitted: the out-of-fold
            labels of every audit item, ``the audit split out of fold``).
    """
    n = sum(r is not None for r in references)
    scores: dict[str, float | None] = {}
    refused: list[str] = []
    simplest = [NONE, *mode_names()]  # a tie goes to the earlier one
    for mode in sorted(candidates, key=lambda m: simplest.index(m) if m in simplest else len(simplest)):
        pred = candidates[mode]
        scores[mode] = objective_value(references, pred, objective=objective, labels=labels) if n else None
        if mode != "none" and collapsed(pred, references):
            refused.append(mode)
    order = list(scores)
    eligible = [m for m, s in scores.items() if s is not None and m not in refused]
    # the highest objective wins; a tie goes to the earlier (simpler) mode, so ``none`` is kept unless beaten
    best = max(eligible, key=lambda m: (scores[m], -order.index(m))) if eligible else "none"
    if alpha is None or best == "none" or "none" not in candidates:
        return CalibrationChoice(mode=best, scores=scores, refused=tuple(refused), n=n, data=data)
    labs = list(labels) if labels is not None else sorted({r for r in references if r is not None}, key=str)
    thin = too_few(labs, [r for r in references if r is not None], min_per_label)
    if thin:
        evidence = f"kept none: {data} holds {thin}, under [loop] guard_min_per_label = {min_per_label}: no mode can be shown better"
        return CalibrationChoice("none", scores, tuple(refused), n, evidence, data)
    tested = {
        m: significantly_better(
            references,
            candidates["none"],
            candidates[m],
            labels=labs,
            objective=objective,
            alpha=alpha,
            min_per_label=min_per_label,
            groups=groups,
        )
        for m in eligible
        if m != "none"
    }
    p_holm = dict(zip(tested, holm_adjust([_p(d) for d in tested.values()]), strict=True))
    shown = [m for m, d in tested.items() if _rise(d) and p_holm[m] < alpha]
    mode = max(shown, key=lambda m: (scores[m], -order.index(m))) if shown else "none"
    said = mode if shown else best
    family = f"Holm p = {p_holm[said]:.3g} over {len(tested)} mode{'' if len(tested) == 1 else 's'}, alpha {alpha:g}"
    evidence = (
        f"adopted {mode}: better than none ({tested[mode].figures}; {family})"
        if shown
        else f"kept none: {best} not shown better ({tested[best].figures}; {family})"
    )
    return CalibrationChoice(mode, scores, tuple(refused), n, evidence, data, p_holm)


def _p(d: BetterDecision) -> float:
    """The one-sided p of a test (1 when undefined: nothing shown)."""
    p = None if d.comparison is None else d.comparison.p_value
    return 1.0 if p is None else float(p)


def _rise(d: BetterDecision) -> bool:
    """Whether the tested mode scored strictly higher than ``none``."""
    return d.comparison is not None and d.comparison.delta is not None and d.comparison.delta > 0
