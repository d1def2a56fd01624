"""The objective the label prior cannot game: values, the paired permutation test, the stratified
bootstrap, label shares, the majority baseline and the prior-shift warning (METHODS.md section 12)."""

from __future__ import annotations

import itertools
import json
from math import comb

import numpy as np
import pytest
from sklearn import metrics as sk

from allure.metrics import (
    OBJECTIVES,
    ArmComparison,
    MetricsError,
    Objective,
    SplitMetrics,
    compare_arms,
    compute_metrics,
    holm_adjust,
    icl_effect,
    label_shares,
    majority_baseline,
    objective_difference,
    objective_value,
    prior_shift_warning,
)
from allure.metrics._objective import stratified_indices

YN = ["no", "yes"]


def _from_confusion(cm: list[list[int]], labels: list[str] = YN) -> tuple[list[str], list[str]]:
    """Items (reference, prediction) laid out row by row from a confusion matrix."""
    t: list[str] = []
    p: list[str] = []
    for i, row in enumerate(cm):
        for j, count in enumerate(row):
            t += [labels[i]] * count
            p += [labels[j]] * count
    return t, p


def _halueval() -> tuple[list[str], list[str], list[str]]:
    t, zero_shot = _from_confusion([[34, 50], [3, 13]])
    t2, with_examples = _from_confusion([[73, 11], [14, 2]])
    assert t == t2
    return t, zero_shot, with_examples


def test_halueval_accuracy_rises_while_balanced_accuracy_falls() -> None:
    t, a, b = _halueval()
    assert objective_value(t, a, objective="accuracy", labels=YN) == pytest.approx(0.47)
    assert objective_value(t, b, objective="accuracy", labels=YN) == pytest.approx(0.75)
    assert objective_value(t, a, labels=YN) == pytest.approx((34 / 84 + 13 / 16) / 2)  # 0.609
    assert objective_value(t, b, labels=YN) == pytest.approx((73 / 84 + 2 / 16) / 2)  # 0.497
    ma = compute_metrics(t, a, labels=YN, pos_label="yes", n_resamples=50)
    mb = compute_metrics(t, b, labels=YN, pos_label="yes", n_resamples=50)
    assert ma.balanced_accuracy == pytest.approx(0.6086, abs=1e-4) and ma.ci.balanced_accuracy is not None
    warning = prior_shift_warning(ma, mb, objective="balanced_accuracy")
    assert warning is not None
    assert warning.startswith("accuracy rose 0.470 -> 0.750 while balanced accuracy fell 0.609 -> 0.497")
    assert "kappa fell" in warning and "AUC fell" in warning
    assert warning.endswith("the examples shifted the label prior, not the judgement")
    # The judge drifted to the majority label: its predicted shares move towards the reference's.
    assert ma.reference_shares == {"no": 0.84, "yes": 0.16}
    assert ma.predicted_shares == {"no": 0.37, "yes": 0.63}
    assert mb.predicted_shares == {"no": 0.87, "yes": 0.13}
    assert (ma.majority_label, ma.majority_accuracy) == ("no", 0.84)

    effect = icl_effect(t, a, b, labels=YN, pos_label="yes", n_resamples=200)
    assert effect.warning is not None and "balanced accuracy fell 0.609 -> 0.497" in effect.warning
    assert effect.accuracy.delta == pytest.approx(0.28) and effect.accuracy.helped == "yes"
    assert effect.objective.objective == "balanced_accuracy"
    assert effect.objective.delta == pytest.approx(-0.1116, abs=1e-4)
    assert effect.objective.helped != "yes"
    assert (effect.mcnemar.n, effect.mcnemar.b + effect.mcnemar.c) == (100, effect.objective.n_discordant)
    assert effect.predicted_shares_first == ma.predicted_shares
    assert effect.predicted_shares_last == mb.predicted_shares
    assert effect.majority.label == "no" and effect.majority.balanced_accuracy == 0.5


