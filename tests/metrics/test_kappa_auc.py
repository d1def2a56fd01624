"""Cohen's kappa, quadratic-weighted kappa and ROC AUC of ``compute_metrics``: scikit-learn, by hand, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import MetricsError, compute_metrics


def _m(t: list[int], p: list[int], **kw: object):  # type: ignore[no-untyped-def]
    labels = kw.pop("labels", sorted(set(t) | set(p)) or [0, 1])
    return compute_metrics(t, p, labels=labels, n_resamples=10, **kw)  # type: ignore[arg-type]


def test_kappa_hand_derived_2x2() -> None:
    # Table (rows rater 1, cols rater 2): [[20, 5], [10, 15]], n = 50.
    # p_o = (20 + 15) / 50 = 0.7
    # rater-1 marginals 25/50, 25/50; rater-2 marginals 30/50, 20/50
    # p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 ; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    y1 = [0] * 25 + [1] * 25
    y2 = [0] * 20 + [1] * 5 + [0] * 10 + [1] * 15
    m = _m(y1, y2)
    assert m.kappa == pytest.approx(0.4)
    assert m.kappa_quadratic == pytest.approx(0.4)  # with two labels the weights change nothing


@pytest.mark.parametrize("seed", range(6))
def test_kappa_matches_sklearn_and_is_symmetric(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = 2 if seed < 3 else 5
    a = rng.integers(0, k, size=80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(0, k, size=80))
    labels = list(range(k))
    ours = _m(a.tolist(), b.tolist(), labels=labels)
    assert ours.kappa == pytest.approx(sk.cohen_kappa_score(a, b), abs=1e-12)
    assert ours.kappa_quadratic == pytest.approx(
        sk.cohen_kappa_score(a, b, labels=labels, weights="quadratic"), abs=1e-12
    )
    assert _m(b.tolist(), a.tolist(), labels=labels).kappa == pytest.approx(ours.kappa, abs=1e-12)
    # Renaming the classes consistently leaves (unweighted) kappa unchanged.
    perm = rng.permutation(k)
    assert _m(perm[a].tolist(), perm[b].tolist(), labels=labels).kappa == pytest.approx(ours.kappa, abs=1e-12)


def test_quadratic_kappa_by_hand_on_a_three_point_scale() -> None:
    # Scale 1..3; reference 1,2,3 ; evaluator 1,3,3. C = [[1,0,0],[0,0,1],[0,0,1]], n = 3.
    # W = (i-j)^2/4: observed disagreement sum(W*C) = W[1][2] = 1/4.
    # rows (1,1,1), cols (1,0,2): E = row col^T / 3 -> E[i][j] = col_j / 3.
    # sum(W*E) = (1/3) * sum_i (W[i][0]*1 + W[i][2]*2) = (1/3) * ((0 + 2) + (1/4 + 2/4) + (1 + 0)) = 5/4
    # kappa_w = 1 - (1/4) / (5/4) = 4/5
    m = _m([1, 2, 3], [1, 3, 3], labels=[1, 2, 3])
    assert m.kappa_quadratic == pytest.approx(4 / 5)


def test_kappa_degenerate() -> None:
    assert _m([], []).kappa is None
    assert _m([1, 1, 1], [1, 1, 1]).kappa is None  # p_e = 1: undefined
    # Perfect disagreement on a balanced pair: p_o = 0, p_e = 0.5 -> -1
    assert _m([0, 1], [1, 0]).kappa == pytest.approx(-1.0)


@pytest.mark.parametrize("seed", range(6))
def test_auc_matches_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, size=120)
    scores = np.round(rng.random(120), 1)  # rounding creates many ties
    p = (scores > 0.5).astype(int).tolist()

    def auc(truth: np.ndarray, s: np.ndarray, pos: int = 1) -> float | None:
        return compute_metrics(truth.tolist(), p, pos_label=pos, prob_positive=s.tolist(), n_resamples=10).auc

    assert auc(t, scores) == pytest.approx(sk.roc_auc_score(t, scores), abs=1e-12)
    # A strictly increasing transform of the scores leaves the AUC unchanged (kept inside [0, 1]).
    assert auc(t, scores**3) == pytest.approx(auc(t, scores), abs=1e-12)
    # Taking the other class as positive and reversing the scores gives the same AUC.
    assert auc(t, 1 - scores, pos=0) == pytest.approx(auc(t, scores), abs=1e-12)


def test_auc_hand_derived_and_its_source() -> None:
    # Positives score 0.9, 0.4; negatives 0.5, 0.1. Pairs (pos > neg): (0.9>0.5),(0.9>0.1),(0.4>0.1) = 3 of 4.
    m = compute_metrics([1, 1, 0, 0], [1, 0, 0, 0], pos_label=1, prob_positive=[0.9, 0.4, 0.5, 0.1])
    assert (m.auc, m.auc_source) == (pytest.approx(0.75), "logprobs")
    # A tie between a positive and a negative counts 1/2: (1 + 0.5) / 2
    assert compute_metrics([1, 0, 0], [1, 1, 0], pos_label=1, prob_positive=[0.5, 0.5, 0.1]).auc == 0.75
    # Hard labels: TPR = 1/2, TNR = 1 -> AUC = (0.5 + 1) / 2 = 0.75
    hard = compute_metrics([1, 1, 0, 0], [1, 0, 0, 0], pos_label=1)
    assert (hard.auc, hard.auc_source) == (pytest.approx(0.75), "hard_labels")
    # One missing probability: fall back to the hard labels for every item.
    mixed = compute_metrics([1, 1, 0, 0], [1, 0, 0, 0], pos_label=1, prob_positive=[0.9, None, 0.3, 0.2])
    assert mixed.auc_source == "hard_labels"
    single = compute_metrics([1, 1], [1, 0], pos_label=1)
    assert single.auc is None and single.auc_source is None  # one class: undefined
    assert compute_metrics([1, 1, 0], [1, 0, 0]).auc is None  # no positive label: no AUC
    with pytest.raises(MetricsError, match=r"prob_positive\[0\]"):
        compute_metrics([1, 0], [1, 0], pos_label=1, prob_positive=[1.5, 0.8])
    with pytest.raises(MetricsError, match="finite"):
        compute_metrics([1, 0], [1, 0], pos_label=1, prob_positive=[float("nan"), 0.1])
