"""The calibration modes (:mod:`allure.calibrations` registers them by name) and ``auto``'s choice
among them (:mod:`allure.passes._calibrate` runs them). A mode is a :class:`Calibrator`: it fits
its values on a pass (:meth:`Calibrator.fit`, a JSON-able dict) and labels the verdicts from them
(:meth:`Calibrator.labels`), the same values applied again to new data by an exported judge.
allure's own, registered here as any other mode is: ``contextual`` and ``prior`` re-label by
``p / p_cf`` (times ``pi``), ``offset`` by one logit offset fitted on the audit items. ``auto``
scores every mode on the decision data (the dev split, or every audit item labelled by the modes as
fitted on the other folds) and keeps the best one shown better than ``none``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from allure.calibrations import NONE, CalibratorFacts, calibrator_class, register_calibration
from allure.labels import Label


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
    groups: Mapping[str, str] = field(default_factory=dict)
    """Item id -> its task (:func:`allure.dataset.task_groups`): ``auto``'s tests swap the responses
    to one task together (:func:`allure.metrics.better_p`); empty: item by item."""

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


@dataclass(frozen=True)
class CalibrationInput:
    """What a mode fits on and labels: the pass's label probabilities and what else a mode reads."""

    rows: Mapping[str, tuple[Any, list[float]]]
    """Item id -> (its verdict, its label probabilities in label-set order), for the verdicts that
    carry them (the others keep their labels)."""
    labels: Sequence[Label]
    """The label set (the order of the probability rows)."""
    p_cf: Mapping[tuple[str, ...], Any] = field(default_factory=dict)
    """ICL block (its example ids) -> ``p_cf`` (:attr:`CalibratorFacts.reads_p_cf`; a verdict whose
    block has none keeps its label)."""
    shares: Mapping[str, float] | None = None
    """The audit split's reference label shares outside dev, label string -> share
    (:attr:`CalibratorFacts.reads_shares`)."""
    target: CalibrationTarget | None = None
    """The references to fit on (:attr:`CalibrationTarget.fit`; :attr:`CalibratorFacts.reads_references`)."""
    positive: Label | None = None
    """The positive label (the target's; an exported judge's: the evaluator's)."""


class Calibrator(CalibratorFacts):
    """A calibration mode's code: subclass, register it with ``@register_calibration("NAME")``
    (:mod:`allure.calibrations`), give :meth:`labels`, and :meth:`fit` when it fits values. The
    facts it states (:class:`~allure.calibrations.CalibratorFacts`: what it reads, the names of its
    values, its formula) tell the pass what to compute for it."""

    cannot_fit: ClassVar[str] = ""
    """Said when the mode, asked for by name, cannot be fitted on the pass (:meth:`fit` gave ``None``)."""

    def fit(self, data: CalibrationInput) -> dict[str, Any] | None:
        """The values fitted on ``data``, by the names of :attr:`keys` (JSON-able: the pass stores them,
        an exported judge carries them); ``None`` when they cannot be fitted (the mode is then no
        candidate). By default: nothing to fit."""
        return {}

    def labels(self, values: Mapping[str, Any], data: CalibrationInput) -> dict[str, Label | None]:
        """Item id -> label for the items of ``data.rows`` the mode labels (the others keep theirs),
        from ``values`` as :meth:`fit` gave them or as stored (a value missing: ``{}``)."""
        raise NotImplementedError


def calibrator(name: str) -> Calibrator:
    """The registered mode ``name`` (:func:`allure.calibrations.calibrator_class`).

    Raises:
        SpecError: no mode is registered as ``name``.
        TypeError: the class registered is not a :class:`Calibrator`.
    """
    cls = calibrator_class(name)
    if not issubclass(cls, Calibrator):
        raise TypeError(f"calibration mode {name!r} is {cls.__qualname__}, not an allure.passes.Calibrator")
    return cls()


@register_calibration("contextual")
class Contextual(Calibrator):
    """``q = p / p_cf`` of the item's block, argmax (Zhao et al. 2021)."""

    reads_p_cf = True
    formula = (
        "p = each label's probability in label-set order (the sum of exp(logprob) over the label "
        "token's top_logprobs alternatives that spell it), normalised to sum 1; q = p / p_cf of the "
        "item's block; label = the label with the largest q. A reply without logprobs, or a block "
        "without p_cf, keeps parsed_label."
    )

    def labels(self, values: Mapping[str, Any], data: CalibrationInput) -> dict[str, Label | None]:
        return by_p_cf(data.rows, data.p_cf, data.labels, None)


@register_calibration("prior")
class Prior(Calibrator):
    """``q = p * pi / p_cf``, ``pi`` the audit split's reference label shares outside dev."""

    reads_p_cf = True
    reads_shares = True
    keys = ("prior",)
    cannot_fit = "prior needs the audit split's reference label shares, and no audit item outside dev has one"
    formula = (
        "as contextual, with q = p * prior / p_cf (prior: the audit split's label shares, label-set "
        "order); label = argmax q."
    )

    def fit(self, data: CalibrationInput) -> dict[str, Any] | None:
        return {"prior": {str(k): float(v) for k, v in data.shares.items()}} if data.shares else None

    def labels(self, values: Mapping[str, Any], data: CalibrationInput) -> dict[str, Label | None]:
        prior = values.get("prior")
        if not prior:
            return {}
        pi = [float(prior.get(str(lab), 0.0)) for lab in data.labels]
        return by_p_cf(data.rows, data.p_cf, data.labels, pi)


