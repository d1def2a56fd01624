"""The read-out's own logistic fit (issue 41 item 7) gives what scikit-learn's gave, much faster.

``fit_readout`` used to fit scikit-learn's ``LogisticRegression(class_weight="balanced")`` once per
candidate ``C`` and fold, its folds from ``StratifiedKFold(shuffle=True)``; it now solves all of them
together by Newton's method (``allure.metrics._logistic``). Here scikit-learn is the oracle: the
same folds item for item, the same ``C`` chosen with the same cross-validated score, the coefficients
within lbfgs's own tolerance (``tol = 1e-4`` on the gradient: about 1e-3 on a coefficient), the same
labels. The read-out's features and memory vote, now read in one vectorised pass, equal their
per-item definitions.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.class_weight import compute_class_weight

from allure.metrics import C_GRID, fit_readout, memory_vote, objective_value
from allure.metrics._logistic import balanced_weights, stratified_test_folds
from allure.models import Item, Verdict
from allure.passes.readout._features import feature_table, verdict_lp, verdict_z


def _sklearn_readout(x: np.ndarray, y: list[str], folds: int = 5, seed: int = 0):  # type: ignore[no-untyped-def]
    """The read-out as fit_readout fitted it before issue 41: C by stratified CV, then the fit."""
    ys = np.array(y, dtype=object)
    k = min(folds, min(Counter(y).values()))
    labels = sorted(set(y))
    scores = {}
    for c in C_GRID:
        pred = np.empty(len(ys), dtype=object)
        for train, test in StratifiedKFold(k, shuffle=True, random_state=seed).split(x, ys):
            model = LogisticRegression(C=c, class_weight="balanced", max_iter=1000).fit(x[train], ys[train])
            pred[test] = model.predict(x[test])
        scores[c] = objective_value(list(ys), list(pred), labels=labels)
    best = max(C_GRID, key=lambda c: (scores[c], -c))
    return best, scores[best], LogisticRegression(C=best, class_weight="balanced", max_iter=1000).fit(x, ys)


def _data(n: int, k: int, f: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """``n`` items of ``k`` classes (the first 25 %), ``f`` features that lean against the class."""
    rng = np.random.default_rng(seed)
    y = rng.choice(k, size=n, p=[0.25] + [0.75 / (k - 1)] * (k - 1))
    x = rng.normal(size=(n, f)) - 0.8 * y[:, None] * np.linspace(1.0, 0.3, f)[None, :]
    return x, [f"c{v}" for v in y]


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_folds_are_scikit_learns_item_for_item(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = np.array(rng.choice(["yes", "no", "maybe"], size=203, p=[0.2, 0.5, 0.3]), dtype=object)
    got = stratified_test_folds(y, 5, seed)
    want = np.empty(len(y), dtype=np.int64)
    for j, (_train, test) in enumerate(StratifiedKFold(5, shuffle=True, random_state=seed).split(y, y)):
        want[test] = j
    assert got.tolist() == want.tolist()


def test_the_class_weights_are_scikit_learns_balanced_ones_on_each_fits_items() -> None:
    codes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    train = np.array([[True] * 10, [True, True, False, True, True, True, True, True, False, False]])
    got = balanced_weights(codes, train)
    for j in range(2):
        keep = train[j]
        want = compute_class_weight("balanced", classes=np.unique(codes[keep]), y=codes[keep])
        assert got[j][keep] == pytest.approx(want[codes[keep]])
        assert (got[j][~keep] == 0).all()
    assert (got[1][~train[1]] == 0).sum() == 3  # the items outside fit 1 weigh nothing


@pytest.mark.parametrize(
    ("n", "k", "f", "seed"),
    [(200, 2, 1, 0), (1000, 2, 3, 1), (3000, 2, 1, 2), (150, 3, 3, 3), (900, 3, 1, 4)],
)
def test_the_fit_is_scikit_learns_within_its_tolerance(n: int, k: int, f: int, seed: int) -> None:
    x, y = _data(n, k, f, seed)
    best_c, cv, model = _sklearn_readout(x, y)
    ours = fit_readout(x, y, [f"f{j}" for j in range(f)])
    assert ours is not None
    chosen = ours.C
    assert chosen == best_c and ours.cv_score == pytest.approx(cv, abs=1e-12)
    assert ours.labels == tuple(str(v) for v in model.classes_)
    assert np.abs(np.array(ours.coef) - model.coef_).max() < 2e-3
    assert np.abs(np.array(ours.intercept) - model.intercept_).max() < 2e-3
    same = np.mean(np.array(ours.predict(x), dtype=object) == model.predict(x))
    assert same > 0.995  # only items on the boundary, to lbfgs's tolerance, may differ
    if k > 2:
        assert abs(sum(ours.intercept)) < 1e-8  # the symmetric multinomial's intercepts sum to 0
    assert ours.prob(x[:5], "c1") == pytest.approx(model.predict_proba(x[:5])[:, 1].tolist(), abs=1e-3)


def test_a_constant_feature_and_a_separable_one_are_solved() -> None:
    """The fixed-answer server's pass (every ``z`` the same) and a perfectly separating ``z``: both
    give finite coefficients (the L2 penalty bounds them) and no warning."""
    y = ["1"] * 30 + ["0"] * 70
    flat = fit_readout(np.full((100, 1), 2.2), y, ["z"])
    assert flat is not None and np.isfinite(flat.coef).all() and abs(flat.coef[0][0]) < 1e-6
    sep = fit_readout(np.r_[np.full(30, 3.0), np.full(70, -3.0)][:, None], y, ["z"])
    assert sep is not None and np.isfinite(sep.coef).all() and sep.cv_score == 1.0
    assert sep.predict(np.array([[3.0], [-3.0]])) == ["1", "0"]


def _verdicts(n: int, seed: int) -> list[Verdict | None]:
    rng = np.random.default_rng(seed)
    out: list[Verdict | None] = []
    for j in range(n):
        kind = j % 5
        if kind == 0:  # a verdict with label probabilities and prob_positive
            p = float(rng.uniform(0, 1))
            out.append(
                Verdict(item_id=f"i{j}", label="yes", prob_positive=p, label_probs={"yes": p, "no": 1 - p})
            )
        elif kind == 1:  # probabilities only
            p = float(rng.uniform(0, 1))
            out.append(Verdict(item_id=f"i{j}", label="no", label_probs={"yes": p, "no": 1 - p}))
        elif kind == 2:  # a parsed label alone
            out.append(Verdict(item_id=f"i{j}", label="yes"))
        elif kind == 3:  # unparsed
            out.append(Verdict(item_id=f"i{j}", label=None, status="unparsed"))
        else:  # no verdict, or a probability of exactly 0
            out.append(None if j % 2 else Verdict(item_id=f"i{j}", label="no", prob_positive=0.0))
    return out


def test_the_features_read_at_once_equal_each_verdicts_own() -> None:
    vs = _verdicts(60, 0)
    items = [Item(id=f"i{j}", task="t", response="r") for j in range(60)]
    by_id = {it.id: v for it, v in zip(items, vs, strict=True) if v is not None}
    table = feature_table(items, by_id, labels=("yes", "no"), positive="yes", back=by_id)
    want = [verdict_z(v, "yes", ("yes", "no")) for v in vs]
    assert table.cols["z"] == pytest.approx(want, abs=1e-12)
    assert table.cols["z_reversed"] == pytest.approx(want, abs=1e-12)
    assert {2.0, 0.0} <= set(want) and min(want) < -11.99  # the fallbacks and a clipped 0 among them
    three = ("yes", "no", "maybe")
    grid = feature_table(items, by_id, labels=three, positive=None, swapped=by_id)
    for j, v in enumerate(vs):
        lp = verdict_lp(v, three)
        assert [grid.cols[f"lp[{lab}]"][j] for lab in three] == pytest.approx(lp, abs=1e-12)
        assert [grid.cols[f"lp_swap[{lab}]"][j] for lab in three] == pytest.approx([lp[1], lp[0], lp[2]])


def test_the_memory_vote_at_once_equals_a_vote_per_item() -> None:
    rng = np.random.default_rng(5)
    queries, examples = rng.normal(size=(40, 6)), rng.normal(size=(25, 6))
    labels = ["yes" if v else "no" for v in rng.random(25) < 0.4]
    own = [{j % 25} if j % 3 == 0 else set() for j in range(40)]
    got = memory_vote(queries, examples, labels, "yes", k=8, exclude=own)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    e = examples / np.linalg.norm(examples, axis=1, keepdims=True)
    want = []
    for i, row in enumerate(q @ e.T):  # the definition, item by item (as it was computed before)
        row = row.copy()
        row[list(own[i])] = -np.inf
        top = np.argsort(-row, kind="stable")[:8]
        w = np.clip(row[top], 0.0, None)
        w[~np.isfinite(w)] = 0.0
        want.append(0.5 if w.sum() <= 0 else float(w @ np.array([labels[t] == "yes" for t in top])) / w.sum())
    assert got == pytest.approx(want, abs=1e-12)
    assert len(set(np.round(got, 6))) > 5  # the votes differ from item to item


@pytest.mark.parametrize("seed", [0, 5])
def test_the_folds_of_integer_codes_are_those_of_the_same_labels(seed: int) -> None:
    """Class codes (what fit_readout deals) take a path without sorting: the folds are those of the
    same classes given as labels, classes in order of first appearance, one code never seen."""
    rng = np.random.default_rng(seed)
    codes = rng.choice([0, 1, 3], size=211, p=[0.2, 0.5, 0.3])
    names = np.array([{0: "z", 1: "a", 3: "m"}[c] for c in codes.tolist()], dtype=object)
    got = stratified_test_folds(codes, 5, seed)
    assert got.tolist() == stratified_test_folds(names, 5, seed).tolist()
    assert sorted(set(got.tolist())) == [0, 1, 2, 3, 4]
