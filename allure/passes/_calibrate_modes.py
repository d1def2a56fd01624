"""Each calibration mode's labels for a pass's verdicts, and ``auto``'s choice among them
(:mod:`allure.passes._calibrate` runs them): ``contextual`` and ``prior`` re-label by ``p / p_cf``
(times ``pi``), ``offset`` by one logit offset fitted on the audit items; ``auto`` scores every mode
on the decision data (the dev split, or every audit item labelled by the modes as fitted on the
other folds) and keeps the best one shown better than ``none``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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


def out_of_fold_labels(
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
            out["prior"].update(by_p_cf(mine, p_cf, labels, pi) if pi else {})
        if "offset" in out:
            b = fitted_offset(rows, labels, other)
            if b is not None and other.positive is not None:
                out["offset"].update(by_offset(mine, labels, other.positive, b))
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


def fitted_offset(
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


def by_offset(
    rows: dict[str, tuple[Any, list[float]]], labels: Sequence[Label], positive: Label, b: float
) -> dict[str, Label | None]:
    """The positive label where its probability shifted by the logit offset ``b`` is over 0.5."""
    from allure.metrics import apply_offset

    pos = list(labels).index(positive)
    neg = labels[1 - pos]
    p = {i: row[pos] / sum(row) for i, (_, row) in rows.items()}
    q = apply_offset(list(p.values()), b)
    return {i: (positive if x > 0.5 else neg) for i, x in zip(p, q, strict=True)}
