"""The learning curve (issue 34, item 7): its review orders, its fits (never on an evaluated item),
its points (interval, delta, merged p, Holm over the sizes)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from allure.metrics import MetricsError, curve_point, curve_points, merge_p, objective_difference
from allure.models import Item, Verdict
from allure.passes.readout import ReadoutLeak, readout_curve, review_order
from tests.metrics.test_readout import judged


def _items(n: int, seed: int = 0) -> tuple[list[Item], dict[str, Verdict], dict[str, str]]:
    """Items whose judge log-odds ranks the labels backwards: a read-out learns to turn it round."""
    rng = np.random.default_rng(seed)
    items = [Item(id=f"i{k}", task="t", response=f"r{k}") for k in range(n)]
    y = ["yes" if rng.random() < 0.3 else "no" for _ in range(n)]
    z = np.array([(-1.5 if lab == "yes" else 1.5) + rng.normal(0, 1.0) for lab in y])
    return judged(items, z, y)


def test_merged_p_values_are_valid_under_any_dependence() -> None:
    assert merge_p([0.2]) == 0.2
    assert merge_p([0.01, 0.03, 0.2]) == pytest.approx(1.5 * 0.03)  # R / r * p_(r), r = 2 of 3
    assert merge_p([0.5, 0.9]) == 0.5 * 2 / 1 and merge_p([0.9, 0.9, 0.9]) == 1.0
    with pytest.raises(MetricsError):
        merge_p([])
    # under H0 (uniform p-values, here all equal: the worst dependence for the median) it rejects at
    # most alpha of the time
    rng = random.Random(0)
    rejected = sum(merge_p([u] * 3) < 0.05 for u in (rng.random() for _ in range(4000)))
    assert rejected / 4000 < 0.05


def test_a_curve_point_summarises_its_draws_against_zero_shot() -> None:
    rng = random.Random(1)
    y = [rng.choice(["yes", "no"]) for _ in range(120)]
    zero = [v if rng.random() < 0.6 else ("no" if v == "yes" else "yes") for v in y]
    draws = [[v if rng.random() < 0.85 else ("no" if v == "yes" else "yes") for v in y] for _ in range(3)]
    p = curve_point(y, zero, draws, size=50, labels=["yes", "no"], n_resamples=500)
    one = [objective_difference(y, zero, d, labels=["yes", "no"]) for d in draws]
    assert p.values == pytest.approx([c.value_b for c in one]) and p.zero_shot == pytest.approx(
        one[0].value_a
    )
    assert p.mean is not None and p.delta == pytest.approx(p.mean - one[0].value_a)
    assert p.ci_low is not None and p.ci_high is not None and p.ci_low < p.mean < p.ci_high
    assert p.delta_low is not None and p.delta_low > 0  # far better than zero-shot on 120 items
    assert p.p_draws == [c.p_value for c in one] and p.p_value == merge_p([c.p_value or 1.0 for c in one])
    same = curve_point(y, zero, [zero], size=25, labels=["yes", "no"], n_resamples=500)
    assert same.delta == 0 and same.p_value == 1.0
    a, b = curve_points([p, same])
    assert a.p_holm == pytest.approx(min(1.0, 2 * (p.p_value or 0))) and b.p_holm == 1.0


def test_review_orders_are_seeded_and_the_curve_nests_them() -> None:
    pool = [f"i{k}" for k in range(30)]
    assert review_order(pool, 0, 7) == review_order(list(reversed(pool)), 0, 7)
    assert review_order(pool, 0, 7) != review_order(pool, 1, 7) and sorted(
        review_order(pool, 1, 7)
    ) == sorted(pool)
    items, verdicts, refs = _items(200)
    pool_items, held = items[:120], items[120:]
    draws = readout_curve(
        pool_items,
        held,
        verdicts,
        {it.id: refs[it.id] for it in pool_items},
        sizes=[20, 80],
        repeats=2,
        labels=("yes", "no"),
        positive="yes",
    )
    assert [(d.size, d.repeat) for d in draws] == [(20, 0), (80, 0), (20, 1), (80, 1)]
    for small, large in itertools.pairwise(draws[:2]):
        assert large.fit_ids[:20] == small.fit_ids  # 80 reviews extend the first 20
    held_ids = {it.id for it in held}
    assert len(draws) == 4 and all(set(d.probs) == held_ids for d in draws)
    assert all(d.fitted and set(d.labels) == held_ids and not set(d.fit_ids) & held_ids for d in draws)


def test_the_curve_refuses_to_fit_an_evaluated_item() -> None:
    items, verdicts, refs = _items(60)
    with pytest.raises(ReadoutLeak, match="dev or held-out"):
        readout_curve(
            items[:40],
            items[30:],
            verdicts,
            refs,
            sizes=[40],
            repeats=1,
            labels=("yes", "no"),
            positive="yes",
        )
