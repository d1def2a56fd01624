"""An exported judge's calibration: the values fitted on its audit, as the bundle keeps them.

The audit's pass chose a mode on dev (``auto``) and fitted its values; a bundle keeps the mode
applied and the values (``p_cf`` per ICL block, the prior ``pi``, the offset ``b``). Labelling
hands them to the pass pipeline (``PassPlan.fixed_calibration``, :mod:`allure.judge._pass`);
:func:`apply_fitted` here is the export's own check that the values give the pass's stored labels
back, over stored verdicts, with the same arithmetic (:func:`allure.metrics.calibrate`, ``apply_offset``):

- ``contextual``: ``argmax p / p_cf``; ``prior``: ``argmax p * pi / p_cf``; ``offset`` (two labels):
  the positive label where ``sigmoid(logit(p_pos) + b) > 0.5``;
- a verdict without label probabilities keeps its parsed label; so does one whose block has no
  ``p_cf`` (a block the audit never saw gets its ``p_cf`` from 3 content-free calls first,
  :func:`block_name` keys them as the audit did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from allure.labels import Label
from allure.models import Verdict


def block_name(icl_ids: Sequence[str]) -> str:
    """The name of an ICL block, as the audit's calibration names it (``zero-shot`` for none)."""
    from allure.evaluator import block_name as name

    return name(icl_ids)


@dataclass(frozen=True)
class FittedValues:
    """The calibration a judge applies: the mode and the values fitted on its audit."""

    mode: str = "none"
    """``none``, ``contextual``, ``prior`` or ``offset`` (what ``auto`` chose, never ``auto``)."""
    p_cf: Mapping[str, Sequence[float]] = field(default_factory=dict)
    """Block name -> the content-free mean distribution (label-set order)."""
    prior: Sequence[float] | None = None
    """``prior``: the label shares of the audit split outside dev (label-set order)."""
    offset: float | None = None
    """``offset``: the logit offset ``b``."""

    def as_toml(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "prior": None if self.prior is None else [float(x) for x in self.prior],
            "offset": self.offset,
            "p_cf": {k: [float(x) for x in v] for k, v in sorted(self.p_cf.items())},
        }

    @classmethod
    def from_toml(cls, table: Mapping[str, Any]) -> FittedValues:
        return cls(
            mode=str(table.get("mode", "none")),
            p_cf={str(k): list(v) for k, v in dict(table.get("p_cf") or {}).items()},
            prior=table.get("prior"),
            offset=table.get("offset"),
        )

    @property
    def needs_p_cf(self) -> bool:
        return self.mode in ("contextual", "prior")


def probability_row(probs: Mapping[str, float] | None, labels: Sequence[Label]) -> list[float] | None:
    """The label probabilities in label-set order (``None``: none, or all zero), as calibration reads them."""
    if not probs:
        return None
    row = [float(probs.get(str(lab), 0.0)) for lab in labels]
    return row if sum(row) > 0 else None


def parsed_label(v: Verdict) -> Label | None:
    """The label as parsed from the output (the store hands back a calibrated one as ``label``)."""
    return v.raw_label if v.raw_label is not None else v.label


def apply_fitted(
    fitted: FittedValues,
    verdicts: Mapping[str, Verdict],
    labels: Sequence[Label],
    positive: Label | None,
    p_cf: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Label | None]:
    """Item id -> the label ``fitted`` gives each verdict (its parsed label where it gives none).

    ``p_cf``: blocks' content-free means beside the bundle's (blocks the audit never saw)."""
    from allure.metrics import apply_offset, calibrate

    out = {i: parsed_label(v) for i, v in verdicts.items()}
    rows = {
        i: row for i, v in verdicts.items() if (row := probability_row(v.label_probs, labels)) is not None
    }
    if (
        fitted.mode == "offset"
        and fitted.offset is not None
        and positive is not None
        and positive in labels
        and len(labels) == 2
    ):
        pos = list(labels).index(positive)
        neg = labels[1 - pos]
        ids = list(rows)
        q = apply_offset([rows[i][pos] / sum(rows[i]) for i in ids], fitted.offset)
        out.update({i: (positive if x > 0.5 else neg) for i, x in zip(ids, q, strict=True)})
    elif fitted.needs_p_cf:
        means = {**(p_cf or {}), **fitted.p_cf}
        pi = list(fitted.prior) if fitted.mode == "prior" and fitted.prior else None
        for i, row in rows.items():
            block = means.get(block_name(verdicts[i].icl_ids))
            if block is not None:
                out[i] = labels[int(calibrate([row], list(block), prior=pi)[0].argmax())]
    return out