def test_no_warning_when_accuracy_falls_or_everything_rises() -> None:
    t, a, b = _halueval()
    ma = compute_metrics(t, a, labels=YN, pos_label="yes", n_resamples=20)
    mb = compute_metrics(t, b, labels=YN, pos_label="yes", n_resamples=20)
    # Reverse: accuracy falls 0.75 -> 0.47 while balanced accuracy rises: no prior-shift warning.
    assert prior_shift_warning(mb, ma) is None
    for o in OBJECTIVES:
        assert prior_shift_warning(mb, ma, objective=o) is None
    # Both rise: no warning either.
    _, better = _from_confusion([[80, 4], [4, 12]])
    mc = compute_metrics(t, better, labels=YN, pos_label="yes", n_resamples=20)
    assert prior_shift_warning(ma, mc) is None
    assert icl_effect(t, b, a, labels=YN, pos_label="yes", n_resamples=20).warning is None


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_balanced_accuracy_matches_scikit_learn_and_compute_metrics() -> None:
    rng = np.random.default_rng(3)
    labels = [1, 2, 3, 4]
    t = [int(x) for x in rng.integers(1, 4, 60)]  # label 4 never a reference
    p = [int(x) for x in rng.integers(1, 5, 60)]
    assert objective_value(t, p, labels=labels) == pytest.approx(sk.balanced_accuracy_score(t, p))
    m = compute_metrics(t, p, labels=labels, n_resamples=20)
    assert m.balanced_accuracy == pytest.approx(sk.balanced_accuracy_score(t, p))
    assert objective_value(t, p, objective="kappa", labels=labels) == pytest.approx(
        sk.cohen_kappa_score(t, p)
    )
    assert objective_value(t, p, objective="macro_f1", labels=labels) == pytest.approx(m.f1_macro)
    for o in OBJECTIVES:  # nothing unparsed: SplitMetrics.objective agrees with objective_value
        assert m.objective(o) == pytest.approx(objective_value(t, p, objective=o, labels=labels))


def test_unparsed_counts_as_wrong() -> None:
    t = ["no", "no", "yes", "yes", None]
    p = ["no", None, "yes", None, "yes"]
    # Balanced accuracy: recall(no) = 1/2, recall(yes) = 1/2 (each None a miss); the None reference is dropped.
    assert objective_value(t, p, labels=YN) == pytest.approx(0.5)
    assert objective_value(t, p, objective="accuracy", labels=YN) == pytest.approx(0.5)
    # Kappa and macro F1: an extra "unparsed" column.
    ext_t, ext_p = ["no", "no", "yes", "yes"], ["no", "u", "yes", "u"]
    kappa = sk.cohen_kappa_score(ext_t, ext_p, labels=["no", "yes", "u"])
    assert objective_value(t, p, objective="kappa", labels=YN) == pytest.approx(kappa)
    f1 = sk.f1_score(ext_t, ext_p, labels=YN, average=None)
    assert objective_value(t, p, objective="macro_f1", labels=YN) == pytest.approx(f1.mean())
    m = compute_metrics(t, p, labels=YN, pos_label="yes", n_resamples=20)
    assert m.balanced_accuracy == 1.0  # over the parsed items only
    for o in OBJECTIVES:
        assert m.objective(o) == pytest.approx(objective_value(t, p, objective=o, labels=YN))
    assert m.predicted_shares == {"no": 0.25, "yes": 0.25, "unparsed": 0.5}
    # Parsing nothing scores like answering wrong everywhere.
    assert objective_value(["no", "yes"], [None, None], labels=YN) == 0.0


def _brute_force_p(t: list[str], a: list[str | None], b: list[str | None], objective: Objective) -> float:
    def value(p: list[str | None]) -> float | None:
        return objective_value(t, p, objective=objective, labels=YN)

    va, vb = value(a), value(b)
    assert va is not None and vb is not None
    observed = abs(vb - va)
    hits = total = 0
    for swaps in itertools.product((False, True), repeat=len(t)):
        sa = [y if s else x for x, y, s in zip(a, b, swaps, strict=True)]
        sb = [x if s else y for x, y, s in zip(a, b, swaps, strict=True)]
        ua, ub = value(sa), value(sb)
        total += 1
        hits += ua is None or ub is None or abs(ub - ua) >= observed - 1e-12
    return hits / total


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_exact_p_equals_brute_force_enumeration(objective: Objective) -> None:
    t = ["no", "no", "no", "no", "no", "yes", "yes", "yes", "no", "yes"]
    a: list[str | None] = ["no", "yes", "no", "yes", None, "no", "yes", "no", "no", "yes"]
    b: list[str | None] = ["no", "no", "no", "no", "no", "yes", "yes", "yes", "yes", None]
    c = objective_difference(t, a, b, objective=objective, labels=YN, n_resamples=50)
    assert c.method == "exact" and c.n_permutations == 2**c.n_discordant
    assert c.p_value == pytest.approx(_brute_force_p(t, a, b, objective))
    assert c.delta == pytest.approx(objective_value(t, b, objective=objective, labels=YN) - c.value_a)  # type: ignore[operator]


