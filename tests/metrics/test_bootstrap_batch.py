"""The formulas applied to resampled confusion matrices agree with scikit-learn on every resample."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import bootstrap_indices, compute_metrics, percentile_interval
from allure.metrics._auc import auc
from allure.metrics._confusion import resampled_confusions
from allure.metrics._formulas import accuracy, f1, kappa, quadratic_kappa


def _nan_none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [6, 50])
def test_resample_statistics_match_sklearn_per_resample(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 3, n)
    p = np.where(rng.random(n) < 0.7, t, rng.integers(0, 3, n))
    scores = np.round(rng.random(n), 1)  # ties
    idx = bootstrap_indices(n, n_resamples=40, random_state=seed)
    cms = resampled_confusions(t, p, 3, idx)
    acc, f1_2, kap, qk = accuracy(cms), f1(cms)[:, 2], kappa(cms), quadratic_kappa(cms)
    areas = auc((t == 2).astype(np.int64), scores, idx)
    for b, row in enumerate(idx):
        tb, pb, sb = t[row], p[row], scores[row]
        assert cms[b].tolist() == sk.confusion_matrix(tb, pb, labels=[0, 1, 2]).tolist()
        assert acc[b] == pytest.approx(sk.accuracy_score(tb, pb))
        expected_f1 = sk.f1_score(tb, pb, labels=[2], average="macro", zero_division=np.nan)
        assert _nan_none(f1_2[b]) == pytest.approx(_nan_none(expected_f1))
        if len(set(tb) | set(pb)) == 1:
            assert np.isnan(kap[b])  # p_e = 1: undefined
        else:
            assert kap[b] == pytest.approx(sk.cohen_kappa_score(tb, pb))
            assert qk[b] == pytest.approx(sk.cohen_kappa_score(tb, pb, labels=[0, 1, 2], weights="quadratic"))
        if len(set(tb == 2)) == 1:
            assert np.isnan(areas[b])
        else:
            assert areas[b] == pytest.approx(sk.roc_auc_score(tb == 2, sb))


@pytest.mark.slow
def test_compute_metrics_ci_equals_a_sklearn_bootstrap_on_the_same_resamples() -> None:
    rng = np.random.default_rng(9)
    n = 90
    t = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.8, t, 1 - t)
    prob = rng.random(n)
    m = compute_metrics(
        t.tolist(), p.tolist(), pos_label=1, prob_positive=prob.tolist(), n_resamples=300, random_state=4
    )
    idx = bootstrap_indices(n, n_resamples=300, random_state=4)
    expected = {
        "accuracy": [sk.accuracy_score(t[r], p[r]) for r in idx],
        "kappa": [sk.cohen_kappa_score(t[r], p[r]) for r in idx],
        "auc": [sk.roc_auc_score(t[r], prob[r]) for r in idx],
    }
    for name, vals in expected.items():
        ref = percentile_interval([float(v) for v in vals])
        ours = getattr(m.ci, name)
        assert ref is not None and ours is not None
        assert (ours.low, ours.high) == (pytest.approx(ref.low), pytest.approx(ref.high))
