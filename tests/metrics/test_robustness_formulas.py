"""The robustness formulas (METHODS.md §2-5) against values derived by hand from the papers' definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from allure.metrics import (
    MetricsError,
    class_consistency,
    cluster_entropy,
    jaccard,
    macro_f1,
    micro_f1,
    paired_t_test,
    perrr,
    prerr,
    rephrasing_distribution,
    robustness,
    robustness_band,
    sensitivity,
    siegel_tukey,
    siegel_tukey_ranks,
    stability,
    text_consistency,
)


def test_distribution_counts_unparsed_as_na() -> None:
    dist = rephrasing_distribution([[0, 0, 1, None], [1, 1, 1, 1]], (0, 1))
    assert dist.tolist() == [[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]]


def test_sensitivity_is_zero_when_all_rephrasings_agree_and_one_when_uniform() -> None:
    dist = rephrasing_distribution([[1, 1, 1, 1], [0, 1, 0, 1]], (0, 1))
    s = sensitivity(dist[:, :2])
    assert s.tolist() == [0.0, 1.0]
    uniform3 = rephrasing_distribution([["a", "b", "c"]], ("a", "b", "c"))[:, :3]
    assert sensitivity(uniform3)[0] == pytest.approx(1.0)


def test_sensitivity_by_hand_with_na_class() -> None:
    # p = (1/2, 1/4, 1/4) over C = 3 classes: H = 1.5 ln 2 nats; S = 1.5 ln 2 / ln 3.
    dist = rephrasing_distribution([[0, 0, 1, None]], (0, 1))
    assert sensitivity(dist)[0] == pytest.approx(1.5 * math.log(2) / math.log(3))
    with pytest.raises(MetricsError):
        sensitivity(np.array([[1.0]]))


def test_consistency_is_one_for_identical_distributions_and_by_hand() -> None:
    dist = rephrasing_distribution([[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]], (0, 1))
    gold = [1, 1, 1, 0]
    c = class_consistency(dist, gold, (0, 1))
    # class 1: items 0, 1 identical (TVD 0), item 2 at TVD 0.5 from both; 9 pairs incl. x = x':
    # 1-TVD: 3 diagonal ones + (0,1),(1,0) ones + 4 pairs at 0.5 -> (5 + 2) / 9.
    assert c[1] == pytest.approx(7 / 9)
    assert c[0] == 1.0  # a single item: only the pair (x, x)
    same = class_consistency(dist[:2], [1, 1], (0, 1))
    assert same == {0: None, 1: 1.0}


def test_micro_f1_pools_rephrasings() -> None:
    preds = [[1, 1, 0, None], [0, 0, 0, 0], [1, 1, 1, 1]]
    assert micro_f1(preds, [1, 0, None]) == pytest.approx(6 / 8)
    assert micro_f1(preds, [None, None, None]) is None


def test_semantic_entropy_robustness_and_stability() -> None:
    assert cluster_entropy([0, 0, 0, 0]) == 0.0
    assert robustness([cluster_entropy([3, 3, 3])]) == 1.0  # a single cluster
    assert cluster_entropy([0, 0, 1, 1]) == pytest.approx(1.0)
    assert cluster_entropy([-1, -1, 0, 0]) == pytest.approx(1.5)  # noise points are singletons
    assert robustness([0.0, 2.0]) == pytest.approx(0.5)
    # R_v = 1 and 1/3: mean 2/3, population sd 1/3 -> S = 2/3 * 2/3.
    assert stability([0.0, 2.0]) == pytest.approx(4 / 9)
    assert stability([1.0, 1.0]) == pytest.approx(0.5)
    bands = [robustness_band(r) for r in (1.0, 0.8, 0.7, 0.5, 0.3, 0.1)]
    assert bands == ["very robust", "very robust", "robust", "moderately robust", "weak", "very weak"]


def test_paired_t_test_cohens_d_bonferroni_by_hand() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 4.0, 6.0]
    # d = (1, 2, 1, 2): mean 1.5, sd sqrt(1/3); t = 1.5 / (sd / 2) = 3 sqrt(3); d_z = 1.5 sqrt(3).
    res = paired_t_test(a, b, n_comparisons=3)
    assert res.t == pytest.approx(3 * math.sqrt(3))
    assert res.cohens_d == pytest.approx(1.5 * math.sqrt(3))
    assert res.p_value is not None and res.p_bonferroni == pytest.approx(min(1.0, 3 * res.p_value))
    assert paired_t_test([1.0, 2.0], [2.0, 3.0]).t is None  # no spread in the differences
    with pytest.raises(MetricsError):
        paired_t_test([1.0], [2.0])


def test_perrr_and_prerr() -> None:
    assert perrr(0.8, 0.8) == 100.0
    assert perrr(0.8, 0.6) == pytest.approx(75.0)
    assert perrr(0.0, 0.5) is None
    assert prerr([{1}, {0}, {0, 1}], [{1}, {0}, {0, 1}]) == 1.0
    assert prerr([{1}, {0}], [{0}, {0, 1}]) == pytest.approx((0 + 0.5) / 2)
    assert jaccard(set(), set()) == 1.0


def test_macro_f1_by_hand() -> None:
    # gold 1,1,0,0; pred 1,0,0,None: class 1 tp1 fn1 -> 2/3; class 0 tp1 fp1 fn1 -> 1/2.
    assert macro_f1([1, 1, 0, 0], [1, 0, 0, None], (0, 1)) == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert perrr(macro_f1([1, 0], [1, 0], (0, 1)), macro_f1([1, 0], [1, 0], (0, 1))) == 100.0


def test_siegel_tukey_published_worked_example() -> None:
    # Siegel & Tukey's procedure as worked in the Wikipedia article "Siegel-Tukey test":
    # A = 33 62 84 85 88 93 97, B = 4 16 48 51 66 98 -> W_A = 54, W_B = 37, U_A = 26, U_B = 16.
    a = [33, 62, 84, 85, 88, 93, 97]
    b = [4, 16, 48, 51, 66, 98]
    ranks = siegel_tukey_ranks([*a, *b])
    assert ranks.tolist() == [5, 12, 11, 10, 7, 6, 3, 1, 4, 8, 9, 13, 2]
    res = siegel_tukey(a, b)
    assert (res.rank_sum_a, res.rank_sum_b, res.u_a, res.u_b) == (54, 37, 26, 16)
    # exact two-sided Mann-Whitney for U = 16 with n = 7, 6 (tables: not significant at 0.05)
    assert 0.05 < res.p_value < 1.0


def test_siegel_tukey_flags_a_wider_spread_and_handles_ties() -> None:
    wide, narrow = [1, 1, 10, 10, 1, 10, 1, 10], [5, 5, 6, 6, 5, 6, 5, 6]
    assert siegel_tukey(wide, narrow).p_value < 0.05
    assert siegel_tukey([7, 7, 7], [7, 7, 7]).p_value == 1.0
    # sorted 1 1 2 3 get ranks 1 4 3 2; the two 1s share (1 + 4) / 2
    assert siegel_tukey_ranks([1, 1, 2, 3]).tolist() == [2.5, 2.5, 3.0, 2.0]


def test_text_consistency() -> None:
    m = np.array([[1.0, 0.9, 0.3], [0.6, 1.0, 0.2], [0.0, 0.4, 1.0]])
    assert text_consistency(m).tolist() == pytest.approx([0.6, 0.4, 0.2])
    with pytest.raises(MetricsError):
        text_consistency(np.ones((1, 1)))