def test_monte_carlo_p_close_to_exact() -> None:
    # 40 "no" and 20 "yes" items; A and B differ in correctness on 18 "no" and 8 "yes" items (m = 26 > 20).
    t = ["no"] * 40 + ["yes"] * 20
    a = ["no"] * 40 + ["yes"] * 20
    b = list(a)
    fixed = {"no": (0, 12), "yes": (40, 2)}  # first index, items B gets right and A wrong
    for i in range(18):
        a[i] = "yes" if i < fixed["no"][1] else "no"
        b[i] = "no" if i < fixed["no"][1] else "yes"
    for k in range(8):
        i = 40 + k
        a[i] = "no" if k < fixed["yes"][1] else "yes"
        b[i] = "yes" if k < fixed["yes"][1] else "no"
    c = objective_difference(t, a, b, labels=YN, n_resamples=100, n_permutations=20_000)
    assert c.method == "monte-carlo" and c.n_discordant == 26 and c.n_permutations == 20_000
    # Exact: each class's discordant items contribute w_y (2 X_y - m_y), X_y ~ Binomial(m_y, 1/2).
    w = {"no": 1 / (2 * 40), "yes": 1 / (2 * 20)}
    m = {"no": 18, "yes": 8}
    assert c.delta == pytest.approx(w["no"] * (12 - 6) + w["yes"] * (2 - 6))
    hits = 0
    for x_no in range(m["no"] + 1):
        for x_yes in range(m["yes"] + 1):
            s = w["no"] * (2 * x_no - m["no"]) + w["yes"] * (2 * x_yes - m["yes"])
            if abs(s) >= abs(c.delta) - 1e-12:  # type: ignore[arg-type]
                hits += comb(m["no"], x_no) * comb(m["yes"], x_yes)
    exact = hits / 2**26
    assert c.p_value == pytest.approx(exact, abs=0.015)


def test_stratified_bootstrap_keeps_class_counts() -> None:
    t = np.array([0, 1, 0, 2, 2, 0, 1, 0, 0, 2], dtype=np.int64)
    idx = stratified_indices(t, n_resamples=200, random_state=1)
    assert idx.shape == (200, len(t))
    expected = np.bincount(t)
    for row in idx:
        assert (np.bincount(t[row], minlength=3) == expected).all()
    assert len(np.unique(idx)) == len(t)  # every item is drawn somewhere
    again = stratified_indices(t, n_resamples=200, random_state=1)
    assert (idx == again).all()


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_identical_arms_give_p_one_and_no_delta(objective: Objective) -> None:
    rng = np.random.default_rng(5)
    t = [int(x) for x in rng.integers(0, 3, 300)]
    p: list[int | None] = [None if rng.random() < 0.05 else int(x) for x in rng.integers(0, 3, 300)]
    c = objective_difference(t, p, list(p), objective=objective, labels=[0, 1, 2], n_resamples=100)
    assert c.delta == 0.0 and c.p_value == 1.0 and c.n_discordant == 0 and c.method == "exact"
    assert c.ci_low == 0.0 and c.ci_high == 0.0 and c.helped == "unclear"
    assert "not significant at n = 300" in c.statement


@pytest.mark.parametrize("objective", ["kappa", "macro_f1"])
def test_kappa_and_macro_f1_permutation_sanity(objective: Objective) -> None:
    rng = np.random.default_rng(7)
    t = [int(x) for x in rng.integers(0, 2, 400)]
    noise = [int(x) for x in rng.integers(0, 2, 400)]
    good = [y if rng.random() < 0.9 else 1 - y for y in t]
    better = objective_difference(t, noise, good, objective=objective, labels=[0, 1], n_resamples=200)
    assert better.method == "monte-carlo" and better.p_value is not None and better.p_value < 0.001
    assert better.helped == "yes" and "significantly better" in better.statement
    worse = objective_difference(t, good, noise, objective=objective, labels=[0, 1], n_resamples=200)
    assert worse.helped == "no" and worse.delta == pytest.approx(-better.delta)  # type: ignore[operator]
    # Two independent noise arms: no effect, p well above alpha.
    other = [int(x) for x in rng.integers(0, 2, 400)]
    null = objective_difference(t, noise, other, objective=objective, labels=[0, 1], n_resamples=200)
    assert null.p_value is not None and null.p_value > 0.05 and null.helped == "unclear"