@register_calibration("offset")
class Offset(Calibrator):
    """Two labels: the positive label's logit shifted by one offset ``b``, fitted so that its
    predicted share on the audit items outside dev matches their reference share."""

    reads_references = True
    keys = ("offset",)
    cannot_fit = "offset needs two labels, a positive label and audit items with label probabilities"
    formula = (
        "p = P(positive) / (P(positive) + P(other)) from the label probabilities; label = positive_label "
        "when 1 / (1 + exp(-(log(p / (1 - p)) + offset))) > 0.5, else the other label; a reply without "
        "logprobs keeps parsed_label."
    )

    def fit(self, data: CalibrationInput) -> dict[str, Any] | None:
        b = fitted_offset(data.rows, data.labels, data.target)
        return None if b is None else {"offset": b}

    def labels(self, values: Mapping[str, Any], data: CalibrationInput) -> dict[str, Label | None]:
        b = values.get("offset")
        if b is None or data.positive is None or len(data.labels) != 2:
            return {}
        return by_offset(data.rows, data.labels, data.positive, b)


def out_of_fold_labels(
    candidates: dict[str, dict[str, Label | None]], data: CalibrationInput
) -> dict[str, dict[str, Label | None]]:
    """``auto``'s labels to choose on: ``candidates`` themselves with a dev split; cross-fitted, each
    fold's audit items re-labelled by the modes that read reference labels (``prior``'s shares,
    ``offset``'s fit) as fitted on the other folds' items (``none`` and a mode that reads no
    reference label, as ``contextual``: their labels are already out of fold)."""
    target = data.target
    if target is None or not target.folds:
        return candidates
    out = {m: dict(c) for m, c in candidates.items()}
    refit = [c for m in out if m != NONE and ((c := calibrator(m)).reads_shares or c.reads_references)]
    for fold in sorted(set(target.folds.values())):
        other = target.without_fold(fold)
        known = [str(r) for r in other.fit.values()]
        shares = {str(lab): known.count(str(lab)) / len(known) for lab in data.labels} if known else None
        fit_on = replace(data, shares=shares, target=other, positive=other.positive)
        mine = replace(fit_on, rows={i: r for i, r in data.rows.items() if target.folds.get(i) == fold})
        for mode in refit:
            values = mode.fit(fit_on)
            if values is not None:
                out[mode.name].update(mode.labels(values, mine))
    return out


def choose_mode(
    candidates: dict[str, dict[str, Label | None]],
    parsed: dict[str, Label | None],
    target: CalibrationTarget | None,
    labels: Sequence[Label],
) -> tuple[str, str, dict[str, Any] | None]:
    """``auto``: among the modes shown better than ``none`` on the decision data (one-sided tests at
    ``[loop] guard_alpha``, Holm-adjusted over the modes), the one that scores best
    (:func:`allure.metrics.choose_calibration`); an item without label probabilities keeps its
    parsed label under every mode."""
    from allure.metrics import choose_calibration

    decision = target.decision() if target else {}
    dev = sorted(i for i in decision if i in parsed)
    if target is None or not dev:
        note = (
            "auto chooses on the audit split out of fold, and the pass has no audit item with a reference label"
            if target is not None and target.folds
            else "auto chooses on the dev split, and the pass has no dev item with a reference label"
        )
        return "none", note, None
    pick = choose_calibration(
        {m: [c.get(i, parsed[i]) for i in dev] for m, c in candidates.items()},
        [decision[i] for i in dev],
        objective=target.objective,  # type: ignore[arg-type]
        labels=labels,
        alpha=target.alpha,
        min_per_label=target.min_per_label,
        groups=[target.groups.get(i, i) for i in dev] if target.groups else None,
        data=f"the audit split out of fold ({len(set(target.folds.values()))} folds)"
        if target.folds
        else "dev",
    )
    choice = {
        "scores": pick.scores,
        "refused": list(pick.refused),
        "n": pick.n,
        "p_holm": pick.p_holm,
        "line": pick.describe(),
    }
    return pick.mode, "", choice


def by_p_cf(
    rows: Mapping[str, tuple[Any, list[float]]],
    p_cf: Mapping[tuple[str, ...], Any],
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


def fitted_offset(
    rows: Mapping[str, tuple[Any, list[float]]], labels: Sequence[Label], target: CalibrationTarget | None
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


def by_offset(
    rows: Mapping[str, tuple[Any, list[float]]], labels: Sequence[Label], positive: Label, b: float
) -> dict[str, Label | None]:
    """The positive label where its probability shifted by the logit offset ``b`` is over 0.5."""
    from allure.metrics import apply_offset

    pos = list(labels).index(positive)
    neg = labels[1 - pos]
    p = {i: row[pos] / sum(row) for i, (_, row) in rows.items()}
    q = apply_offset(list(p.values()), b)
    return {i: (positive if x > 0.5 else neg) for i, x in zip(p, q, strict=True)}
