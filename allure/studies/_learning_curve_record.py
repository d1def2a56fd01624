"""The learning curve's records: its ``study.json`` (:class:`LearningCurveRecord`), its fits, and what
it reads from the source run (:class:`CurveData`) and is asked for (:class:`CurvePlan`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from allure.labels import Label
from allure.metrics import CurvePoint
from allure.models import Item, Verdict
from allure.studies._record import StudyRecord


class CurveFit(BaseModel):
    """One fit of the curve: which items it was fitted on and what it learned."""

    size: int
    repeat: int
    fit_ids: list[str]
    """The items fitted on, in review order (all mined audit items: never dev or held-out)."""
    describe: str
    """The fitted read-out in one line (or why none was fitted)."""


class LearningCurveRecord(StudyRecord):
    """``study.json`` of a learning curve: the shared record, the sizes and the curve."""

    kind: str = "learning-curve"
    sizes: list[int] = []
    """The sizes measured (at most the pool)."""
    skipped: list[int] = []
    """Sizes asked for but above the pool (not measured)."""
    repeats: int = 0
    """Review orders (draws) per size."""
    features: list[str] = []
    """The read-out's features."""
    objective: str = "balanced_accuracy"
    """The loop's objective, scored on held-out."""
    pool: int = 0
    """Mined audit items with a reference (what the read-out may be fitted on)."""
    zero_shot_iteration: int | None = None
    """The source run's zero-shot pass whose stored verdicts give the features and the baseline."""
    curve: list[CurvePoint] = []
    """Per size: the objective over draws with its interval, the delta vs zero-shot and its test."""
    fits: list[CurveFit] = []
    """Every fit, by size and review order."""


@dataclass
class CurveData:
    """What the curve reads from the source run's store (no call is made)."""

    pool: list[Item]
    references: dict[str, Label | None]
    verdicts: dict[str, Verdict]
    zero_iteration: int


@dataclass
class CurvePlan:
    """What a learning curve measures: the sizes (and those skipped), draws per size, features."""

    sizes: list[int]
    """Sizes measured (at most the pool), ascending."""
    skipped: list[int]
    """Sizes asked for above the pool."""
    repeats: int
    """Review orders per size."""
    features: list[str]
    """The read-out's features (``z``, ``vote``)."""
    fits: list[CurveFit] = field(default_factory=list)
    """Filled by the measurement: every fit."""