def test_label_shares_and_majority_baseline() -> None:
    assert label_shares(["a", "b", "a", None], ["a", "b", "c"]) == {
        "a": 0.5,
        "b": 0.25,
        "c": 0.0,
        "unparsed": 0.25,
    }
    assert label_shares([1, 1, 0], [0, 1]) == {"0": 1 / 3, "1": 2 / 3}
    assert label_shares([], [0, 1]) == {}
    with pytest.raises(MetricsError, match="not in labels"):
        label_shares(["z"], ["a"])
    t = ["a"] * 6 + ["b"] * 3 + ["c"] * 1 + [None]
    base = majority_baseline(t, ["a", "b", "c", "d"])
    assert (base.label, base.n, base.accuracy) == ("a", 10, 0.6)
    assert base.balanced_accuracy == pytest.approx(1 / 3)  # K = 3 labels occur
    assert base.kappa == 0.0
    assert base.macro_f1 == pytest.approx((2 * 6 / (6 + 10)) / 3)  # F1(a) = 2*6/(2*6+4), 0 for b and c
    assert base.value("accuracy") == 0.6
    tie = majority_baseline(["b", "a"], ["a", "b"])
    assert tie.label == "a"  # ties: first in label-set order
    one_class = majority_baseline([1, 1], [0, 1])
    assert one_class.kappa is None and one_class.balanced_accuracy == 1.0
    empty = majority_baseline([None], [0, 1])
    assert empty.label is None and empty.accuracy is None


def test_old_stored_json_still_loads() -> None:
    m = compute_metrics([0, 1, 1, 0], [0, 1, 0, 0], pos_label=1, n_resamples=20)
    new_fields = {
        "balanced_accuracy",
        "balanced_accuracy_all",
        "kappa_all",
        "f1_macro_all",
        "reference_shares",
        "predicted_shares",
        "majority_label",
        "majority_accuracy",
    }
    old = m.model_dump(mode="json", exclude=new_fields)
    del old["ci"]["balanced_accuracy"]
    loaded = SplitMetrics.model_validate_json(json.dumps(old))
    assert loaded.balanced_accuracy is None and loaded.ci.balanced_accuracy is None
    # Nothing unparsed: the parsed-only values stand in for the objectives.
    assert loaded.objective("kappa") == m.kappa and loaded.objective("accuracy") == m.accuracy_all
    assert loaded.objective("balanced_accuracy") is None  # not stored before
    with_unparsed = compute_metrics([0, 1, 1, 0], [0, None, 0, 0], pos_label=1, n_resamples=20)
    old = with_unparsed.model_dump(mode="json", exclude=new_fields)
    assert SplitMetrics.model_validate(old).objective("kappa") is None  # parsed-only kappa is another figure
    with pytest.raises(MetricsError, match="not supported"):
        m.objective("f1")  # type: ignore[arg-type]
    comparison = compare_arms([0, 1, 1, 0], ("a", [0, 1, 0, 0]), {"b": [0, 1, 1, 1]}, n_resamples=20)[0]
    stored = comparison.model_dump(mode="json", exclude={"objective", "objective_p_holm"})
    assert ArmComparison.model_validate(stored).objective is None


def test_compare_arms_adds_the_objective_with_holm() -> None:
    rng = np.random.default_rng(11)
    t = [int(x) for x in rng.integers(0, 2, 200)]
    ref = [y if rng.random() < 0.7 else 1 - y for y in t]
    arms = {
        "good": [y if rng.random() < 0.95 else 1 - y for y in t],
        "same": list(ref),
        "majority": [0] * 200,
    }
    out = compare_arms(t, ("ref", ref), arms, n_resamples=200, objective="balanced_accuracy", labels=[0, 1])
    by = {}
    for c in out:
        assert c.objective is not None and c.objective.objective == "balanced_accuracy"
        assert c.objective_p_holm is not None and c.objective.p_value is not None
        assert c.objective_p_holm >= c.objective.p_value
        assert ArmComparison.model_validate_json(c.model_dump_json()) == c
        by[c.arm] = c.objective
    assert by["good"].helped == "yes" and "good is significantly better than ref" in by["good"].statement
    assert by["same"].p_value == 1.0 and out[1].objective_p_holm == 1.0
    assert by["majority"].value_b == 0.5 and by["majority"].helped == "no"
    ps = [o.p_value for o in by.values() if o.p_value is not None]
    assert [c.objective_p_holm for c in out] == holm_adjust(ps)
    kappa = compare_arms(t, ("ref", ref), arms, n_resamples=50, objective="kappa")
    assert len(kappa) == len(arms) and all(
        c.objective is not None and c.objective.objective == "kappa" for c in kappa
    )
    assert [c.mcnemar for c in kappa] == [c.mcnemar for c in out]  # McNemar unchanged


