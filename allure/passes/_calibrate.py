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
Nothing here names a mode: each is a :class:`~allure.passes.Calibrator` registered by name
(:mod:`allure.calibrations`; allure's own in :mod:`allure.passes._calibrate_modes`), asked what it
reads, what it fits and how it labels.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allure.calibrations import AUTO, NONE, mode_names
from allure.labels import Label
from allure.metrics import CalibrationValues
from allure.models import Item
from allure.passes._calibrate_modes import (
    CalibrationInput,
    CalibrationTarget,
    calibrator,
    choose_mode,
    out_of_fold_labels,
)
from allure.passes._content_free import (
    ContentFreePass,
    block_name,
    content_free_means,
    label_row,
)

if TYPE_CHECKING:
    from allure.config import Calibration
    from allure.evaluator import EvalResult, Evaluator, ExamplesFor, PassOptions

NO_PROBS = (
    "calibration needs label probabilities, and the evaluator returned no logprobs for any call: "
    "labels kept as parsed (calibration off for this pass)"
)
"""Said once when a pass has nothing to calibrate."""


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
    values: dict[str, Any] = field(default_factory=dict)
    """What a registered mode fitted beyond ``offset`` and ``prior`` (which the report names as fields
    of their own): value name -> JSON-able value, every mode fitted (``auto``: all of them)."""

    def keep(self, fitted: Mapping[str, Any]) -> None:
        """Record a mode's fitted values (``offset`` and ``prior`` in their fields, the others in :attr:`values`)."""
        for key, value in fitted.items():
            if key in ("offset", "prior"):
                setattr(self, key, value)
            else:
                self.values[key] = value

    def as_dict(self) -> dict[str, Any]:
        """JSON-able form (the report's iteration entry; :attr:`values` only when a mode fitted some)."""
        out = dict(self.__dict__)
        if not self.values:
            out.pop("values")
        return out

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
        (an exported judge: :attr:`allure.passes.PassPlan.fixed_calibration`)."""
        mode = self.chosen if self.chosen is not None and not self.off else NONE
        if mode == NONE:
            return FittedCalibration()
        applied = calibrator(mode)
        fitted = {"offset": self.offset, "prior": self.prior, **self.values}
        own = {k: fitted.get(k) for k in applied.keys}
        return FittedCalibration(
            mode,
            p_cf={k: list(v) for k, v in self.p_cf.items()} if applied.reads_p_cf else {},
            **{k: dict(v) if isinstance(v, dict) else v for k, v in own.items()},
        )


FittedCalibration = CalibrationValues
"""Calibration values fitted on one pass, applied as they are to another (no content-free call,
no choice, no reference label): an exported judge labelling new data that has no dev split. The
record the pass stores (:class:`allure.metrics.CalibrationValues`): the mode (never ``auto``: what it
chose), ``p_cf`` per block name for a mode that reads it, and the mode's values by name."""


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
    modes = [calibrator(m) for m in (mode_names() if mode == AUTO else [mode] if mode != NONE else [])]
    p_cf = (
        content_free_means(
            ContentFreePass(ev, run_id, iteration, items, result, examples_for, options), labels, out
        )
        if any(m.reads_p_cf for m in modes)
        else {}
    )
    data = CalibrationInput(
        rows, labels, p_cf, shares=prior, target=target, positive=None if target is None else target.positive
    )
    candidates = {NONE: {i: v.label for i, (v, _) in rows.items()}}
    for m in modes:
        values = m.fit(data)
        if values is None:
            if m.name == mode:
                out.note = m.cannot_fit
            continue
        out.keep(values)
        if p_cf or not m.reads_p_cf:  # a block without p_cf keeps its labels; none has one: no candidate
            candidates[m.name] = m.labels(values, data)
    out.chosen = mode if mode in candidates else NONE
    if mode == AUTO:
        parsed = {it.id: v.label for it in items if (v := result.verdicts.get(it.id)) is not None}
        scored = out_of_fold_labels(candidates, data)
        out.chosen, note, choice = choose_mode(scored, parsed, target, labels)
        if note:
            out.note = note
        if choice is not None:
            out.choice = choice
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
    out.values = dict(fitted.model_extra or {})
    out.p_cf = {k: [float(x) for x in v] for k, v in fitted.p_cf.items()}
    rows = _rows(items, result, labels, out)
    if rows is None:
        return out
    chosen: dict[str, Label | None] = {}
    if fitted.mode != NONE:
        mode = calibrator(fitted.mode)
        p_cf = {}
        if mode.reads_p_cf:
            by_block = {tuple(v.icl_ids): v.icl_ids for v, _ in rows.values()}
            p_cf = {
                b: fitted.p_cf[block_name(ids)]
                for b, ids in by_block.items()
                if block_name(ids) in fitted.p_cf
            }
            out.blocks = len(p_cf)
        data = CalibrationInput(rows, labels, p_cf, positive=ev.positive_label)
        chosen = mode.labels(fitted.values(), data)
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
