"""compute_metrics and paired_difference: None handling, sklearn agreement, degenerate inputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import MetricsError, compute_metrics, first_vs_last, paired_difference


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
    m = compute_metrics(t, p, prob_positive=prob, n_resamples=200, random_state=seed)
    keep = [i for i in range(n) if t[i] is not None and p[i] is not None]
    tk = [t[i] for i in keep]
    pk = [p[i] for i in keep]
    assert m["n"] == n and m["n_scored"] == n - 5
    assert m["n_unparsed"] == sum(1 for i in range(n) if t[i] is not None and p[i] is None)
    assert m["n_parsed"] == len(keep)
    assert m["accuracy"] == pytest.approx(sk.accuracy_score(tk, pk))
    assert m["accuracy_all"] == pytest.approx(sk.accuracy_score(tk, pk) * len(keep) / m["n_scored"])
    assert m["precision"] == pytest.approx(sk.precision_score(tk, pk))
    assert m["recall"] == pytest.approx(sk.recall_score(tk, pk))
    assert m["f1"] == pytest.approx(sk.f1_score(tk, pk))
    assert m["f1_macro"] == pytest.approx(sk.f1_score(tk, pk, average="macro"))
    assert m["kappa"] == pytest.approx(sk.cohen_kappa_score(tk, pk))
    assert m["auc"] == pytest.approx(sk.roc_auc_score(tk, [prob[i] for i in keep]))
    assert m["auc_source"] == "logprobs"
    assert m["confusion"] == {"labels": [0, 1], "matrix": sk.confusion_matrix(tk, pk).tolist()}
    for name in ("accuracy", "f1", "kappa", "auc"):
        ci = m["ci"][name]
        assert ci["low"] <= m[name] <= ci["high"], name
    assert _no_nan(m) and json.loads(json.dumps(m)) == m


def test_hand_built_example_with_groups() -> None:
    y_true = [1, 1, 0, 0, None, 1]
    y_pred = [1, 0, 0, None, 1, 1]
    m = compute_metrics(
        y_true,
        y_pred,
        problem_types=["x", "x", "y", "y", "y", "y"],
        generators=["g1", "g2", "g1", "g2", "g1", "g2"],
        n_resamples=100,
    )
    # Scored: items 0,1,2,3,5 (5); unparsed: item 3; parsed: 0,1,2,5 -> t=1,1,0,1 p=1,0,0,1, 3 correct.
    assert (m["n"], m["n_scored"], m["n_no_reference"], m["n_unparsed"]) == (6, 5, 1, 1)
    assert m["accuracy"] == pytest.approx(3 / 4)
    assert m["accuracy_all"] == pytest.approx(3 / 5)
    assert m["auc_source"] == "hard_labels"  # no probabilities given
    assert m["confusion"]["matrix"] == [[1, 0], [1, 2]]
    assert m["errors_by_problem_type"][0]["group"] == "x"  # x: 1 error; y: 1 unparsed (tie -> by name)
    assert {r["group"]: r["errors"] for r in m["errors_by_generator"]} == {"g1": 0, "g2": 1}


def test_degenerate_inputs_never_crash() -> None:
    empty = compute_metrics([], [])
    assert empty["n"] == 0 and empty["accuracy"] is None and empty["auc_source"] is None
    assert empty["confusion"]["matrix"] == [[0, 0], [0, 0]]
    assert all(v is None for v in empty["ci"].values())
    single = compute_metrics([1, 1, 1], [1, 1, 0], n_resamples=50)
    assert single["auc"] is None and single["auc_source"] is None
    assert single["kappa"] == 0.0  # p_o = 2/3, p_e = 1 * 2/3 -> 0
    all_unparsed = compute_metrics([1, 0], [None, None])
    assert all_unparsed["accuracy"] is None and all_unparsed["accuracy_all"] == 0.0
    no_ref = compute_metrics([None, None], [1, 0])
    assert no_ref["n_scored"] == 0 and no_ref["accuracy_all"] is None
    for m in (empty, single, all_unparsed, no_ref):
        assert _no_nan(m)
        json.dumps(m)


def test_bad_inputs() -> None:
    with pytest.raises(MetricsError, match="not in labels"):
        compute_metrics([0, 2], [0, 1])
    with pytest.raises(MetricsError, match="differ in length"):
        compute_metrics([0, 1], [0, 1], problem_types=["a"])
    with pytest.raises(MetricsError, match="prob_positive"):
        compute_metrics([0, 1], [0, 1], prob_positive=[0.2, -0.1])
    with pytest.raises(MetricsError, match="pos_label"):
        compute_metrics([0, 1], [0, 1], pos_label=2)


def test_compute_metrics_bootstrap_reproducible() -> None:
    rng = np.random.default_rng(5)
    t = rng.integers(0, 2, 80).tolist()
    p = rng.integers(0, 2, 80).tolist()
    a = compute_metrics(t, p, n_resamples=200, random_state=3)
    b = compute_metrics(t, p, n_resamples=200, random_state=3)
    c = compute_metrics(t, p, n_resamples=200, random_state=4)
    assert a["ci"] == b["ci"] and a["ci"] != c["ci"]


def test_paired_difference_detects_help_harm_and_noise() -> None:
    rng = np.random.default_rng(0)
    n = 300
    t = rng.integers(0, 2, n)
    weak = np.where(rng.random(n) < 0.6, t, 1 - t).tolist()
    strong = np.where(rng.random(n) < 0.9, t, 1 - t).tolist()
    tl = t.tolist()
    up = paired_difference(tl, weak, strong, n_resamples=500)
    assert up["helped"] == "yes" and up["ci_low"] > 0
    assert up["delta"] == pytest.approx(sk.accuracy_score(tl, strong) - sk.accuracy_score(tl, weak))
    down = paired_difference(tl, strong, weak, metric="f1", n_resamples=500)
    assert down["helped"] == "no" and down["ci_high"] < 0
    assert down["delta"] == pytest.approx(sk.f1_score(tl, weak) - sk.f1_score(tl, strong))
    same = paired_difference(tl, weak, weak, n_resamples=200)
    assert same["delta"] == 0.0 and same["helped"] == "unclear"
    assert paired_difference(tl, weak, strong, n_resamples=200, random_state=1) == paired_difference(
        tl, weak, strong, n_resamples=200, random_state=1
    )


def test_paired_difference_counts_unparsed_as_wrong() -> None:
    t = [1, 0, 1, 0, None]
    a = [1, 0, None, None, 1]
    b = [1, 0, 1, 0, 0]
    acc = paired_difference(t, a, b, n_resamples=100)
    # Item 4 has no reference and is dropped; A gets 2/4 right, B 4/4.
    assert acc["n"] == 4 and acc["value_a"] == 0.5 and acc["value_b"] == 1.0
    f1 = paired_difference(t, a, b, metric="f1", n_resamples=100)
    # A: item 2 (ref 1, unparsed) -> fn; item 3 (ref 0, unparsed) -> fp; tp = 1 -> F1 = 2/(2+1+1)
    assert f1["value_a"] == pytest.approx(0.5)
    both = first_vs_last(t, a, b, n_resamples=100)
    assert set(both) == {"accuracy", "f1"} and both["f1"] == f1
    none_defined = paired_difference([0, 0], [0, 0], [0, 0], metric="f1", n_resamples=50)
    assert none_defined["delta"] is None and none_defined["helped"] == "unclear"
    with pytest.raises(MetricsError, match="metric"):
        paired_difference(t, a, b, metric="kappa")  # type: ignore[arg-type]
