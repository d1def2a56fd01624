"""Accuracy, precision, recall, F1 and the confusion matrix against scikit-learn and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import (
    MetricsError,
    accuracy_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)


def _close(ours: float | None, theirs: float) -> bool:
    if ours is None:
        return bool(np.isnan(theirs))
    return bool(np.isclose(ours, theirs, rtol=0, atol=1e-12))


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("n", [5, 40, 300])
def test_binary_scores_match_sklearn(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    # Skewed classes make undefined precision/recall likely at n=5.
    t = rng.choice([0, 1], size=n, p=[0.7, 0.3]).tolist()
    p = rng.choice([0, 1], size=n, p=[0.6, 0.4]).tolist()
    assert _close(accuracy_score(t, p), sk.accuracy_score(t, p))
    for ours, theirs in [
        (precision_score, sk.precision_score),
        (recall_score, sk.recall_score),
        (f1_score, sk.f1_score),
    ]:
        for average in ("binary", "macro"):
            expected = theirs(t, p, labels=[0, 1], average=average, zero_division=np.nan)
            assert _close(ours(t, p, labels=[0, 1], average=average), expected), (ours.__name__, average)
    assert confusion_matrix(t, p, labels=[0, 1]).tolist() == sk.confusion_matrix(t, p, labels=[0, 1]).tolist()


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_multiclass_macro_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 4, size=60).tolist()
    p = rng.integers(0, 3, size=60).tolist()  # class 3 is never predicted: precision_3 undefined
    for ours, theirs in [(precision_score, sk.precision_score), (recall_score, sk.recall_score)]:
        assert _close(ours(t, p, average="macro"), theirs(t, p, average="macro", zero_division=np.nan))
    assert _close(f1_score(t, p, average="macro"), sk.f1_score(t, p, average="macro", zero_division=np.nan))
    assert confusion_matrix(t, p).tolist() == sk.confusion_matrix(t, p).tolist()


def test_hand_derived_binary_values() -> None:
    # t = 1 1 1 0 0 0 0 ; p = 1 1 0 1 0 0 0 -> tp=2, fn=1, fp=1, tn=3
    t = [1, 1, 1, 0, 0, 0, 0]
    p = [1, 1, 0, 1, 0, 0, 0]
    assert accuracy_score(t, p) == pytest.approx(5 / 7)
    assert precision_score(t, p) == pytest.approx(2 / 3)  # tp / (tp + fp)
    assert recall_score(t, p) == pytest.approx(2 / 3)  # tp / (tp + fn)
    assert f1_score(t, p) == pytest.approx(4 / 6)  # 2tp / (2tp + fp + fn)
    # class 0: tp=3, fp=1, fn=1 -> F1_0 = 6/8; macro = (6/8 + 4/6) / 2
    assert f1_score(t, p, average="macro") == pytest.approx((6 / 8 + 4 / 6) / 2)
    assert confusion_matrix(t, p, labels=[0, 1]).tolist() == [[3, 1], [1, 2]]


def test_degenerate_inputs_give_none_not_nan() -> None:
    assert accuracy_score([], []) is None
    assert f1_score([], []) is None
    # No predicted positives: precision undefined; recall 0; F1 = 0 / (0 + 0 + 2) = 0.
    assert precision_score([1, 1, 0], [0, 0, 0]) is None
    assert recall_score([1, 1, 0], [0, 0, 0]) == 0.0
    assert f1_score([1, 1, 0], [0, 0, 0]) == 0.0
    # Positive class absent everywhere: F1 undefined; macro keeps the defined class only.
    assert f1_score([0, 0], [0, 0], labels=[0, 1]) is None
    assert f1_score([0, 0], [0, 0], labels=[0, 1], average="macro") == 1.0
    assert confusion_matrix([], [], labels=[0, 1]).tolist() == [[0, 0], [0, 0]]


def test_label_permutation_swaps_binary_scores() -> None:
    rng = np.random.default_rng(3)
    t = rng.integers(0, 2, size=50)
    p = rng.integers(0, 2, size=50)
    # Precision of class 1 equals precision of class 0 after relabelling 0 <-> 1.
    assert precision_score(t, p, pos_label=1) == pytest.approx(precision_score(1 - t, 1 - p, pos_label=0))
    assert f1_score(t, p, average="macro") == pytest.approx(f1_score(1 - t, 1 - p, average="macro"))
    assert (
        confusion_matrix(t, p, labels=[0, 1]).tolist()
        == confusion_matrix(1 - t, 1 - p, labels=[1, 0]).tolist()
    )


def test_bad_inputs_raise_metrics_error_with_fix() -> None:
    with pytest.raises(MetricsError, match="differ in length") as exc:
        accuracy_score([0, 1], [0])
    assert exc.value.fix
    with pytest.raises(MetricsError, match=r"y_pred\[1\] is None"):
        f1_score([0, 1], [0, None])  # type: ignore[list-item]
    with pytest.raises(MetricsError, match="not in labels"):
        confusion_matrix([0, 2], [0, 1], labels=[0, 1])
    with pytest.raises(MetricsError, match="average"):
        f1_score([0, 1], [0, 1], average="micro")  # type: ignore[arg-type]
    with pytest.raises(MetricsError, match="pos_label"):
        precision_score([0, 2], [0, 2], labels=[0, 2])
    with pytest.raises(MetricsError, match="not an integer"):
        accuracy_score([0.5], [1])  # type: ignore[list-item]
