"""Contextual calibration of a pass's verdicts (``[evaluator] calibration``; Zhao et al. 2021).

For each distinct ICL block of the pass, the item fields of one of its items (task, response,
second response, correct answers) are replaced by each content-free input ("N/A", "", "[MASK]")
and sent with the same block: ``p_cf`` is the mean of their label distributions (3 calls per block,
stored and cached like any call, linked to the pass under ids starting with :data:`CF_PREFIX`).
Each verdict with label probabilities is then re-labelled ``argmax q`` with ``q = p / p_cf``
(``contextual``) or ``q = p * pi / p_cf`` (``prior``, ``pi`` the label shares of the audit split
outside dev), or (``offset``, two labels) by one logit offset fitted on the reference share of the
positive label of the audit split outside dev (no content-free calls); a verdict without
probabilities keeps its label. ``auto`` computes every mode, tests each against ``none`` on the dev
split by the loop's objective (one-sided, ``[loop] guard_alpha`` and ``guard_min_per_label``,
Holm-adjusted over the modes) and keeps, among those shown better, the one that scores best,
refusing a mode that gives every dev item one label (:func:`allure.metrics.choose_calibration`);
cross-fitted (``[loop] folds >= 2``: :attr:`CalibrationTarget.folds`) it scores every audit item,
each labelled by the modes as fitted on the other folds, and applies the chosen mode as fitted on
every audit item (no extra call: ``p_cf`` is per ICL block either way).
The new labels are stored beside the parsed ones (:meth:`allure.store.RunStore.set_verdict_labels`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allure.evaluator._content_free import (
    ContentFreePass,
    block_name,
    content_free_means,
    label_row,
)
from allure.labels import Label
from allure.models import Item

if TYPE_CHECKING:
    from allure.config import Calibration
    from allure.evaluator._options import EvalResult, ExamplesFor, PassOptions
    from allure.evaluator._runner import Evaluator

NO_PROBS = (
    "calibration needs label probabilities, and the evaluator returned no logprobs for any call: "
    "labels kept as parsed (calibration off for this pass)"
)
"""Said once when a pass has nothing to calibrate."""


@dataclass(frozen=True)
class CalibrationTarget:
    """The reference labels ``offset`` and ``auto`` need (never the held-out split's)."""

    dev: Mapping[str, Label] = field(default_factory=dict)
    """Dev item id -> reference label: ``auto`` chooses its mode on these."""
    fit: Mapping[str, Label] = field(default_factory=dict)
    """Audit item id -> reference label: ``offset`` fits its logit offset on these."""
    objective: str = "balanced_accuracy"
    """The loop's objective (``auto`` compares modes by it)."""
    positive: Label | None = None
    """The positive label (``offset`` needs two labels and this one)."""
    folds: Mapping[str, int] = field(default_factory=dict)
    """Audit item id -> its cross-fitting fold (``[loop] folds >= 2``; empty: ``auto`` chooses on
    ``dev``). Cross-fitted, ``auto`` chooses on every audit item of ``fit``, each labelled by the
    modes as fitted on the *other* folds (``prior``'s shares, ``offset``'s ``b``; ``contextual`` reads
    no label); what is applied is fitted on every audit item."""
    alpha: float = 0.05
    """``[loop] guard_alpha``: the family-wise level of ``auto``'s tests of each mode against ``none``."""
    min_per_label: int = 10
    """``[loop] guard_min_per_label``: fewest decision items of each label for ``auto`` to adopt a mode."""

    def decision(self) -> Mapping[str, Label]:
        """The items ``auto`` chooses on: every audit item with a reference when cross-fitted, else dev."""
        return {i: r for i, r in self.fit.items() if i in self.folds} if self.folds else self.dev

    def without_fold(self, fold: int) -> CalibrationTarget:
        """This target with fold ``fold``'s items left out of ``fit`` (what is fitted for that fold)."""
        fit = {i: r for i, r in self.fit.items() if self.folds.get(i) != fold}
        return CalibrationTarget(
            dev={},
            fit=fit,
            objective=self.objective,
            positive=self.positive,
            alpha=self.alpha,
            min_per_label=self.min_per_label,
        )


@dataclass
class CalibrationOutcome:
    """What calibrating one pass did."""

    mode: str
    """The mode asked for (``contextual`` or ``prior``)."""
    blocks: int = 0
    """Distinct ICL blocks of the pass (each with its own ``p_cf``)."""
    cf_calls: int = 0
    """Content-free calls sent (0 when all were stored)."""
    changed: int = 0
    """Verdicts whose label calibration changed."""
    kept: int = 0
    """Verdicts left as parsed (no label probabilities, or no ``p_cf`` for their block)."""
    p_cf: dict[str, list[float]] = field(default_factory=dict)
    """Block (hash of its example ids; ``zero-shot`` for none) -> ``p_cf`` in label-set order."""
    off: bool = False
    """True when no call of the pass carried label probabilities (nothing was changed)."""
    chosen: str | None = None
    """The mode applied: ``mode`` itself, or what ``auto`` chose (``none``: labels kept as parsed)."""
    choice: dict[str, Any] | None = None
    """``auto``: the decision data's objective per mode, the refused modes, ``n``, each tested mode's
    Holm-adjusted p (``p_holm``) and the line said."""
    note: str = ""
    """Why a mode could not be applied (e.g. ``offset`` without audit references)."""
    offset: float | None = None
    """``offset`` (and ``auto``, which fits it too): the fitted logit offset ``b`` of the positive label."""
    prior: dict[str, float] | None = None
    """``prior`` (and ``auto``): the label shares ``pi`` multiplied in (label string -> share)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (the report's iteration entry)."""
        return dict(self.__dict__)

    @property
    def applied(self) -> str:
        """The mode as said: ``contextual``, or ``auto: contextual`` when ``auto`` chose it."""
        return self.mode if self.chosen in (None, self.mode) else f"{self.mode}: {self.chosen}"

    @property
    def why(self) -> str:
        """What ``auto`` saw on dev and any note, each after ``"; "`` (empty when there is neither)."""
        return (f"; {self.choice['line']}" if self.choice else "") + (f"; {self.note}" if self.note else "")

    def fitted(self) -> FittedCalibration:
        """The values this pass applied, to apply again to new data without choosing or fitting
        (an exported judge: :attr:`allure.evaluator.PassPlan.fixed_calibration`)."""
        mode = self.chosen if self.chosen is not None and not self.off else "none"
        return FittedCalibration(
            mode=mode,  # type: ignore[arg-type]
            p_cf={k: tuple(v) for k, v in self.p_cf.items()} if mode in ("contextual", "prior") else {},
            prior=dict(self.prior) if mode == "prior" and self.prior else None,
            offset=self.offset if mode == "offset" else None,
        )


@dataclass(frozen=True)
class FittedCalibration:
    """Calibration values fitted on one pass, applied as they are to another (no content-free call,
    no choice, no reference label): an exported judge labelling new data that has no dev split."""

    mode: Calibration
    """``none``, ``contextual``, ``prior`` or ``offset`` (never ``auto``: what it chose)."""
    p_cf: Mapping[str, Sequence[float]] = field(default_factory=dict)
    """``contextual`` and ``prior``: block name (:func:`block_name`, as :attr:`CalibrationOutcome.p_cf`
    keys it) -> ``p_cf`` in label-set order. A verdict whose block has none keeps its label."""
    prior: Mapping[str, float] | None = None
    """``prior``: label string -> share."""
    offset: float | None = None
    """``offset``: the positive label's logit offset ``b``."""


def calibrate_pass(
    ev: Evaluator,
    run_id: str,
    iteration: int,
    items: list[Item],
    result: EvalResult,
    examples_for: ExamplesFor,
    *,
    mode: Calibration,
    labels: Sequence[Label],
    prior: Mapping[str, float] | None = None,
    options: PassOptions | None = None,
    target: CalibrationTarget | None = None,
) -> CalibrationOutcome:
    """Calibrate ``result``'s verdicts of ``items`` in place and store the new labels (see the module).

    Args:
        ev: The evaluator that labelled the pass (the content-free calls go through it).
        run_id: The run.
        iteration: The pass.
        items: The pass's items.
        result: The pass's verdicts; calibrated labels replace the parsed ones (``raw_label`` keeps them).
        examples_for: The pass's examples per item (a block's content-free inputs get its examples).
        mode: ``contextual``, ``prior``, ``offset`` or ``auto``.
        labels: The label set (the order of the probability rows).
        prior: ``prior`` (and ``auto``): label (string form) -> share on the audit split outside dev.
        options: The pass's options (its prompts, sample, generation), used for the content-free calls too.
        target: ``offset`` and ``auto``: the audit and dev references (without, ``auto`` keeps the parsed labels).
    """
    out = CalibrationOutcome(mode=mode)
    rows = _rows(items, result, labels, out)
    if rows is None:
        return out
    p_cf = (
        {}
        if mode == "offset"
        else content_free_means(
            ContentFreePass(ev, run_id, iteration, items, result, examples_for, options), labels, out
        )
    )
    pi = [float(prior.get(str(lab), 0.0)) for lab in labels] if prior else None
    if prior and mode in ("prior", "auto"):
        out.prior = {str(k): float(v) for k, v in prior.items()}
    candidates = {"none": {i: v.label for i, (v, _) in rows.items()}}
    for m in ("contextual", "prior"):
        if mode in (m, "auto") and p_cf and (m == "contextual" or pi):
            candidates[m] = _by_p_cf(rows, p_cf, labels, pi if m == "prior" else None)
    if mode == "prior" and not pi:
        out.note = (
            "prior needs the audit split's reference label shares, and no audit item outside dev has one"
        )
    if mode in ("offset", "auto"):
        b = _fit_offset(rows, labels, target)
        if b is not None and target is not None and target.positive is not None:
            out.offset = b
            candidates["offset"] = _by_offset(rows, labels, target.positive, b)
        elif mode == "offset":
            out.note = "offset needs two labels, a positive label and audit items with label probabilities"
    out.chosen = mode if mode in candidates else "none"
    if mode == "auto":
        parsed = {it.id: v.label for it in items if (v := result.verdicts.get(it.id)) is not None}
        scored = _out_of_fold(candidates, rows, p_cf, labels, target)
        out.chosen = _choose(scored, parsed, target, labels, out)
    _relabel(ev, run_id, iteration, items, result, candidates[out.chosen], out)
    return out


def apply_fitted(
    ev: Evaluator,
    run_id: str,
    iteration: int,
    items: list[Item],
    result: EvalResult,
    fitted: FittedCalibration,
    *,
    labels: Sequence[Label],
) -> CalibrationOutcome:
    """Re-label ``result``'s verdicts of ``items`` with values fitted before (``fitted``), in place,
    storing the new labels as :func:`calibrate_pass` does: no content-free call, no choice, no
    reference label read (``offset`` shifts the evaluator's positive label)."""
    out = CalibrationOutcome(mode=fitted.mode, chosen=fitted.mode, offset=fitted.offset)
    out.prior = dict(fitted.prior) if fitted.prior else None
    out.p_cf = {k: [float(x) for x in v] for k, v in fitted.p_cf.items()}
    rows = _rows(items, result, labels, out)
    if rows is None:
        return out
    chosen: dict[str, Label | None] = {}
    if fitted.mode in ("contextual", "prior"):
        by_block = {tuple(v.icl_ids): v.icl_ids for v, _ in rows.values()}
        p_cf = {
            b: fitted.p_cf[block_name(ids)] for b, ids in by_block.items() if block_name(ids) in fitted.p_cf
        }
        out.blocks = len(p_cf)
        pi = [float(fitted.prior.get(str(lab), 0.0)) for lab in labels] if fitted.prior else None
        if fitted.mode == "contextual" or pi:
            chosen = _by_p_cf(rows, p_cf, labels, pi if fitted.mode == "prior" else None)
    elif fitted.mode == "offset" and fitted.offset is not None and len(labels) == 2:
        chosen = _by_offset(rows, labels, ev.positive_label, fitted.offset)
    _relabel(ev, run_id, iteration, items, result, chosen, out)
    return out


def _rows(
    items: list[Item], result: EvalResult, labels: Sequence[Label], out: CalibrationOutcome
) -> dict[str, tuple[Any, list[float]]] | None:
    """Item id -> (verdict, its label probabilities in label-set order), for the verdicts that
    carry them; ``None`` (and ``out`` marked off) when no call of the pass returned any."""
    if not any(v.label_probs for v in result.verdicts.values()):
        out.off, out.kept = True, len(items)
        return None
    return {
        it.id: (v, row)
        for it in items
        if (v := result.verdicts.get(it.id)) is not None
        and (row := label_row(v.label_probs, labels)) is not None
    }


def _relabel(
    ev: Evaluator,
    run_id: str,
    iteration: int,
    items: list[Item],
    result: EvalResult,
    chosen: Mapping[str, Label | None],
    out: CalibrationOutcome,
) -> None:
    """Give the verdicts the ``chosen`` labels (``raw_label`` keeps the parsed one) and store the
    changed ones beside the parsed labels."""
    out.kept = len(items) - len(chosen)
    changed: dict[str, Label | None] = {}
    for item_id, lab in chosen.items():
        v = result.verdicts[item_id]
        if lab != v.label:
            result.verdicts[item_id] = v.model_copy(
                update={"label": lab, "raw_label": v.label, "status": "ok"}
            )
            changed[item_id] = lab
    out.changed = len(changed)
    if changed:
        ev.store.set_verdict_labels(run_id, iteration, changed)


def _out_of_fold(
    candidates: dict[str, dict[str, Label | None]],
    rows: dict[str, tuple[Any, list[float]]],
    p_cf: dict[tuple[str, ...], Any],
    labels: Sequence[Label],
    target: CalibrationTarget | None,
) -> dict[str, dict[str, Label | None]]:
    """``auto``'s labels to choose on: ``candidates`` themselves with a dev split; cross-fitted, each
    fold's audit items re-labelled by ``prior`` and ``offset`` as fitted on the other folds' items
    (``none`` and ``contextual`` read no reference label: their labels are already out of fold)."""
    if target is None or not target.folds:
        return candidates
    out = {m: dict(c) for m, c in candidates.items()}
    for fold in sorted(set(target.folds.values())):
        mine = {i: r for i, r in rows.items() if target.folds.get(i) == fold}
        other = target.without_fold(fold)
        if "prior" in out:
            known = [str(r) for r in other.fit.values()]
            pi = [known.count(str(lab)) / len(known) for lab in labels] if known else None
            out["prior"].update(_by_p_cf(mine, p_cf, labels, pi) if pi else {})
        if "offset" in out:
            b = _fit_offset(rows, labels, other)
            if b is not None and other.positive is not None:
                out["offset"].update(_by_offset(mine, labels, other.positive, b))
    return out


def _choose(
    candidates: dict[str, dict[str, Label | None]],
    parsed: dict[str, Label | None],
    target: CalibrationTarget | None,
    labels: Sequence[Label],
    out: CalibrationOutcome,
) -> str:
    """``auto``: among the modes shown better than ``none`` on the decision data (one-sided tests at
    ``[loop] guard_alpha``, Holm-adjusted over the modes), the one that scores best
    (:func:`allure.metrics.choose_calibration`); an item without label probabilities keeps its
    parsed label under every mode."""
    from allure.metrics import choose_calibration

    decision = target.decision() if target else {}
    dev = sorted(i for i in decision if i in parsed)
    if target is None or not dev:
        out.note = (
            "auto chooses on the audit split out of fold, and the pass has no audit item with a reference label"
            if target is not None and target.folds
            else "auto chooses on the dev split, and the pass has no dev item with a reference label"
        )
        return "none"
    pick = choose_calibration(
        {m: [c.get(i, parsed[i]) for i in dev] for m, c in candidates.items()},
        [decision[i] for i in dev],
        objective=target.objective,  # type: ignore[arg-type]
        labels=labels,
        alpha=target.alpha,
        min_per_label=target.min_per_label,
        data=f"the audit split out of fold ({len(set(target.folds.values()))} folds)"
        if target.folds
        else "dev",
    )
    out.choice = {
        "scores": pick.scores,
        "refused": list(pick.refused),
        "n": pick.n,
        "p_holm": pick.p_holm,
        "line": pick.describe(),
    }
    return pick.mode


def _by_p_cf(
    rows: dict[str, tuple[Any, list[float]]],
    p_cf: dict[tuple[str, ...], Any],
    labels: Sequence[Label],
    pi: list[float] | None,
) -> dict[str, Label | None]:
    """``argmax q`` per item whose block has a ``p_cf`` (``q = p / p_cf``, times ``pi`` when given)."""
    from allure.metrics import calibrate

    out: dict[str, Label | None] = {}
    for item_id, (v, row) in rows.items():
        block = tuple(v.icl_ids)
        if block in p_cf:
            out[item_id] = labels[int(calibrate([row], p_cf[block], prior=pi)[0].argmax())]
    return out


def _fit_offset(
    rows: dict[str, tuple[Any, list[float]]], labels: Sequence[Label], target: CalibrationTarget | None
) -> float | None:
    """One logit offset fitted on the audit items so that the positive label's predicted share there
    matches its reference share; ``None`` when it cannot be fitted."""
    from allure.metrics import fit_offset

    positive = None if target is None else target.positive
    if target is None or positive is None or len(labels) != 2 or positive not in labels:
        return None
    pos = list(labels).index(positive)
    fit = [i for i in target.fit if i in rows]
    if not fit:
        return None
    share = sum(str(target.fit[i]) == str(target.positive) for i in fit) / len(fit)
    return float(fit_offset([rows[i][1][pos] / sum(rows[i][1]) for i in fit], share))


def _by_offset(
    rows: dict[str, tuple[Any, list[float]]], labels: Sequence[Label], positive: Label, b: float
) -> dict[str, Label | None]:
    """The positive label where its probability shifted by the logit offset ``b`` is over 0.5."""
    from allure.metrics import apply_offset

    pos = list(labels).index(positive)
    neg = labels[1 - pos]
    p = {i: row[pos] / sum(row) for i, (_, row) in rows.items()}
    q = apply_offset(list(p.values()), b)
    return {i: (positive if x > 0.5 else neg) for i, x in zip(p, q, strict=True)}
