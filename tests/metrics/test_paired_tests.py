"""McNemar's exact test, Holm's correction, the paired bootstrap and compare_arms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import binomtest
from sklearn import metrics as sk

from allure.metrics import (
    ArmComparison,
    MetricsError,
    bootstrap_indices,
    compare_arms,
    holm_adjust,
    mcnemar_exact_p,
    mcnemar_test,
    paired_difference,
)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no discordant pair
        (0, 5, 2 / 32),  # 2 * C(5,0) / 2^5
        (1, 9, 2 * (1 + 10) / 1024),  # 2 * (C(10,0) + C(10,1)) / 2^10 = 0.021484375
        (3, 3, 1.0),  # 2 * 42 / 64 > 1, capped
        (12, 1, 2 * (1 + 13) / 8192),  # the blind-draw example: p = 0.0034
        (7, 2, 2 * (1 + 9 + 36) / 512),  # 0.1796875
    ],
)
def test_mcnemar_exact_hand_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact_p(b, c) == pytest.approx(expected, rel=1e-12)
    assert mcnemar_exact_p(c, b) == pytest.approx(expected, rel=1e-12)  # symmetric


def test_mcnemar_exact_matches_scipy_binomtest() -> None:
    for b, c in itertools.product(range(0, 26), range(0, 26)):
        if b + c == 0:
            continue
        ref = binomtest(min(b, c), b + c, 0.5).pvalue
        assert mcnemar_exact_p(b, c) == pytest.approx(ref, rel=1e-9, abs=1e-15), (b, c)
    # large counts stay exact (no float underflow in the tail sum)
    assert mcnemar_exact_p(400, 300) == pytest.approx(binomtest(300, 700, 0.5).pvalue, rel=1e-9)


def test_mcnemar_exact_refuses_bad_counts() -> None:
    with pytest.raises(MetricsError, match="non-negative"):
        mcnemar_exact_p(-1, 3)
    with pytest.raises(MetricsError):
        mcnemar_exact_p(1.5, 3)  # type: ignore[arg-type]


def test_mcnemar_test_counts_discordant_pairs_unparsed_wrong_unknown_dropped() -> None:
    y = [1, 0, 1, 0, 1, None, 1]
    a = [1, 0, 0, 1, None, 1, 1]  # right: 0, 1, 6 (4 unparsed -> wrong)
    b = [0, 0, 1, 0, 1, 0, 1]  # right: 1, 2, 3, 4, 6
    r = mcnemar_test(y, a, b)
    # item 0: A right, B wrong -> b = 1; items 2, 3, 4: A wrong, B right -> c = 3; item 5 dropped
    assert (r.n, r.b, r.c) == (6, 1, 3)
    assert r.p_value == pytest.approx(binomtest(1, 4, 0.5).pvalue)
    with pytest.raises(MetricsError, match="differ in length"):
        mcnemar_test(y, a, b[:-1])


def test_holm_hand_values_and_invariants() -> None:
    # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01 = 0.04, 3*0.03 = 0.09, max(0.09, 2*0.04) = 0.09, 0.2
    assert holm_adjust([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm_adjust([0.5, 0.6]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm_adjust([]) == []
    assert holm_adjust([0.02]) == pytest.approx([0.02])  # one test: unchanged
    rng = np.random.default_rng(3)
    for _ in range(50):
        ps = list(rng.uniform(0, 1, size=6))
        adj = holm_adjust(ps)
        assert len(adj) == len(ps) == 6 and all(a >= p for a, p in zip(adj, ps, strict=True))
        order = np.argsort(ps)
        assert all(np.diff(np.asarray(adj)[order]) >= 0)  # monotone in the raw order
        # permutation invariance: each value keeps its adjusted value
        perm = rng.permutation(6)
        assert holm_adjust([ps[i] for i in perm]) == pytest.approx([adj[i] for i in perm])
    with pytest.raises(MetricsError, match="not a probability"):
        holm_adjust([0.1, 1.2])


@pytest.mark.slow
def test_paired_bootstrap_matches_a_loop_over_the_same_resamples() -> None:
    rng = np.random.default_rng(7)
    y = list(rng.integers(0, 2, 80))
    a = [int(v) if rng.uniform() < 0.7 else 1 - int(v) for v in y]
    b = [int(v) if rng.uniform() < 0.85 else 1 - int(v) for v in y]
    for metric in ("accuracy", "f1"):
        got = paired_difference(y, a, b, metric=metric, pos_label=1, n_resamples=400, random_state=11)
        idx = bootstrap_indices(80, n_resamples=400, random_state=11)
        diffs = []
        for row in idx:
            t, pa, pb = np.asarray(y)[row], np.asarray(a)[row], np.asarray(b)[row]
            if metric == "accuracy":
                diffs.append(float((pb == t).mean() - (pa == t).mean()))
            else:
                fa, fb = (sk.f1_score(t, p, labels=[0, 1], zero_division=np.nan) for p in (pa, pb))
                if not np.isnan(fa) and not np.isnan(fb):
                    diffs.append(fb - fa)
        low, high = np.percentile(diffs, [2.5, 97.5])
        assert got.ci_low == pytest.approx(low) and got.ci_high == pytest.approx(high)
        assert got.ci_low is not None and got.delta is not None and got.ci_high is not None
        assert got.ci_low <= got.delta <= got.ci_high


def test_paired_bootstrap_identical_arms_and_clear_improvement() -> None:
    y = [1, 0] * 30
    same = paired_difference(y, y, y)
    assert (same.delta, same.ci_low, same.ci_high, same.helped) == (0.0, 0.0, 0.0, "unclear")
    worse = [1 - v for v in y[:40]] + y[40:]
    up = paired_difference(y, worse, y, metric="accuracy")
    assert up.delta == pytest.approx(40 / 60) and up.helped == "yes"
    down = paired_difference(y, y, worse, metric="f1", pos_label=1)
    assert down.helped == "no" and down.ci_high is not None and down.ci_high < 0


def test_compare_arms_holm_direction_and_statement() -> None:
    y = [1] * 60 + [0] * 60
    ref = list(y)  # perfect reference arm
    broken = [1 - v if i < 30 else v for i, v in enumerate(y)]  # b = 30, c = 0
    slight = [1 - v if i in (0, 70) else v for i, v in enumerate(y)]  # b = 2, c = 0
    out = compare_arms(y, ("full", ref), {"minus keywords": broken, "minus lengthy": slight})
    assert [o.arm for o in out] == ["minus keywords", "minus lengthy"]
    k, s = out
    assert isinstance(k, ArmComparison)
    assert (k.mcnemar.b, k.mcnemar.c, k.direction, k.significant) == (30, 0, "worse", True)
    assert k.p_holm == pytest.approx(min(1.0, 2 * mcnemar_exact_p(30, 0)))  # smallest p, times m = 2
    assert k.accuracy.delta == pytest.approx(-0.25)
    assert "significantly worse" in k.statement
    assert (s.mcnemar.b, s.mcnemar.c, s.significant) == (2, 0, False)
    assert s.p_holm == pytest.approx(max(k.p_holm, mcnemar_exact_p(2, 0)))
    assert "not significant at n = 120" in s.statement
    assert ArmComparison.model_validate_json(k.model_dump_json()) == k  # JSON round trip
    with pytest.raises(MetricsError, match="also the reference"):
        compare_arms(y, ("full", ref), {"full": ref})
    with pytest.raises(MetricsError, match="differ in length"):
        compare_arms(y, ("full", ref), {"x": ref[:-1]})
