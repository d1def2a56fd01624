"""The learned read-out (issue 34, METHODS.md section 13): the fit, its controls and its leakage guard."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pytest

from allure.metrics import (
    fit_readout,
    knn_labels,
    log_odds,
    memory_vote,
    objective_difference,
    objective_value,
    significantly_better,
    too_few,
)
from allure.models import Item, Verdict
from allure.passes.readout import PassReadout, ReadoutLeak, VoteSource, fit_learned_readout


def _backwards(n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Labels and a judge log-odds that ranks them backwards (AUC well below 0.5), 25 % "yes"."""
    rng = np.random.default_rng(seed)
    y = ["yes" if rng.random() < 0.25 else "no" for _ in range(n)]
    z = np.array([(-1.0 if lab == "yes" else 1.0) + rng.normal(0, 1.2) for lab in y])
    return y, z


def test_a_logistic_read_out_turns_a_backwards_score_into_a_good_one() -> None:
    y, z = _backwards(400, 0)
    fit, test = slice(0, 200), slice(200, 400)
    zero = ["yes" if v > 0 else "no" for v in z[test]]  # the judge's own labels: worse than chance
    model = fit_readout(z[fit, None], y[fit], ["z"])
    assert model is not None and model.coef[0][0] < 0  # the sign is learned, not assumed
    assert model.n == 200 and model.cv_folds == 5 and model.cv_score is not None and model.cv_score > 0.6
    pred = model.predict(z[test, None])
    ba_zero = objective_value(y[test], zero, labels=["yes", "no"])
    ba_read = objective_value(y[test], pred, labels=["yes", "no"])
    assert ba_zero is not None and ba_read is not None and ba_zero < 0.4 and ba_read > 0.7


@pytest.mark.slow
def test_the_shuffled_label_control_scores_chance_on_dev() -> None:
    """Fitted on permuted labels, the read-out scores chance on held-back items (mean over permutations:
    a single permutation may land on either sign of an informative feature)."""
    y, z = _backwards(400, 1)
    scores = []
    for r in range(30):
        shuffled = random.Random(r).sample(y[:200], 200)
        model = fit_readout(z[:200, None], shuffled, ["z"], seed=r)
        assert model is not None
        scores.append(objective_value(y[200:], model.predict(z[200:, None]), labels=["yes", "no"]))
    assert abs(float(np.mean(scores)) - 0.5) < 0.08
    real = fit_readout(z[:200, None], y[:200], ["z"])
    assert real is not None
    assert objective_value(y[200:], real.predict(z[200:, None]), labels=["yes", "no"]) > max(scores) - 0.05


def test_too_few_of_a_label_and_nothing_fitted() -> None:
    assert fit_readout(np.zeros((5, 1)), ["yes", "no", "no", "no", "no"], ["z"]) is None
    assert too_few(["yes", "no"], ["yes"] * 3 + ["no"] * 27, 10) == "3 'yes' items"
    assert too_few(["yes", "no"], ["yes"] * 10 + ["no"] * 20, 10) == ""
    d = significantly_better(
        ["yes"] * 3 + ["no"] * 27, ["no"] * 30, ["yes"] * 3 + ["no"] * 27, labels=["yes", "no"]
    )
    assert not d.better and d.thin == "3 'yes' items"


def test_the_one_sided_test_halves_a_symmetric_p_and_never_calls_a_drop_better() -> None:
    y = ["yes"] * 20 + ["no"] * 20
    a = ["no"] * 20 + ["no"] * 20
    b = ["yes"] * 6 + ["no"] * 14 + ["no"] * 20  # better on 6 items
    two = objective_difference(y, a, b, labels=["yes", "no"])
    one = objective_difference(y, a, b, labels=["yes", "no"], alternative="greater")
    assert one.alternative == "greater" and one.p_value == pytest.approx(two.p_value / 2)
    worse = objective_difference(y, b, a, labels=["yes", "no"], alternative="greater")
    assert worse.p_value == 1.0


