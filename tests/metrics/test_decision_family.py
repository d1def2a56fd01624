"""One family of adoption decisions a run, and a test of "better" that holds its level (issue 41 items 0, 1).

The run-level simulations take the library's own decision functions (``DecisionFamily``,
``choose_calibration``, ``significantly_better``) over scripted verdicts
(``benchmarks/decision_world.py``): in a world where nothing can help, a run adopts something in
at most ``alpha`` of runs, up to Monte Carlo error; in a world where a calibration mode and the
read-out truly help, it still adopts them.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from allure.metrics import DecisionFamily, MetricsError, better_p, sign_flip_p, stratified_p

WORLD = Path(__file__).resolve().parents[2] / "benchmarks" / "decision_world.py"


def _world() -> ModuleType:
    spec = importlib.util.spec_from_file_location("decision_world", WORLD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["decision_world"] = module
    spec.loader.exec_module(module)
    return module


def test_the_family_splits_alpha_over_the_kinds_declared_and_the_levels_sum_to_alpha() -> None:
    fam = DecisionFamily.declare(0.05, calibration_modes=3, readout=True, memory_versions=3)
    cal, ro, mem = fam.point("calibration"), fam.point("readout"), fam.point("memory")
    assert cal is not None and ro is not None and mem is not None
    assert cal.level == ro.level == pytest.approx(0.05 / 3)
    # each version is tested in one of (1 + 3 modes) x (read-out or not) configurations
    assert mem.tests == 3 * 8 and mem.level == pytest.approx(0.05 / 3 / 24)
    assert cal.share + ro.share + mem.level * mem.tests == pytest.approx(0.05)
    assert fam.candidates == 3 + 1 + 24
    assert "28 candidates declared, family-wise alpha 0.05" in fam.describe()
    # a kind not declared takes no share: the read-out alone gets all of alpha
    alone = DecisionFamily.declare(0.05, readout=True)
    assert alone.level("readout") == pytest.approx(0.05) and alone.point("memory") is None
    assert alone.level("memory") == pytest.approx(0.05)  # a caller outside a run decides alone
    assert (
        alone.describe()
        == "decisions: 1 candidate declared, family-wise alpha 0.05 (read-out: 1 test at 0.05)"
    )
    one = DecisionFamily.declare(0.05, memory_versions=1)
    assert "1 candidate declared" in one.describe() and "memory: 1 test at 0.05" in one.describe()
    with pytest.raises(MetricsError, match="alpha"):
        DecisionFamily.declare(1.5, readout=True)


@pytest.mark.parametrize(("n", "n_pos", "q"), [(100, 14, 0.08), (300, 60, 0.03)])
def test_a_threshold_move_toward_the_majority_is_not_called_better_more_often_than_alpha(
    n: int, n_pos: int, q: float
) -> None:
    """The paired sign-flip test rejects such a move far above alpha; the new test stays within it."""
    rng = np.random.default_rng(7)
    runs = 400
    world = _world()
    draws = [world.threshold_move(rng, n, n_pos, q) for _ in range(runs)]
    new = sum(max(stratified_p(t, a, b)[0], sign_flip_p(t, a, b)) < 0.05 for t, a, b in draws) / runs
    old = sum(sign_flip_p(t, a, b) < 0.05 for t, a, b in draws) / runs
    assert new <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)
    assert old > 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)  # the old test's excess, measured here too


def test_better_p_is_small_for_a_real_gain_and_one_for_a_loss_for_each_objective() -> None:
    refs = ["yes"] * 14 + ["no"] * 86
    a = ["no"] * 7 + ["yes"] * 7 + ["yes"] * 30 + ["no"] * 56
    b = ["yes"] * 13 + ["no"] + ["yes"] * 5 + ["no"] * 81
    for objective in ("balanced_accuracy", "accuracy"):
        assert better_p(refs, a, b, labels=["yes", "no"], objective=objective) < 0.001  # type: ignore[arg-type]
        assert better_p(refs, b, a, labels=["yes", "no"], objective=objective) > 0.5  # type: ignore[arg-type]
    assert better_p(refs, a, a, labels=["yes", "no"]) == 1.0
    three = ["a", "b", "c"] * 20
    assert better_p(three, ["a"] * 60, three[:30] + ["a"] * 30, labels=["a", "b", "c"]) < 0.001


@pytest.mark.parametrize(("n", "n_pos"), [(100, 14), (300, 60)])
def test_in_a_world_where_nothing_can_help_a_run_adopts_something_within_alpha(n: int, n_pos: int) -> None:
    """500 runs of 3 passes (calibration auto, read-out auto, the guard): the run-level rate of
    adopting anything is at most alpha plus two Monte Carlo standard errors."""
    world = _world()
    runs = 500
    rate = world.false_adoption_rate(n, n_pos, runs, alpha=0.05, passes=3, seed=11)
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / runs)


def test_a_real_effect_is_still_adopted() -> None:
    """The judge answers the minority label on a band of majority items: ``prior`` and the read-out
    move them back, and a run adopts one of them in most draws at 300 items (60 positives)."""
    world = _world()
    rng = np.random.default_rng(5)
    family = world.family_for(0.05, 3)
    runs = 100
    adopted = [world.run(rng, world.draw_world(rng, 300, 60, effect=True), family, 3) for _ in range(runs)]
    assert sum(bool(x) for x in adopted) / runs >= 0.8
    assert sum("prior" in x or "read-out" in x for x in adopted) / runs >= 0.8


def _sign_flip_by_table(t: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The sign-flip p over the table of every pair of per-class counts (the definition)."""
    from math import comb

    classes = np.unique(t)
    rows = []
    observed = 0.0
    for c in classes:
        own = t == c
        w = 1.0 / (len(classes) * own.sum())
        gain = int(np.sum(own & (b == t) & (a != t)))
        loss = int(np.sum(own & (a == t) & (b != t)))
        rows.append((gain + loss, w))
        observed += (gain - loss) * w
    (m0, w0), (m1, w1) = rows
    return min(
        1.0,
        sum(
            comb(m0, g0) * comb(m1, g1) / 2 ** (m0 + m1)
            for g0 in range(m0 + 1)
            for g1 in range(m1 + 1)
            if (2 * g0 - m0) * w0 + (2 * g1 - m1) * w1 >= observed - 1e-12
        ),
    )


