"""compute_metrics and paired_difference: None handling, sklearn agreement, degenerate inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import MetricsError, SplitMetrics, compute_metrics, icl_helped, paired_difference


def _no_nan(obj: object) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(_no_nan(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_no_nan(v) for v in obj)
    return True


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_sklearn_on_parsed_items(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 150
    t: list[int | None] = rng.integers(0, 2, size=n).tolist()
    p: list[int | None] = np.where(rng.random(n) < 0.75, t, 1 - np.asarray(t)).tolist()
    prob = np.clip(np.asarray(p, dtype=float) * 0.6 + rng.random(n) * 0.4, 0, 1).tolist()
    for i in rng.choice(n, size=10, replace=False):
        p[i] = None  # unparsed
    for i in rng.choice(n, size=5, replace=False):
        t[i] = None  # gold check undecided
    m = compute_metrics(t, p, pos_label=1, prob_positive=prob, n_resamples=200, random_state=seed)
    keep = [i for i in range(n) if t[i] is not None and p[i] is not None]
    tk = [t[i] for i in keep]
    pk = [p[i] for i in keep]
    assert m.n == n and m.n_scored == n - 5
    assert m.n_unparsed == sum(1 for i in range(n) if t[i] is not None and p[i] is None)
    assert m.n_parsed == len(keep)
    assert m.accuracy == pytest.approx(sk.accuracy_score(tk, pk))
    assert m.accuracy_all == pytest.approx(sk.accuracy_score(tk, pk) * len(keep) / m.n_scored)
    assert m.precision == pytest.approx(sk.precision_score(tk, pk))
    assert m.recall == pytest.approx(sk.recall_score(tk, pk))
    assert m.f1 == pytest.approx(sk.f1_score(tk, pk))
    assert m.f1_macro == pytest.approx(sk.f1_score(tk, pk, average="macro"))
    assert m.kappa == pytest.approx(sk.cohen_kappa_score(tk, pk))
    assert m.auc == pytest.approx(sk.roc_auc_score(tk, [prob[i] for i in keep]))
    assert m.auc_source == "logprobs"
    assert m.confusion.labels == [0, 1] and m.confusion.matrix == sk.confusion_matrix(tk, pk).tolist()
    for name in ("accuracy", "f1", "kappa", "auc"):
        ci = getattr(m.ci, name)
        assert ci.low <= getattr(m, name) <= ci.high, name
    dumped = m.model_dump(mode="json")
    assert _no_nan(dumped) and SplitMetrics.model_validate_json(m.model_dump_json()) == m


def test_hand_built_example_with_groups() -> None:
    y_true = [1, 1, 0, 0, None, 1]
    y_pred = [1, 0, 0, None, 1, 1]
    m = compute_metrics(
        y_true,
        y_pred,
        pos_label=1,
        problem_types=["x", "x", "y", "y", "y", "y"],
        generators=["g1", "g2", "g1", "g2", "g1", "g2"],
        n_resamples=100,
    )
    # Scored: items 0,1,2,3,5 (5); unparsed: item 3; parsed: 0,1,2,5 -> t=1,1,0,1 p=1,0,0,1, 3 correct.
    assert (m.n, m.n_scored, m.n_no_reference, m.n_unparsed) == (6, 5, 1, 1)
    assert m.accuracy == pytest.approx(3 / 4)
    assert m.accuracy_all == pytest.approx(3 / 5)
    assert m.auc_source == "hard_labels"  # no probabilities given
    assert m.confusion.matrix == [[1, 0], [1, 2]]
    assert m.errors_by_problem_type is not None and m.errors_by_generator is not None
    assert m.errors_by_problem_type[0].group == "x"  # x: 1 error; y: 1 unparsed (tie -> by name)
    assert {r.group: r.errors for r in m.errors_by_generator} == {"g1": 0, "g2": 1}


def test_degenerate_inputs_never_crash() -> None:
    empty = compute_metrics([], [], pos_label=1)
    assert empty.n == 0 and empty.accuracy is None and empty.auc_source is None
    assert empty.confusion.matrix == [[0, 0], [0, 0]]
    intervals = empty.ci.model_dump()
    assert intervals and all(v is None for v in intervals.values())
    single = compute_metrics([1, 1, 1], [1, 1, 0], pos_label=1, n_resamples=50)
    assert single.auc is None and single.auc_source is None
    assert single.kappa == 0.0  # p_o = 2/3, p_e = 1 * 2/3 -> 0
    all_unparsed = compute_metrics([1, 0], [None, None], pos_label=1)
    assert all_unparsed.accuracy is None and all_unparsed.accuracy_all == 0.0
    no_ref = compute_metrics([None, None], [1, 0], pos_label=1)
    assert no_ref.n_scored == 0 and no_ref.accuracy_all is None
    for m in (empty, single, all_unparsed, no_ref):
        assert _no_nan(m.model_dump(mode="json"))


def test_bad_inputs() -> None:
    with pytest.raises(MetricsError, match="not in labels"):
        compute_metrics([0, 2], [0, 1])
    with pytest.raises(MetricsError, match="differ in length"):
        compute_metrics([0, 1], [0, 1], problem_types=["a"])
    with pytest.raises(MetricsError, match="prob_positive"):
        compute_metrics([0, 1], [0, 1], pos_label=1, prob_positive=[0.2, -0.1])
    with pytest.raises(MetricsError, match="pos_label"):
        compute_metrics([0, 1], [0, 1], pos_label=2)


def test_compute_metrics_bootstrap_reproducible() -> None:
    rng = np.random.default_rng(5)
    t = rng.integers(0, 2, 80).tolist()
    p = rng.integers(0, 2, 80).tolist()
    a = compute_metrics(t, p, pos_label=1, n_resamples=200, random_state=3)
    b = compute_metrics(t, p, pos_label=1, n_resamples=200, random_state=3)
    c = compute_metrics(t, p, pos_label=1, n_resamples=200, random_state=4)
    assert a.ci == b.ci and a.ci != c.ci


def test_paired_difference_detects_help_harm_and_noise() -> None:
    rng = np.random.default_rng(0)
    n = 300
    t = rng.integers(0, 2, n)
    weak = np.where(rng.random(n) < 0.6, t, 1 - t).tolist()
    strong = np.where(rng.random(n) < 0.9, t, 1 - t).tolist()
    tl = t.tolist()
    up = paired_difference(tl, weak, strong, n_resamples=500)
    assert up.helped == "yes" and up.ci_low is not None and up.ci_low > 0
    assert up.delta == pytest.approx(sk.accuracy_score(tl, strong) - sk.accuracy_score(tl, weak))
    down = paired_difference(tl, strong, weak, metric="f1", labels=[0, 1], pos_label=1, n_resamples=500)
    assert down.helped == "no" and down.ci_high is not None and down.ci_high < 0
    assert down.delta == pytest.approx(sk.f1_score(tl, weak) - sk.f1_score(tl, strong))
    same = paired_difference(tl, weak, weak, n_resamples=200)
    assert same.delta == 0.0 and same.helped == "unclear"
    assert paired_difference(tl, weak, strong, n_resamples=200, random_state=1) == paired_difference(
        tl, weak, strong, n_resamples=200, random_state=1
    )


def test_paired_difference_counts_unparsed_as_wrong() -> None:
    t = [1, 0, 1, 0, None]
    a = [1, 0, None, None, 1]
    b = [1, 0, 1, 0, 0]
    acc = paired_difference(t, a, b, n_resamples=100)
    # Item 4 has no reference and is dropped; A gets 2/4 right, B 4/4.
    assert acc.n == 4 and acc.value_a == 0.5 and acc.value_b == 1.0
    f1 = paired_difference(t, a, b, metric="f1", labels=[0, 1], pos_label=1, n_resamples=100)
    # A: item 2 (ref 1, unparsed) -> fn; item 3 (ref 0, unparsed) -> fp; tp = 1 -> F1 = 2/(2+1+1)
    assert f1.value_a == pytest.approx(0.5)
    both = icl_helped(t, a, b, labels=[0, 1], pos_label=1, n_resamples=100)
    assert set(both) == {"accuracy", "f1"} and both["f1"] == f1
    none_defined = paired_difference([0, 0], [0, 0], [0, 0], metric="f1", pos_label=0, labels=[0, 1])
    assert none_defined.value_a == 1.0  # class 0 is the positive one here: perfect F1
    undefined = paired_difference([0, 0], [0, 0], [0, 0], metric="f1", labels=[0, 1], pos_label=1)
    assert undefined.delta is None and undefined.helped == "unclear"
    with pytest.raises(MetricsError, match="metric"):
        paired_difference(t, a, b, metric="kappa")  # type: ignore[arg-type]


def test_icl_helped_takes_the_positive_label_and_macro_f1_without_one() -> None:
    # Reference fail, fail, pass, pass; first pass gets item 2 wrong, last pass gets everything right.
    t = ["fail", "fail", "pass", "pass"]
    first = ["fail", "fail", "fail", "pass"]
    last = ["fail", "fail", "pass", "pass"]
    labels = ["fail", "pass"]
    on_fail = icl_helped(t, first, last, labels=labels, pos_label="fail", n_resamples=50)
    # F1 of "fail" before: tp=2, fp=1, fn=0 -> 4/5; after 1.
    assert on_fail["f1"].value_a == pytest.approx(4 / 5) and on_fail["f1"].value_b == 1.0
    on_pass = icl_helped(t, first, last, labels=labels, pos_label="pass", n_resamples=50)
    # F1 of "pass" before: tp=1, fp=0, fn=1 -> 2/3.
    assert on_pass["f1"].value_a == pytest.approx(2 / 3)
    macro = icl_helped(t, first, last, labels=labels, pos_label=None, n_resamples=50)
    assert macro["f1"].value_a == pytest.approx((4 / 5 + 2 / 3) / 2)
    # Unparsed without a positive label: a false negative of its reference's class only.
    three = ["lo", "mid", "hi"]
    m = paired_difference(three, [None, "mid", "hi"], three, metric="f1", labels=three, n_resamples=50)
    # lo: tp=0, fn=1 -> F1 0; mid, hi: 1 -> macro 2/3
    assert m.value_a == pytest.approx(2 / 3) and m.value_b == 1.0
