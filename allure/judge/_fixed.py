"""An exported judge's calibration: the values fitted on its audit, as the bundle keeps them.

The audit's pass chose a mode (``auto``), fitted its values and stored them with the pass
(:class:`allure.metrics.CalibrationValues`); a bundle keeps the mode applied and those values
(``p_cf`` per ICL block, the prior ``pi``, the offset ``b``, a registered mode's own), never refitted. Labelling, and the
export's check that they give the pass's labels back (:func:`allure.judge._source.check_reproduces`),
hand them to the pass pipeline (``PassPlan.fixed_calibration``, :mod:`allure.judge._pass`): no
arithmetic of its own here. A block the audit never saw gets its ``p_cf`` from 3 content-free calls
first (:func:`block_name` keys them as the audit did).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from allure.labels import Label
from allure.models import Verdict

if TYPE_CHECKING:
    from allure.passes import FittedCalibration


def block_name(icl_ids: Sequence[str]) -> str:
    """The name of an ICL block, as the audit's calibration names it (``zero-shot`` for none)."""
    from allure.passes import block_name as name

    return name(icl_ids)


@dataclass(frozen=True)
class FittedValues:
    """The calibration a judge applies: the mode and the values fitted on its audit."""

    mode: str = "none"
    """``none`` or a registered mode (what ``auto`` chose, never ``auto``)."""
    p_cf: Mapping[str, Sequence[float]] = field(default_factory=dict)
    """Block name -> the content-free mean distribution (label-set order)."""
    prior: Sequence[float] | None = None
    """``prior``: the label shares of the audit split outside dev (label-set order)."""
    offset: float | None = None
    """``offset``: the logit offset ``b``."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """A registered mode's own values beyond ``prior`` and ``offset`` (its ``keys``), as it fitted them."""

    def as_toml(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "prior": None if self.prior is None else [float(x) for x in self.prior],
            "offset": self.offset,
            "p_cf": {k: [float(x) for x in v] for k, v in sorted(self.p_cf.items())},
            **self.values,
        }

    @classmethod
    def from_toml(cls, table: Mapping[str, Any]) -> FittedValues:
        return cls(
            mode=str(table.get("mode", "none")),
            p_cf={str(k): list(v) for k, v in dict(table.get("p_cf") or {}).items()},
            prior=table.get("prior"),
            offset=table.get("offset"),
            values={k: v for k, v in table.items() if k not in _TABLE},
        )

    @property
    def needs_p_cf(self) -> bool:
        from allure.calibrations import NONE, calibrator_class

        return self.mode != NONE and calibrator_class(self.mode).reads_p_cf


_TABLE = ("mode", "prior", "offset", "p_cf", "configured")
"""The keys of ``judge.toml``'s ``[calibration]`` that are not a registered mode's own values."""


def parsed_label(v: Verdict) -> Label | None:
    """The label as parsed from the output (the store hands back a calibrated one as ``label``)."""
    return v.raw_label if v.raw_label is not None else v.label


def fixed_calibration(
    fitted: FittedValues, labels: list[Label], p_cf_new: dict[str, list[float]]
) -> FittedCalibration:
    """The bundle's values as the pass pipeline applies them (new blocks' ``p_cf`` added)."""
    from allure.passes import FittedCalibration

    prior = (
        {str(lab): float(x) for lab, x in zip(labels, fitted.prior, strict=True)} if fitted.prior else None
    )
    return FittedCalibration(
        fitted.mode,
        p_cf={**p_cf_new, **{k: list(v) for k, v in fitted.p_cf.items()}},
        prior=prior,
        offset=fitted.offset,
        **fitted.values,
    )
