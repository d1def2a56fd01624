"""The ``[loop]`` table (:class:`LoopSpec`): the loop's objective, splits, cross-fitting folds,
guard and stop rule."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from allure.config._messages import SpecFieldError

Objective = Literal["balanced_accuracy", "kappa", "macro_f1", "accuracy"]
"""The objective of the loop's decisions and claims (see :class:`LoopSpec`)."""


class LoopSpec(BaseModel):
    """The ALLURE loop's control."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    max_iterations: int = Field(default=3, ge=1)
    """Evaluation passes at most (the first is zero-shot if the memory is empty)."""
    heldout_fraction: float = Field(default=0.3, ge=0.0, lt=1.0)
    """Share of items held out (never mined for examples; improvement is measured there).
    0 makes every item an audit item (e.g. to list every disagreement of a replayed evaluator)."""
    bootstrap_resamples: int = Field(default=1000, ge=100)
    """Bootstrap resamples for the 95% intervals."""
    seed: int = 0
    """Seed of the split and of any sampling."""
    stop_when_no_gain: StrictBool = True
    """Stop when the objective on the decision data (the audit split out of fold, or the dev split
    with ``folds = 0``) did not rise over the active memory version's."""
    successes: int = Field(default=0, ge=0, le=10_000)
    """Also propose up to this many of the judge's *correct* audit verdicts per pass as examples
    (``source = "success"``), beside its corrected mistakes (0: mistakes only, ALLURE's memory)."""
    objective: Objective = "balanced_accuracy"
    """What every decision (the guard, the stop rule) and every helped/hurt claim uses: balanced
    accuracy (mean recall over the label set: chance is 1/K whatever the label prior), Cohen's
    kappa, macro F1, or accuracy (gameable by the label prior on imbalanced labels)."""
    folds: int = Field(default=5, ge=0, le=100)
    """Cross-fitting folds of the audit split (issue 34 item 0): the decision data of the guard,
    ``calibration = "auto"`` and ``readout = "auto"``. With ``folds >= 2`` no dev split is carved:
    every audit item is mined, and every audit item with a reference label decides, out of fold.
    The audit items are dealt into folds (seeded by ``seed``, stratified by reference label,
    derived again by any process that resumes the run); an audit item of fold ``j`` is prompted with
    the memory's examples *except* those mined from fold ``j``'s items (filtered before the policy
    chooses, so it still gets ``k``), and ``auto`` fits on the other folds' items and scores on fold
    ``j``. One call per item per pass still: held-out items get the whole memory, and what is
    applied to them is fitted on every audit item. 100 audit items are 100 paired decisions, not 30.
    0: today's dev split (``dev_fraction`` of the audit items, never mined, decides); a ``[loop]``
    that sets ``dev_fraction`` and not ``folds`` means 0 (a stored run from before keeps its rule).
    1 is refused."""
    dev_fraction: float = Field(default=0.3, ge=0.0, lt=1.0)
    """``folds = 0`` only: the share of the audit items carved out as the dev split (stratified by
    problem type, seeded): never mined for examples; the guard and the stop rule read it. 0: no dev
    split, the guard is off. Ignored when the loop cross-fits (``folds >= 2``)."""
    guard: StrictBool = True
    """Adopt a new memory version only when it is *better* than the active one on the decision data
    (every audit item out of fold, or the dev split with ``folds = 0``; the one-sided test of
    :func:`allure.metrics.better_p` at the memory's level in the run's family, see ``guard_alpha``):
    zero-shot stays active on no evidence."""
    guard_margin: float = Field(default=0.0, ge=0.0, le=1.0)
    """The least rise of the objective on the decision data the guard adopts (0: any significant rise)."""
    guard_alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    """The run's family-wise level of every adoption decision (issue 41; docs/DECISIONS.md): split
    in equal shares over the kinds the run may adopt (calibration ``auto``'s modes, Holm within a
    pass; the read-out ``auto``; each new memory version, over the configurations a pass may end
    with), so the chance that a run adopts anything that is not better is at most this
    (:func:`decision_family`)."""
    guard_min_per_label: int = Field(default=10, ge=1, le=10_000)
    """The guard adopts nothing when the decision data holds fewer reference labels than this of some
    label (e.g. 3 "yes" items): such data cannot detect a difference of the size that matters."""
    max_candidates: int | None = Field(default=None, ge=1)
    """Propose at most this many candidates per iteration (seeded sample, stratified by problem type;
    1 or more; unset: every one)."""

    @model_validator(mode="before")
    @classmethod
    def _dev_fraction_asks_for_a_dev_split(cls, data: Any) -> Any:
        """A ``[loop]`` that sets ``dev_fraction`` and not ``folds`` asks for the dev split (``folds =
        0``), as every spec before cross-fitting did: a user's ``dev_fraction = 0.5`` is not silently
        ignored, and a run stored before ``folds`` existed resumes under the rule it started with."""
        if isinstance(data, dict) and "dev_fraction" in data and "folds" not in data:
            return {**data, "folds": 0}
        return data

    @field_validator("folds")
    @classmethod
    def _folds(cls, v: int) -> int:
        if v == 1:
            raise SpecFieldError(
                "loop.folds",
                "folds = 1 leaves no other fold to mine or fit on",
                "use folds = 5 (cross-fitting, the default), 2 or more, or folds = 0 (a dev split)",
            )
        return v
