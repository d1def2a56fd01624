"""The learned read-out: the pass's last step, mapping verdicts (and their label probabilities) to labels.

Features (``_features``), the fitted model (``_learned``: :class:`LearnedReadout`), the memory vote's voters (``_vote``), the pass step and
its guard (``_step``: :class:`PassReadout`), a read-out rebuilt from a run's stored record
(``_stored``) and the learning curve (``_curve``). Names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.passes.readout._curve import CurveDraw, judge_verdicts, readout_curve, review_order
    from allure.passes.readout._features import FeatureTable, feature_table
    from allure.passes.readout._learned import (
        LearnedReadout,
        PassOrders,
        ReadoutInputMissing,
        ReadoutLeak,
        ReadoutMode,
        fit_learned_readout,
        probability_features,
    )
    from allure.passes.readout._step import PassReadout, ReadoutRead, probable_only
    from allure.passes.readout._stored import spec_readout, stored_readout
    from allure.passes.readout._vote import VoteSource, memory_vote_source

_WHERE = {
    "CurveDraw": "_curve",
    "judge_verdicts": "_curve",
    "readout_curve": "_curve",
    "review_order": "_curve",
    "FeatureTable": "_features",
    "feature_table": "_features",
    "LearnedReadout": "_learned",
    "PassOrders": "_learned",
    "ReadoutInputMissing": "_learned",
    "ReadoutLeak": "_learned",
    "ReadoutMode": "_learned",
    "VoteSource": "_vote",
    "fit_learned_readout": "_learned",
    "memory_vote_source": "_vote",
    "probability_features": "_learned",
    "PassReadout": "_step",
    "ReadoutRead": "_step",
    "probable_only": "_step",
    "spec_readout": "_stored",
    "stored_readout": "_stored",
}

__all__ = [
    "CurveDraw",
    "judge_verdicts",
    "readout_curve",
    "review_order",
    "FeatureTable",
    "feature_table",
    "LearnedReadout",
    "PassOrders",
    "ReadoutInputMissing",
    "ReadoutLeak",
    "ReadoutMode",
    "VoteSource",
    "fit_learned_readout",
    "memory_vote_source",
    "probability_features",
    "PassReadout",
    "ReadoutRead",
    "probable_only",
    "spec_readout",
    "stored_readout",
]

__getattr__ = lazy_exports(__name__, _WHERE)