def test_the_memory_vote_never_counts_the_item_itself_and_knn_votes_by_majority() -> None:
    ex = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    q = np.array([[1.0, 0.0]])
    assert memory_vote(q, ex, ["yes", "no", "no"], "yes", k=1) == [1.0]
    assert memory_vote(q, ex, ["yes", "no", "no"], "yes", k=1, exclude=[{0}]) == [0.0]
    assert knn_labels(
        np.array([[0.0], [0.1], [5.0]]), ["no", "no", "yes"], np.array([[0.05], [4.0]]), k=1
    ) == [
        "no",
        "yes",
    ]
    assert log_odds(0.5) == 0.0 and log_odds(None) is None and log_odds(1.0) == pytest.approx(12.0)


def judged(
    items: list[Item], z: np.ndarray, y: Sequence[str]
) -> tuple[list[Item], dict[str, Verdict], dict[str, str]]:
    """``items`` judged with log-odds ``z`` (``yes`` above 0) and referenced ``y``: (items, verdicts, references)."""
    p = 1 / (1 + np.exp(-z))
    verdicts = {
        it.id: Verdict(item_id=it.id, label="yes" if z[k] > 0 else "no", prob_positive=float(p[k]))
        for k, it in enumerate(items)
    }
    return items, verdicts, {it.id: y[k] for k, it in enumerate(items)}


def _items(n: int) -> tuple[list[Item], dict[str, Verdict], dict[str, str]]:
    y, z = _backwards(n, 2)
    return judged([Item(id=f"i{k}", task="t", response=f"r{k}", gold_label=y[k]) for k in range(n)], z, y)


def _yes_no(
    mode: str,
    fit: Iterable[str],
    references: dict[str, str],
    not_fit: Iterable[str],
    dev_ids: Iterable[str] = (),
    **kw: Any,
) -> PassReadout:
    """A read-out step of labels ``yes``/``no`` (``yes`` positive) fitted on ``fit``."""
    return PassReadout(
        mode=mode,  # type: ignore[arg-type]
        labels=("yes", "no"),
        positive="yes",
        fit_ids=frozenset(fit),
        references=references,
        dev_ids=frozenset(dev_ids),
        not_fit=frozenset(not_fit),
        **kw,
    )


def test_the_fit_refuses_a_dev_or_held_out_item_and_features_never_read_the_reference() -> None:
    items, verdicts, refs = _items(120)
    with pytest.raises(ReadoutLeak, match="dev or held-out"):
        fit_learned_readout(
            "logistic", items[:60], verdicts, refs, labels=["yes", "no"], positive="yes", not_fit={"i3"}
        )
    learned = fit_learned_readout(
        "logistic",
        items[:60],
        verdicts,
        refs,
        labels=["yes", "no"],
        positive="yes",
        not_fit={i.id for i in items[60:]},
    )
    assert learned is not None and set(learned.fit_ids) <= {i.id for i in items[:60]}
    flipped = [
        it.model_copy(update={"gold_label": "no" if it.gold_label == "yes" else "yes"}) for it in items
    ]
    assert learned.apply(items, verdicts) == learned.apply(flipped, verdicts)
    rec = learned.record()
    assert (
        rec["features"] == ["z"]
        and rec["n"] == 60
        and "coef" in rec
        and "cv_score" in rec
        and "fitted_at" in rec
    )


def test_auto_keeps_the_parsed_labels_unless_the_read_out_is_better_on_dev() -> None:
    items, verdicts, refs = _items(200)
    fit, dev = {i.id for i in items[:100]}, {i.id for i in items[100:160]}
    vote = VoteSource(np.zeros((0, 2)), [], [], lambda its: np.zeros((len(its), 2)))

    def step(dev_ids: set[str]) -> PassReadout:
        rest = (i.id for i in items if i.id not in fit)
        return _yes_no("auto", fit, {i: refs[i] for i in fit | dev_ids}, rest, dev_ids, vote=vote)

    good = step(dev).read(items, verdicts)
    assert good.labels and good.learned is not None and "adopted on dev" in good.decision
    tiny = step(set(sorted(dev)[:8])).read(items, verdicts)  # a handful of each label cannot tell
    assert tiny.labels == {} and tiny.learned is None and "holds" in tiny.decision


