"""Cohen's kappa and ROC AUC against scikit-learn, by hand, and under invariances."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import MetricsError, cohen_kappa_score, roc_auc, roc_auc_score


def test_kappa_hand_derived_2x2() -> None:
    # Table (rows rater 1, cols rater 2): [[20, 5], [10, 15]], n = 50.
    # p_o = (20 + 15) / 50 = 0.7
    # rater-1 marginals 25/50, 25/50; rater-2 marginals 30/50, 20/50
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 ; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    y1 = [0] * 25 + [1] * 25
    y2 = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    assert cohen_kappa_score(y1, y2) == pytest.approx(0.4)


@pytest.mark.parametrize("seed", range(6))
def test_kappa_matches_sklearn_and_is_symmetric(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = 2 if seed < 3 else 3
    a = rng.integers(0, k, size=80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(0, k, size=80))
    ours = cohen_kappa_score(a, b)
    assert ours == pytest.approx(sk.cohen_kappa_score(a, b), abs=1e-12)
    assert cohen_kappa_score(b, a) == pytest.approx(ours, abs=1e-12)
    # Renaming the classes consistently leaves kappa unchanged.
    perm = rng.permutation(k)
    assert cohen_kappa_score(perm[a], perm[b]) == pytest.approx(ours, abs=1e-12)


def test_kappa_degenerate() -> None:
    assert cohen_kappa_score([], []) is None
    assert cohen_kappa_score([1, 1, 1], [1, 1, 1]) is None  # p_e = 1: undefined
    # Perfect disagreement on a balanced pair: p_o = 0, p_e = 0.5 -> -1
    assert cohen_kappa_score([0, 1], [1, 0]) == pytest.approx(-1.0)


@pytest.mark.parametrize("seed", range(6))
def test_auc_matches_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, size=120)
    scores = np.round(rng.random(120), 1)  # rounding creates many ties
    assert roc_auc_score(t, scores) == pytest.approx(sk.roc_auc_score(t, scores), abs=1e-12)
    # Any strictly increasing transform of the scores leaves the AUC unchanged.
    assert roc_auc_score(t, np.exp(3 * scores)) == pytest.approx(roc_auc_score(t, scores), abs=1e-12)
    # Swapping the positive class and reversing scores gives the same AUC.
    assert roc_auc_score(1 - t, 1 - scores) == pytest.approx(roc_auc_score(t, scores), abs=1e-12)


def test_auc_hand_derived() -> None:
    # Positives score 0.9, 0.4; negatives 0.5, 0.1. Pairs (pos > neg): (0.9>0.5),(0.9>0.1),(0.4>0.1) = 3 of 4.
    assert roc_auc_score([1, 1, 0, 0], [0.9, 0.4, 0.5, 0.1]) == pytest.approx(0.75)
    # A tie between a positive and a negative counts 1/2: pairs 1 + 0.5 of 2... -> (1 + 0.5) / 2
    assert roc_auc_score([1, 0, 0], [0.5, 0.5, 0.1]) == pytest.approx(0.75)


def test_roc_auc_source_selection() -> None:
    t = [1, 1, 0, 0]
    p = [1, 0, 0, 0]
    # Hard labels: TPR = 1/2, TNR = 1 -> AUC = (0.5 + 1) / 2 = 0.75
    assert roc_auc(t, p) == (pytest.approx(0.75), "hard_labels")
    res = roc_auc(t, p, prob_positive=[0.9, 0.8, 0.3, 0.2])
    assert res.source == "logprobs" and res.auc == pytest.approx(1.0)
    # One missing probability: fall back to the hard labels for every item.
    assert roc_auc(t, p, prob_positive=[0.9, None, 0.3, 0.2]).source == "hard_labels"
    assert roc_auc([1, 1], [1, 0]).auc is None  # single class: undefined
    with pytest.raises(MetricsError, match=r"prob_positive\[0\]"):
        roc_auc(t, p, prob_positive=[1.5, 0.8, 0.3, 0.2])
    with pytest.raises(MetricsError, match="finite"):
        roc_auc_score(t, [float("nan"), 0.1, 0.2, 0.3])
