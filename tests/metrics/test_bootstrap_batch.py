"""The vectorised resample statistics agree with scikit-learn on every resample."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import bootstrap_indices, compute_metrics, percentile_interval
from allure.metrics._batch import batch_accuracy, batch_auc, batch_f1, batch_kappa, resample_confusions


def _nan_none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [6, 50])
def test_batch_statistics_match_sklearn_per_resample(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.7, t, 1 - t)
    scores = np.round(rng.random(n), 1)  # ties
    idx = bootstrap_indices(n, n_resamples=40, random_state=seed)
    cms = resample_confusions(t * 2 + p, 2, idx)
    acc, f1, kap = batch_accuracy(cms), batch_f1(cms, 1), batch_kappa(cms)
    auc = batch_auc(t, scores, idx)
    for b, row in enumerate(idx):
        tb, pb, sb = t[row], p[row], scores[row]
        assert cms[b].tolist() == sk.confusion_matrix(tb, pb, labels=[0, 1]).tolist()
        assert acc[b] == pytest.approx(sk.accuracy_score(tb, pb))
        assert _nan_none(f1[b]) == pytest.approx(_nan_none(sk.f1_score(tb, pb, zero_division=np.nan)))
        if len(set(tb) | set(pb)) == 1:
            assert np.isnan(kap[b])  # p_e = 1: undefined
        else:
            assert kap[b] == pytest.approx(sk.cohen_kappa_score(tb, pb))
        if len(set(tb)) == 1:
            assert np.isnan(auc[b])
        else:
            assert auc[b] == pytest.approx(sk.roc_auc_score(tb, sb))


def test_compute_metrics_ci_equals_a_sklearn_bootstrap_on_the_same_resamples() -> None:
    rng = np.random.default_rng(9)
    n = 90
    t = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.8, t, 1 - t)
    prob = rng.random(n)
    m = compute_metrics(t.tolist(), p.tolist(), prob_positive=prob.tolist(), n_resamples=300, random_state=4)
    idx = bootstrap_indices(n, n_resamples=300, random_state=4)
    expected = {
        "accuracy": [sk.accuracy_score(t[r], p[r]) for r in idx],
        "kappa": [sk.cohen_kappa_score(t[r], p[r]) for r in idx],
        "auc": [sk.roc_auc_score(t[r], prob[r]) for r in idx],
    }
    for name, vals in expected.items():
        ref = percentile_interval([float(v) for v in vals])
        assert ref is not None and m["ci"][name] == {
            "low": pytest.approx(ref["low"]),
            "high": pytest.approx(ref["high"]),
        }
