"""Bootstrap intervals, errors per group and agreement."""

from __future__ import annotations

import numpy as np
import pytest

from allure.metrics import (
    MetricsError,
    agreement,
    bootstrap_ci,
    bootstrap_indices,
    errors_by_group,
    percentile_interval,
)


def test_percentile_interval_by_hand() -> None:
    # Values 0..100: the 2.5th and 97.5th percentiles (linear interpolation) are 2.5 and 97.5.
    vals: list[float | None] = [float(v) for v in range(101)]
    assert percentile_interval(vals) == {"low": pytest.approx(2.5), "high": pytest.approx(97.5)}
    # Undefined resamples are left out; fewer than half defined -> no interval.
    assert percentile_interval([1.0, None, None]) is None
    assert percentile_interval([1.0, 3.0, None]) == {"low": pytest.approx(1.05), "high": pytest.approx(2.95)}


def test_bootstrap_is_reproducible_and_seed_dependent() -> None:
    x = np.random.default_rng(0).random(50)

    def mean(idx: np.ndarray) -> float:
        return float(x[idx].mean())

    a = bootstrap_ci(mean, 50, n_resamples=300, random_state=7)
    b = bootstrap_ci(mean, 50, n_resamples=300, random_state=7)
    c = bootstrap_ci(mean, 50, n_resamples=300, random_state=8)
    assert a == b
    assert a != c
    assert a is not None and a["low"] < x.mean() < a["high"]
    assert bootstrap_indices(4, n_resamples=3, random_state=1).shape == (3, 4)
    assert bootstrap_ci(mean, 0) is None


def test_bootstrap_interval_covers_true_accuracy_about_95_percent() -> None:
    # 200 simulated evaluators with true accuracy 0.7 on 100 items each.
    rng = np.random.default_rng(123)
    hits = 0
    for rep in range(200):
        correct = rng.random(100) < 0.7

        def acc(idx: np.ndarray, c: np.ndarray = correct) -> float:
            return float(c[idx].mean())

        ci = bootstrap_ci(acc, 100, n_resamples=200, random_state=rep)
        assert ci is not None
        hits += ci["low"] <= 0.7 <= ci["high"]
    assert 0.88 <= hits / 200 <= 0.99


def test_bootstrap_settings_are_checked() -> None:
    with pytest.raises(MetricsError, match="n_resamples"):
        bootstrap_ci(lambda idx: 0.0, 3, n_resamples=0)
    with pytest.raises(MetricsError, match="confidence"):
        bootstrap_ci(lambda idx: 0.0, 3, confidence=1.5)


def test_errors_by_group_counts_by_hand() -> None:
    y_true = [1, 0, 1, 1, None, 0, 0]
    y_pred = [0, 0, None, 1, 1, 1, 1]
    groups = ["a", "a", "a", "b", "b", "c", "c"]
    rows = errors_by_group(y_true, y_pred, groups)
    # a: 3 scored, 1 unparsed, 1 wrong (item 0) -> 1/2 parsed wrong, 2/3 wrong overall
    # c: 2 scored, 2 wrong -> 1.0; b: the None reference is skipped, 1 right.
    assert [r["group"] for r in rows] == ["a", "c", "b"]
    a = rows[0]
    assert (a["n"], a["n_unparsed"], a["errors"]) == (3, 1, 1)
    assert a["error_rate"] == pytest.approx(0.5)
    assert a["error_rate_all"] == pytest.approx(2 / 3)
    assert rows[2] == {
        "group": "b",
        "n": 1,
        "n_unparsed": 0,
        "errors": 0,
        "error_rate": 0.0,
        "error_rate_all": 0.0,
    }
    only_unparsed = errors_by_group([1], [None], ["x"])[0]
    assert only_unparsed["error_rate"] is None and only_unparsed["error_rate_all"] == 1.0
    with pytest.raises(MetricsError):
        errors_by_group([1], [1], ["a", "b"])


def test_agreement_overall_and_per_group() -> None:
    a = [1, 0, 1, None, 0]
    b = [1, 1, 1, 0, 0]
    res = agreement(a, b, problem_types=["p", "p", "q", "q", "q"], generators=None)
    assert res["overall"] == {"group": "", "n": 4, "agree": 3, "rate": 0.75}
    assert res["n_missing"] == 1
    assert res["by_problem_type"] == [
        {"group": "p", "n": 2, "agree": 1, "rate": 0.5},
        {"group": "q", "n": 2, "agree": 2, "rate": 1.0},
    ]
    assert res["by_generator"] is None
    assert agreement([], [])["overall"]["rate"] is None
