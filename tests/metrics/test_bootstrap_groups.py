"""Bootstrap intervals and errors per group."""

from __future__ import annotations

import numpy as np
import pytest

from allure.metrics import (
    GroupErrors,
    Interval,
    MetricsError,
    bootstrap_indices,
    compute_metrics,
    errors_by_group,
    percentile_interval,
)


def test_percentile_interval_by_hand() -> None:
    # Values 0..100: the 2.5th and 97.5th percentiles (linear interpolation) are 2.5 and 97.5.
    vals: list[float | None] = [float(v) for v in range(101)]
    ci = percentile_interval(vals)
    assert ci is not None and (ci.low, ci.high) == pytest.approx((2.5, 97.5))
    # Undefined resamples are left out; fewer than half defined -> no interval.
    assert percentile_interval([1.0, None, None]) is None
    ci = percentile_interval([1.0, 3.0, None])
    assert ci is not None and (ci.low, ci.high) == pytest.approx((1.05, 2.95))


def _mean_interval(x: np.ndarray, *, n_resamples: int, random_state: int) -> Interval | None:
    idx = bootstrap_indices(len(x), n_resamples=n_resamples, random_state=random_state)
    return percentile_interval(x[idx].mean(axis=1) if len(x) else [None] * n_resamples)


def test_bootstrap_is_reproducible_and_seed_dependent() -> None:
    x = np.random.default_rng(0).random(50)
    a = _mean_interval(x, n_resamples=300, random_state=7)
    b = _mean_interval(x, n_resamples=300, random_state=7)
    c = _mean_interval(x, n_resamples=300, random_state=8)
    assert a == b
    assert a != c
    assert a is not None and a.low < x.mean() < a.high
    assert bootstrap_indices(4, n_resamples=3, random_state=1).shape == (3, 4)
    assert _mean_interval(np.array([]), n_resamples=10, random_state=0) is None


def test_bootstrap_interval_covers_true_accuracy_about_95_percent() -> None:
    # 200 simulated evaluators with true accuracy 0.7 on 100 items each.
    rng = np.random.default_rng(123)
    hits = 0
    for rep in range(200):
        correct = (rng.random(100) < 0.7).astype(float)
        ci = _mean_interval(correct, n_resamples=200, random_state=rep)
        assert ci is not None
        hits += ci.low <= 0.7 <= ci.high
    assert 0.88 <= hits / 200 <= 0.99


def test_bootstrap_settings_are_checked() -> None:
    with pytest.raises(MetricsError, match="n_resamples"):
        bootstrap_indices(3, n_resamples=0)
    with pytest.raises(MetricsError, match="confidence"):
        percentile_interval([0.0], confidence=1.5)
    with pytest.raises(MetricsError, match="n_resamples"):
        compute_metrics([0], [0], n_resamples=0)


def test_errors_by_group_counts_by_hand() -> None:
    y_true = [1, 0, 1, 1, None, 0, 0]
    y_pred = [0, 0, None, 1, 1, 1, 1]
    groups = ["a", "a", "a", "b", "b", "c", "c"]
    rows = errors_by_group(y_true, y_pred, groups)
    # a: 3 scored, 1 unparsed, 1 wrong (item 0) -> 1/2 parsed wrong, 2/3 wrong overall
    # c: 2 scored, 2 wrong -> 1.0; b: the None reference is skipped, 1 right.
    assert [r.group for r in rows] == ["a", "c", "b"]
    a = rows[0]
    assert (a.n, a.n_unparsed, a.errors) == (3, 1, 1)
    assert a.error_rate == pytest.approx(0.5)
    assert a.error_rate_all == pytest.approx(2 / 3)
    assert rows[2] == GroupErrors(group="b", n=1, n_unparsed=0, errors=0, error_rate=0.0, error_rate_all=0.0)
    only_unparsed = errors_by_group([1], [None], ["x"])[0]
    assert only_unparsed.error_rate is None and only_unparsed.error_rate_all == 1.0
    # Word labels compare as words.
    assert errors_by_group(["pass", "fail"], ["pass", "pass"], ["x", "x"])[0].errors == 1
    with pytest.raises(MetricsError):
        errors_by_group([1], [1], ["a", "b"])
