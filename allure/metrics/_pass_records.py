"""What a pass's post-processing fitted, as typed records the store keeps with the pass: the read-out
(:class:`ReadoutRecord`) and the calibration values (:class:`CalibrationValues`).

The pass pipeline returns it (``PassOutcome.readout.record``), the loop stores it with the pass's
memory version (run info ``readout_<it>``, serialised by :meth:`ReadoutRecord.stored`) and every
reader (the guard's out-of-fold labels, the refit after an approval, a re-audit, an exported judge,
report.md, ``memory stats``) reads it back through :meth:`ReadoutRecord.read`. Its serialised form is
the flat dict runs have always stored, so a stored run of any age parses into it.

:class:`CalibrationValues` are the values the pass's calibration applied (``p_cf`` per ICL block,
and what its mode fitted: the prior, the offset, ...; ``CalibrationOutcome.fitted``): the loop stores them with the pass (run info
``calibration_<it>``) and an exported judge carries them as they are, no refit.

Both sit in ``metrics/`` beside :class:`~allure.metrics.FittedReadout`, below the store that persists them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from allure.metrics._common import Label
from allure.metrics._readout import FittedReadout


class ReadoutFit(BaseModel):
    """The fit items as fitted: each item's id, features (columns as the record's ``features``) and
    label (an auditor's corrected label winning over the gold check); a refit reads them."""

    model_config = ConfigDict(extra="ignore")

    ids: list[str] = []
    x: list[list[float]] = []
    y: list[Label] = []


class ReadoutRecord(BaseModel):
    """One pass's read-out: its decision, and, when one was applied, what was fitted (see the module).

    A record whose :attr:`features` are empty holds no fitted read-out (``readout = "auto"`` kept
    the parsed labels, or nothing could be fitted): only :attr:`decision` and :attr:`changed` say
    anything."""

    model_config = ConfigDict(extra="ignore")

    decision: str = ""
    """What the step decided, in words (``read-out (auto): adopted out of fold (...)``)."""
    changed: int = 0
    """Items whose label the read-out changed."""
    mode: Literal["logistic", "knn"] | None = None
    features: tuple[str, ...] = ()
    """Feature names in column order; empty: no read-out applied."""
    n: int = 0
    """Fit items."""
    positive: Label | None = None
    """The label ``z`` is the log-odds of (two labels)."""
    describe: str = ""
    fitted_at: str = ""
    """When it was fitted (UTC, ISO 8601; a ``knn`` read-out: when it took its neighbours)."""
    labels: tuple[str, ...] = ()
    """A logistic read-out's classes (as :class:`FittedReadout`); the fields to :attr:`n_per_label` are its model."""
    coef: list[list[float]] = []
    intercept: list[float] = []
    C: float | None = None
    cv_score: float | None = None
    cv_folds: int | None = None
    n_per_label: dict[str, int] = {}
    objective: str = "balanced_accuracy"
    seed: int = 0
    fit: ReadoutFit | None = None
    """The fit items' features and labels (a refit after an approval reads them, no call)."""
    fit_ids: list[str] = []
    fold_fit_ids: dict[str, list[str]] = {}
    """Cross-fitted: fold -> the items its read-out was fitted on (never the fold's)."""
    out_of_fold: dict[str, Label | None] = {}
    """Cross-fitted, when applied: audit item id -> the label of the read-out fitted on the other
    folds (what the loop's decisions read)."""
    memory_version: str = ""
    """The content hash of the memory version the pass ran with (set when the loop stores it)."""

    @property
    def applied(self) -> bool:
        """Whether the record holds a fitted read-out (the pass applied it)."""
        return bool(self.features)

    @property
    def fitted(self) -> FittedReadout | None:
        """A logistic read-out's model (``None``: kNN, or nothing fitted)."""
        if self.mode != "logistic" or not self.coef:
            return None
        return FittedReadout.model_validate({k: getattr(self, k) for k in FittedReadout.model_fields})

    @classmethod
    def read(cls, stored: Any) -> ReadoutRecord | None:
        """A stored record (run info ``readout_<it>``, a refit's ``current``) made typed again; ``None``
        when ``stored`` is not a record (absent)."""
        if isinstance(stored, ReadoutRecord):
            return stored
        return cls.model_validate(stored) if isinstance(stored, Mapping) else None

    def stored(self) -> dict[str, Any]:
        """The record as run info keeps it (JSON; the flat form every run has stored). A record
        without a fitted read-out keeps only what it says (its decision, changes and fits)."""
        out = self.model_dump(mode="json")
        if not self.applied:
            keep = ("decision", "changed", "fit_ids", "fold_fit_ids", "memory_version")
            out = {k: v for k, v in out.items() if k in keep and (v or k in ("decision", "changed"))}
        elif self.fit is None:
            out.pop("fit")
        return out

    def shown(self) -> dict[str, Any]:
        """What report.md, the loop's history and ``memory stats`` show: :meth:`stored` without the
        fit items' features."""
        return {k: v for k, v in self.stored().items() if k != "fit"}


class CalibrationValues(BaseModel):
    """The calibration a pass applied, with the values it fitted (see the module), applied as they
    are to another pass by :func:`allure.passes.apply_fitted` (``allure.passes.FittedCalibration``).

    Its JSON form (run info ``calibration_<it>``) has always held ``mode``, ``p_cf``, ``prior`` and
    ``offset``, the built-in modes' values; a mode registered since (:mod:`allure.calibrations`)
    keeps its own values (its ``keys``) as further keys beside them."""

    model_config = ConfigDict(extra="allow")

    mode: str = "none"
    """What was applied (``auto``'s choice, never ``auto``; ``none``: the parsed labels stood)."""
    p_cf: dict[str, list[float]] = {}
    """A mode that reads ``p_cf`` (``contextual``, ``prior``): ICL block name -> the content-free
    mean, in label-set order."""
    prior: dict[str, float] | None = None
    """``prior``: label string -> share."""
    offset: float | None = None
    """``offset``: the positive label's logit offset ``b``."""

    def __init__(self, mode: str = "none", **values: Any) -> None:
        super().__init__(mode=mode, **values)

    def values(self) -> dict[str, Any]:
        """The values fitted, by name (``prior``, ``offset``, a registered mode's own), ``p_cf`` apart."""
        return {"prior": self.prior, "offset": self.offset, **(self.model_extra or {})}
