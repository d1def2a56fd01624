"""Accuracy, precision, recall, F1 and the confusion matrix of ``compute_metrics`` against scikit-learn and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import MetricsError, compute_metrics


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
    m = compute_metrics(t, p, pos_label=1, n_resamples=10)
    assert _close(m.accuracy, sk.accuracy_score(t, p))
    kw = {"labels": [0, 1], "zero_division": np.nan}
    assert _close(m.precision, sk.precision_score(t, p, **kw))
    assert _close(m.recall, sk.recall_score(t, p, **kw))
    assert _close(m.f1, sk.f1_score(t, p, **kw))
    assert _close(m.f1_macro, sk.f1_score(t, p, average="macro", **kw))
    assert m.confusion.matrix == sk.confusion_matrix(t, p, labels=[0, 1]).tolist()
    prec, rec, f1, support = sk.precision_recall_fscore_support(t, p, **kw)
    for c, row in enumerate(m.per_class):
        assert row.label == c and row.support == support[c]
        assert _close(row.precision, prec[c]) and _close(row.recall, rec[c]) and _close(row.f1, f1[c])


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_word_labels_without_a_positive_label_match_sklearn_macro(seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = ["poor", "fair", "good", "great"]
    t = [words[i] for i in rng.integers(0, 4, size=60)]
    p = [
        words[i] for i in rng.integers(0, 3, size=60)
    ]  # "great" is never predicted: its precision is undefined
    m = compute_metrics(t, p, labels=words, n_resamples=10)
    kw = {"labels": words, "zero_division": np.nan}
    assert m.positive_label is None and m.precision is None and m.recall is None and m.auc is None
    assert _close(m.f1, sk.f1_score(t, p, average="macro", **kw))  # no positive label: F1 is macro F1
    assert m.f1 == m.f1_macro
    assert m.per_class[3].label == "great" and m.per_class[3].precision is None
    assert _close(m.per_class[0].recall, sk.recall_score(t, p, average=None, **kw)[0])
    assert m.confusion.labels == words
    assert m.confusion.matrix == sk.confusion_matrix(t, p, labels=words).tolist()
    assert m.ci.f1 is not None and m.ci.auc is None


def test_hand_derived_binary_values() -> None:
    # t = 1 1 1 0 0 0 0 ; p = 1 1 0 1 0 0 0 -> tp=2, fn=1, fp=1, tn=3
    t = [1, 1, 1, 0, 0, 0, 0]
    p = [1, 1, 0, 1, 0, 0, 0]
    m = compute_metrics(t, p, pos_label=1, n_resamples=10)
    assert m.accuracy == pytest.approx(5 / 7)
    assert m.precision == pytest.approx(2 / 3)  # tp / (tp + fp)
    assert m.recall == pytest.approx(2 / 3)  # tp / (tp + fn)
    assert m.f1 == pytest.approx(4 / 6)  # 2tp / (2tp + fp + fn)
    # class 0: tp=3, fp=1, fn=1 -> F1_0 = 6/8; macro = (6/8 + 4/6) / 2
    assert m.f1_macro == pytest.approx((6 / 8 + 4 / 6) / 2)
    assert m.confusion.matrix == [[3, 1], [1, 2]]
    # The same data with words: the figures depend on the codes only.
    w = compute_metrics(
        ["pass" if x else "fail" for x in t],
        ["pass" if x else "fail" for x in p],
        labels=["fail", "pass"],
        pos_label="pass",
        n_resamples=10,
    )
    named = {
        "confusion",
        "per_class",
        "positive_label",
        "reference_shares",
        "predicted_shares",
        "majority_label",
    }
    assert w.model_dump(exclude=named) == m.model_dump(exclude=named)
    assert w.majority_label == "fail" and m.majority_label == 0
    assert w.reference_shares == {"fail": 4 / 7, "pass": 3 / 7} and m.reference_shares == {
        "0": 4 / 7,
        "1": 3 / 7,
    }
    assert w.confusion.matrix == m.confusion.matrix and w.per_class[1].label == "pass"


def test_degenerate_inputs_give_none_not_nan() -> None:
    empty = compute_metrics([], [], pos_label=1)
    assert empty.accuracy is None and empty.f1 is None
    assert empty.confusion.matrix == [[0, 0], [0, 0]]
    # No predicted positives: precision undefined; recall 0; F1 = 0 / (0 + 0 + 2) = 0.
    m = compute_metrics([1, 1, 0], [0, 0, 0], pos_label=1, n_resamples=10)
    assert (m.precision, m.recall, m.f1) == (None, 0.0, 0.0)
    # Positive class absent everywhere: F1 undefined; macro keeps the defined class only.
    absent = compute_metrics([0, 0], [0, 0], pos_label=1, n_resamples=10)
    assert absent.f1 is None and absent.f1_macro == 1.0


def test_label_permutation_swaps_binary_scores() -> None:
    rng = np.random.default_rng(3)
    t = rng.integers(0, 2, size=50).tolist()
    p = rng.integers(0, 2, size=50).tolist()
    a = compute_metrics(t, p, pos_label=1, n_resamples=10)
    # Relabelling 0 <-> 1 and taking 0 as positive gives the same positive-class scores.
    b = compute_metrics([1 - x for x in t], [1 - x for x in p], labels=(1, 0), pos_label=0, n_resamples=10)
    assert (a.precision, a.recall, a.f1) == pytest.approx((b.precision, b.recall, b.f1))
    assert a.f1_macro == pytest.approx(b.f1_macro)
    assert a.confusion.matrix == b.confusion.matrix


def test_bad_inputs_raise_metrics_error_with_fix() -> None:
    with pytest.raises(MetricsError, match="differ in length") as exc:
        compute_metrics([0, 1], [0])
    assert exc.value.fix
    with pytest.raises(MetricsError, match=r"y_true\[1\] = 2 is not in labels"):
        compute_metrics([0, 2], [0, 1])
    with pytest.raises(MetricsError, match="pos_label"):
        compute_metrics([0, 1], [0, 1], pos_label=2)
    with pytest.raises(MetricsError, match=r"y_pred\[0\] = '1' is not in labels"):
        compute_metrics([1], ["1"])  # a word is not the integer it spells
    with pytest.raises(MetricsError, match="distinct labels"):
        compute_metrics([0], [0], labels=(0, 0))
    with pytest.raises(MetricsError, match=r"y_pred\[0\] = 0.5"):
        compute_metrics([1], [0.5])  # type: ignore[list-item]