def _cross_fitted(
    mode: str, items: list[Item], refs: dict[str, str], n_fit: int
) -> tuple[PassReadout, set[str], dict[str, int]]:
    """A read-out step over the first ``n_fit`` items as fit items, cross-fitted over 5 folds."""
    from allure.dataset import cross_folds

    fit = {i.id for i in items[:n_fit]}
    folds = cross_folds(refs, {i: "audit" for i in fit}, 5, 0)
    step = _yes_no(
        mode, fit, {i: refs[i] for i in fit}, (i.id for i in items if i.id not in fit), folds=folds
    )
    return step, fit, folds


def test_cross_fitted_auto_decides_out_of_fold_and_no_fold_fit_holds_its_fold() -> None:
    """``[loop] folds``: every fit item decides, labelled by a read-out fitted on the other folds."""
    items, verdicts, refs = _items(200)
    step, fit, folds = _cross_fitted("auto", items, refs, 100)
    got = step.read(items, verdicts)
    assert got.labels and got.learned is not None
    assert "adopted out of fold" in got.decision and "n = 100" in got.decision
    assert set(got.fold_fit_ids) == set(range(5))
    for j, ids in got.fold_fit_ids.items():
        assert ids and set(ids) <= fit and not any(folds[i] == j for i in ids)
    assert set(got.learned.fit_ids) == fit  # what is applied is fitted on every fit item
    record = got.record(changed=3)  # the typed record the pass stores, and reads back
    assert (
        record.applied and record.changed == 3 and sorted(record.fold_fit_ids) == [str(j) for j in range(5)]
    )
    assert type(record).read(record.stored()) == record


def _noise(n: int, seed: int) -> tuple[list[Item], dict[str, Verdict], dict[str, str]]:
    """Labels the judge's log-odds know nothing of (independent draws), 50 % "yes"."""
    rng = np.random.default_rng(seed)
    items = [Item(id=f"n{k}", task="t", response=f"r{k}") for k in range(n)]
    z = rng.normal(0, 1, n)
    verdicts = {
        it.id: Verdict(
            item_id=it.id, label="yes" if z[k] > 0 else "no", prob_positive=float(1 / (1 + np.exp(-z[k])))
        )
        for k, it in enumerate(items)
    }
    return items, verdicts, {it.id: ("yes" if rng.random() < 0.5 else "no") for it in items}


@pytest.mark.parametrize("mode", ["logistic", "knn"])
def test_a_cross_fitted_read_out_keeps_each_fit_items_label_from_the_other_folds(mode: str) -> None:
    """Cross-fitted, every applied read-out (not only ``auto``) also labels each fit item with the
    read-out fitted on the other folds (:attr:`PassReadout.out_of_fold`): what the loop's decisions
    read. Each is the other folds' fit's label, never one fitted on the item."""
    items, verdicts, refs = _noise(120, 3)
    step, fit, folds = _cross_fitted(mode, items, refs, 80)
    got = step.read(items, verdicts)
    assert got.labels and got.learned is not None
    assert set(got.out_of_fold) == fit
    for j in range(5):
        mine = [it for it in items if folds.get(it.id) == j]
        other = fit_learned_readout(
            mode,  # type: ignore[arg-type]
            [it for it in items[:80] if folds[it.id] != j],
            verdicts,
            refs,
            labels=["yes", "no"],
            positive="yes",
            not_fit={i.id for i in items if i.id not in fit} | {it.id for it in mine},
        )
        assert other is not None and set(other.fit_ids) == set(got.fold_fit_ids[j])
        assert {i: got.out_of_fold[i] for i in (it.id for it in mine)} == other.apply(mine, verdicts)


def test_a_fold_whose_read_out_cannot_be_fitted_keeps_the_passs_labels_out_of_fold() -> None:
    """A fold whose other folds hold a single label has no read-out: its items keep the labels the
    pass gave before the read-out (not ``None``, which would count as wrong against the read-out)."""
    items, verdicts, refs = _items(60)
    fit = [it.id for it in items[:40]]
    folds = {i: k % 2 for k, i in enumerate(fit)}
    refs = {i: ("yes" if folds[i] == 0 else "no") for i in fit}  # each fold holds one label only
    step = _yes_no("logistic", fit, refs, (i.id for i in items[40:]), folds=folds)
    got = step.read(items, verdicts)
    assert got.fold_fit_ids == {0: (), 1: ()}
    assert got.out_of_fold == {i: verdicts[i].label for i in fit}