def test_the_two_label_sign_flip_p_is_the_tables_sum() -> None:
    """The O(m) two-class sum (first class's counts against the second's binomial tail) equals the
    sum over the table of every pair of counts, ties included."""
    rng = np.random.default_rng(7)
    seen = set()
    for _ in range(300):
        n = int(rng.integers(8, 60))
        t = (rng.random(n) < rng.uniform(0.1, 0.5)).astype(np.int64)
        t[0], t[1] = 0, 1
        a = np.where(rng.random(n) < 0.7, t, 1 - t)
        b = np.where(rng.random(n) < 0.7, t, 1 - t)
        fast, slow = sign_flip_p(t, a, b), _sign_flip_by_table(t, a, b)
        assert fast == pytest.approx(slow, abs=1e-9)
        seen.add(round(slow, 3))
    assert len(seen) > 50  # the draws cover many p-values, not one


def test_a_large_two_label_pass_uses_the_normal_limit_close_to_the_exact_p(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beyond the exact tables the label-permutation p is T's normal limit: on a large pass (6,000
    items) it is close to the exact p that the tables give."""
    import allure.metrics._stratified as st

    rng = np.random.default_rng(3)
    n = 6000
    t = (rng.random(n) < 0.2).astype(np.int64)
    a = np.where(rng.random(n) < 0.75, t, 1 - t)
    b = np.where(rng.random(n) < 0.76, t, 1 - t)
    exact, method, tables = stratified_p(t, a, b)
    assert method == "exact" and tables > 1000 and 0.001 < exact < 0.999
    monkeypatch.setattr(st, "EXACT_TABLES", 1000)
    normal, method, _ = stratified_p(t, a, b)
    assert method == "normal"
    assert normal == pytest.approx(exact, abs=0.01)