def test_bad_arguments() -> None:
    with pytest.raises(MetricsError, match="not supported"):
        objective_value([0], [0], objective="f1")  # type: ignore[arg-type]
    with pytest.raises(MetricsError, match="differ in length"):
        objective_difference([0, 1], [0, 1], [0])
    with pytest.raises(MetricsError, match="alpha"):
        objective_difference([0, 1], [0, 1], [0, 1], alpha=1.5)
    with pytest.raises(MetricsError, match="n_permutations"):
        objective_difference([0, 1], [0, 1], [0, 1], n_permutations=0)
    with pytest.raises(MetricsError, match="not supported"):
        compare_arms([0], ("a", [0]), {"b": [1]}, objective="auc")  # type: ignore[arg-type]
    empty = objective_difference([None], [0], [1], labels=[0, 1])
    assert empty.n == 0 and empty.delta is None and empty.p_value is None and "undefined" in empty.statement


def test_compare_arms_takes_the_label_set_when_no_arm_uses_the_positive_label() -> None:
    """Content-free items (no reference) all labelled "no": the positive label "yes" is still a
    label of the set, not an error (it once stopped a study of calibration blocks)."""
    from allure.metrics import compare_arms

    (cmp,) = compare_arms(
        [None] * 4,
        ("a", ["no"] * 4),
        {"b": ["no"] * 4},
        pos_label="yes",
        labels=["yes", "no"],
        n_resamples=50,
    )
    assert cmp.arm == "b" and cmp.accuracy.n == 0


def test_changes_one_way_per_label_explain_an_interval_off_zero_beside_a_test_that_does_not_reject() -> None:
    """B turns 95 of 100 'no' items right and 85 of 100 'yes' items wrong (A right on every 'yes',
    wrong on every 'no'): the label-stratified interval lies above 0 while the sign-flip test over
    the 180 changed items does not reject. The comparison is unclear, and says why, per label."""
    t = ["no"] * 100 + ["yes"] * 100
    a = ["yes"] * 100 + ["yes"] * 100
    b = ["no"] * 95 + ["yes"] * 5 + ["no"] * 85 + ["yes"] * 15
    c = objective_difference(t, a, b, labels=YN, n_resamples=2000)
    assert c.delta == pytest.approx(0.05)
    assert c.ci_low is not None and c.ci_low > 0 and c.p_value is not None and c.p_value > 0.05
    assert c.helped == "unclear" and c.n_discordant == 180
    assert [(x.label, x.n, x.turned_right, x.turned_wrong) for x in c.by_label] == [
        ("no", 100, 95, 0),
        ("yes", 100, 0, 85),
    ]
    why = c.disagreement()
    assert why is not None and "excludes 0" in why and "right on 95, wrong on 0 of 100" in why
    assert "not significant at n = 200: the interval excludes 0" in c.statement
    agreeing = objective_difference(t, a, ["no"] * 100 + ["yes"] * 100, labels=YN, n_resamples=200)
    assert agreeing.helped == "yes" and agreeing.disagreement() is None


def test_a_comparison_read_from_an_older_report_has_no_label_changes() -> None:
    c = objective_difference(["no", "yes"], ["no", "no"], ["no", "yes"], labels=YN, n_resamples=50)
    old = c.model_dump(mode="json")
    del old["by_label"]
    again = type(c).model_validate(old)
    assert again.by_label == () and again.delta == c.delta


def test_a_one_sided_test_and_an_interval_below_0_do_not_disagree() -> None:
    """The guard's one-sided question ("is B better?") does not reject when B is worse: an interval
    below 0 beside it is no disagreement to explain."""
    t = ["no"] * 50 + ["yes"] * 50
    worse = ["yes"] * 50 + ["yes"] * 50
    c = objective_difference(t, t, worse, labels=YN, n_resamples=200, alternative="greater")
    assert c.ci_high is not None and c.ci_high < 0 and c.p_value is not None and c.p_value > 0.05
    assert c.disagreement() is None
    assert (
        objective_difference(t, t, worse, labels=YN, n_resamples=200).disagreement() is None
    )  # two-sided: p < 0.05