def test_knn_never_counts_a_fit_item_as_its_own_neighbour() -> None:
    """Labels independent of the features: counted as its own nearest neighbour (a tie goes to the
    nearest row), a fit item would mostly get its own label back; it gets the others' vote instead."""
    items, verdicts, refs = _noise(80, 5)
    learned = fit_learned_readout(
        "knn", items, verdicts, refs, labels=["yes", "no"], positive="yes", not_fit=set()
    )
    assert learned is not None
    got = learned.apply(items, verdicts)
    x = np.array(learned.knn_x)
    assert [got[it.id] for it in items] == knn_labels(
        x, learned.knn_y, x, k=8, exclude=[{k} for k in range(len(items))]
    )
    y = [refs[it.id] for it in items]
    itself = knn_labels(x, learned.knn_y, x, k=8)
    assert objective_value(y, itself) > objective_value(y, [got[it.id] for it in items]) + 0.1


def test_out_of_fold_the_memory_vote_never_reads_the_folds_own_examples() -> None:
    """Pairs of fit items in one fold share a response embedding and a label, and every fit item has
    an approved example: an item's nearest example (its own left out) is its partner's, which carries
    its label. Out of fold the vote must not read fold ``j``'s examples, for fold ``j``'s items or its
    fit; then the vote knows nothing of an item's label and ``auto`` has nothing to adopt."""
    rng = np.random.default_rng(7)
    n = 80
    items = [Item(id=f"p{k}", task="t", response=f"r{k}") for k in range(n)]
    labels = [("yes" if rng.random() < 0.5 else "no") for _ in range(n // 2)]
    refs = {it.id: labels[k // 2] for k, it in enumerate(items)}  # a pair (2m, 2m + 1) shares a label
    folds = {it.id: (k // 2) % 5 for k, it in enumerate(items)}  # ... and a fold
    pair_vec = rng.normal(size=(n // 2, 64))
    vec = {it.id: pair_vec[k // 2] for k, it in enumerate(items)}
    z = rng.normal(size=n)  # the judge knows nothing either
    verdicts = {
        it.id: Verdict(
            item_id=it.id, label="yes" if z[k] > 0 else "no", prob_positive=float(1 / (1 + np.exp(-z[k])))
        )
        for k, it in enumerate(items)
    }
    vote = VoteSource(
        np.array([vec[it.id] for it in items]),
        [refs[it.id] for it in items],
        [it.id for it in items],
        lambda its: np.array([vec[it.id] for it in its]),
    )
    step = _yes_no("logistic", refs, refs, (), vote=vote, folds=folds)
    got = step.read(items, verdicts)
    y = [refs[it.id] for it in items]
    oof = objective_value(y, [got.out_of_fold[it.id] for it in items])
    applied = objective_value(y, [got.labels[it.id] for it in items])
    assert applied is not None and applied > 0.7  # in-sample the partner's example gives the label away
    assert oof is not None and oof < 0.65, oof  # out of fold it cannot (with the fold's examples: 0.80)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_read_out_that_cannot_tell_the_items_apart_labels_no_item_and_is_not_adopted(seed: int) -> None:
    """Every item judged with the same probabilities (a judge that answers alike everywhere): the
    read-out's weights come out as rounding noise. Out of fold that noise must not label whole folds,
    whose shares of each label differ, one way or the other and pass for a gain: a tie keeps the label."""
    rng = np.random.default_rng(seed)
    n = 5000
    share = [0.1, 0.3, 0.5, 0.7, 0.9]  # each fold's share of "yes"
    y = ["yes" if rng.random() < share[k % 5] else "no" for k in range(n)]
    items = [Item(id=f"i{k}", task="t", response=f"r{k}", gold_label=y[k]) for k in range(n)]
    items, verdicts, refs = judged(items, np.full(n, 2.0), y)
    folds = {it.id: k % 5 for k, it in enumerate(items)}
    step = _yes_no("auto", refs, refs, (), folds=folds)
    got = step.read(items, verdicts)
    assert got.learned is None and got.labels == {}, got.decision
    assert "kept" in got.decision and "+0.000" in got.decision
    oof, _fits = step._out_of_fold(items, verdicts, None)
    assert set(oof.values()) == {"yes"}  # every fold's read-out tied: the parsed label stays
