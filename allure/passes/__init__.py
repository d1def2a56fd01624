"""The pass pipeline: from the judge's answers to verdicts (evaluate -> swap -> debias -> calibrate -> read-out).

:func:`run_pass` runs one pass as a :class:`PassPlan` describes it (``_pipeline``); :func:`plan_from_spec`
turns an audit spec into that plan (``_plan_spec``). The steps: the swapped order of a pairwise item
(``_swap``), the reversed question (``_polarity``), calibration (``_calibrate``, its modes in
``_calibrate_modes``: each a :class:`Calibrator` registered by name with
``@register_calibration``, :mod:`allure.calibrations`; the content-free inputs in ``_content_free``) and the learned read-out
(:mod:`allure.passes.readout`). It asks the judge only through :mod:`allure.evaluator`'s
:class:`~allure.evaluator.Evaluator`. Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.calibrations import register_calibration
    from allure.passes._calibrate import (
        NO_PROBS,
        CalibrationOutcome,
        CalibrationTarget,
        FittedCalibration,
        apply_fitted,
        calibrate_pass,
    )
    from allure.passes._calibrate_modes import CalibrationInput, Calibrator, calibrator
    from allure.passes._content_free import CF_PREFIX, block_name, content_free_item
    from allure.passes._pipeline import (
        RECORDED,
        DebiasSummary,
        PassOutcome,
        PassPlan,
        PassStats,
        Readout,
        ReadoutOutcome,
        run_pass,
    )
    from allure.passes._plan_spec import extra_calls, plan_from_spec, readout_reads, reference_shares
    from allure.passes._polarity import REVERSED, PolarityVariant, polarity_variant
    from allure.passes._swap import (
        FALLBACK_NOTE,
        SWAPPED,
        debias_verdicts,
        replay_items,
        swapped_item,
        swapped_order,
        swaps_positions,
    )

_WHERE = {
    "NO_PROBS": "_calibrate",
    "CalibrationOutcome": "_calibrate",
    "CalibrationTarget": "_calibrate",
    "FittedCalibration": "_calibrate",
    "apply_fitted": "_calibrate",
    "calibrate_pass": "_calibrate",
    "CalibrationInput": "_calibrate_modes",
    "Calibrator": "_calibrate_modes",
    "calibrator": "_calibrate_modes",
    "register_calibration": "allure.calibrations",
    "CF_PREFIX": "_content_free",
    "block_name": "_content_free",
    "content_free_item": "_content_free",
    "RECORDED": "_pipeline",
    "DebiasSummary": "_pipeline",
    "PassOutcome": "_pipeline",
    "PassPlan": "_pipeline",
    "PassStats": "_pipeline",
    "Readout": "_pipeline",
    "ReadoutOutcome": "_pipeline",
    "run_pass": "_pipeline",
    "extra_calls": "_plan_spec",
    "plan_from_spec": "_plan_spec",
    "readout_reads": "_plan_spec",
    "reference_shares": "_plan_spec",
    "REVERSED": "_polarity",
    "PolarityVariant": "_polarity",
    "polarity_variant": "_polarity",
    "FALLBACK_NOTE": "_swap",
    "SWAPPED": "_swap",
    "debias_verdicts": "_swap",
    "replay_items": "_swap",
    "swapped_item": "_swap",
    "swapped_order": "_swap",
    "swaps_positions": "_swap",
}

__all__ = [
    "NO_PROBS",
    "CalibrationOutcome",
    "CalibrationTarget",
    "FittedCalibration",
    "apply_fitted",
    "calibrate_pass",
    "CalibrationInput",
    "Calibrator",
    "calibrator",
    "register_calibration",
    "CF_PREFIX",
    "block_name",
    "content_free_item",
    "RECORDED",
    "DebiasSummary",
    "PassOutcome",
    "PassPlan",
    "PassStats",
    "Readout",
    "ReadoutOutcome",
    "run_pass",
    "extra_calls",
    "plan_from_spec",
    "readout_reads",
    "reference_shares",
    "REVERSED",
    "PolarityVariant",
    "polarity_variant",
    "FALLBACK_NOTE",
    "SWAPPED",
    "debias_verdicts",
    "replay_items",
    "swapped_item",
    "swapped_order",
    "swaps_positions",
]

__getattr__ = lazy_exports(__name__, _WHERE)
