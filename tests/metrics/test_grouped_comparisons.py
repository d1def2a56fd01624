"""McNemar's test, the paired intervals and t-tests, the studies and a re-audit's gate with items in groups.

A prompt change moves all responses to one task alike; counting them as independent discordant
pairs fails a gate (or calls an arm better) on one task's noise. With ``groups`` the p is the
larger of McNemar's and the sign-flip test over whole tasks, and the intervals resample tasks.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from allure.config import GateSpec
from allure.metrics import (
    compare_arms,
    compute_metrics,
    group_swap_p,
    icl_effect,
    mcnemar_exact_p,
    mcnemar_test,
    paired_difference,
)
from allure.models import Item
from allure.reaudit import GateResult, evaluate_gate

THREE = [
    Item(id="a1", task="the same question", response="r"),
    Item(id="a2", task="the same question", response="r"),
    Item(id="b1", task="another one", response="r"),
]
"""Two responses to one task and one to another: their task groups are ``a1, a1, b1``."""


def _study_source() -> SimpleNamespace:
    """A study source over :data:`THREE` (references 1, 0, 1; labels 0 and 1)."""
    return SimpleNamespace(
        items=THREE,
        reference={"a1": 1, "a2": 0, "b1": 1},
        spec=SimpleNamespace(
            positive_label=1,
            label_set=[0, 1],
            loop=SimpleNamespace(objective="balanced_accuracy", bootstrap_resamples=10, seed=0),
        ),
    )


def _right_wrong(b: int, c: int, same: int) -> tuple[list[int], list[int], list[int]]:
    """References (all 1), A and B: ``b`` items A right and B wrong, ``c`` the other way, ``same``
    right in both."""
    refs = [1] * (b + c + same)
    a = [1] * b + [0] * c + [1] * same
    bb = [0] * b + [1] * c + [1] * same
    return refs, a, bb


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 6), (7, 0), (5, 5), (3, 9), (2, 14)])
def test_the_group_test_of_singletons_is_mcnemars_exact_test(b: int, c: int) -> None:
    """Each item its own group, at most 16 discordant: the sign-flip enumeration is the exact
    binomial test, so the coding of right/wrong as accuracy codes is McNemar's statistic."""
    refs, a, bb = _right_wrong(b, c, 4)
    wrong = lambda xs: 1 - np.asarray([int(x == r) for x, r in zip(xs, refs, strict=True)])  # noqa: E731
    p = group_swap_p(
        np.zeros(len(refs), dtype=np.int64),
        wrong(a),
        wrong(bb),
        list(range(len(refs))),
        "accuracy",
        1,
        alternative="two-sided",
    )
    assert p == pytest.approx(mcnemar_exact_p(b, c))


def test_groups_make_mcnemar_swap_whole_tasks() -> None:
    """Three tasks with c_g - b_g = 5, 3 and -1 (observed sum 7): of the 8 sign flips, 4 reach
    |sum| >= 7 (+-9, +-7), so the group p is 1/2, larger than the item-level p."""
    refs, a, b, groups = [], [], [], []
    for g, (bg, cg) in enumerate([(0, 5), (1, 4), (2, 1)]):
        r, x, y = _right_wrong(bg, cg, 2)
        refs += r
        a += x
        b += y
        groups += [f"task{g}"] * len(r)
    flat = mcnemar_test(refs, a, b)
    got = mcnemar_test(refs, a, b, groups=groups)
    sums = [abs(5 * s0 + 3 * s1 - 1 * s2) for s0, s1, s2 in itertools.product((1, -1), repeat=3)]
    assert (got.b, got.c, got.n) == (flat.b, flat.c, flat.n) == (3, 10, 19)
    assert got.p_value == pytest.approx(sum(s >= 7 for s in sums) / 8) == pytest.approx(0.5)
    assert got.p_items == pytest.approx(flat.p_value) and flat.p_value < 0.1
    assert got.groups == 3 and flat.groups is None


def test_mcnemar_groups_must_match_the_items() -> None:
    from allure.metrics import MetricsError

    with pytest.raises(MetricsError, match="differ in length"):
        mcnemar_test([1, 1], [1, 0], [0, 1], groups=["a"])


def test_the_paired_interval_resamples_whole_tasks() -> None:
    """One task a reference label: every resample of whole tasks (stratified by label) draws the
    same two tasks, so the interval is the observed difference itself; item by item it is wide."""
    refs = [1] * 10 + [0] * 10
    a = [1, 0] * 5 + [0, 1] * 5
    b = [1] * 10 + [0] * 10
    groups = ["pos"] * 10 + ["neg"] * 10
    flat = paired_difference(refs, a, b, labels=[0, 1], n_resamples=200)
    grouped = paired_difference(refs, a, b, labels=[0, 1], n_resamples=200, groups=groups)
    assert flat.delta == grouped.delta == pytest.approx(0.5)
    assert flat.ci_low is not None and flat.ci_high is not None and flat.ci_high - flat.ci_low > 0.2
    assert grouped.ci_low == pytest.approx(0.5) and grouped.ci_high == pytest.approx(0.5)


def test_the_paired_interval_of_many_tasks_is_wider_than_item_by_item() -> None:
    """40 tasks of 5 responses, each task helped or hurt as a whole: resampling tasks shows that
    spread, resampling items hides it."""
    rng = np.random.default_rng(0)
    refs, a, b, groups = [], [], [], []
    for g in range(40):
        helped = rng.random() < 0.5
        for k in range(5):
            refs.append(k % 2)
            a.append(k % 2 if not helped else 1 - k % 2)
            b.append(k % 2 if helped else 1 - k % 2)
            groups.append(g)
    flat = paired_difference(refs, a, b, labels=[0, 1], n_resamples=500)
    by_task = paired_difference(refs, a, b, labels=[0, 1], n_resamples=500, groups=groups)
    assert flat.ci_low is not None and by_task.ci_low is not None
    assert flat.ci_high is not None and by_task.ci_high is not None
    assert by_task.ci_high - by_task.ci_low > 1.5 * (flat.ci_high - flat.ci_low)


def _tasks(n_tasks: int, per_task: int) -> list[Item]:
    """``n_tasks`` tasks of ``per_task`` responses each (ids ``t<task>-<k>``), one problem type."""
    return [
        Item(
            id=f"t{g}-{k}",
            task=f"question {g}",
            response=f"Answer: {k}",
            gold_answers=["x"],
            problem_type="x",
        )
        for g in range(n_tasks)
        for k in range(per_task)
    ]


def _one_task_flips() -> tuple[list[Item], dict[str, int], dict[str, int], dict[str, int]]:
    """6 tasks of 8 responses (type 'x'). The baseline gets all right; now task 0's 8 responses are
    wrong (McNemar b = 8, c = 0: p = 0.0078 item by item)."""
    items = _tasks(6, 8)
    refs = {it.id: 1 for it in items}
    now = {it.id: 0 if it.id.startswith("t0-") else 1 for it in items}
    return items, refs, dict(refs), now


def _gate(items: list[Item], refs: dict[str, int], before: dict[str, int], now: dict[str, int]) -> GateResult:
    ids = [it.id for it in items]
    metrics = compute_metrics([refs[i] for i in ids], [now[i] for i in ids], pos_label=1, n_resamples=50)
    return evaluate_gate(
        GateSpec(max_drop={"accuracy": 0.05}),
        items=items,
        references=refs,  # type: ignore[arg-type]
        labels=now,  # type: ignore[arg-type]
        metrics=metrics,
        label_set=[0, 1],
        baseline_id="ra-base",
        baseline_labels=before,  # type: ignore[arg-type]
    )


def test_the_gate_does_not_fail_on_one_tasks_responses_flipping_together() -> None:
    items, refs, before, now = _one_task_flips()
    res = _gate(items, refs, before, now)
    drop = next(c for c in res.checks if c.name == "max_drop accuracy")
    assert (drop.b, drop.c, drop.groups) == (8, 0, 6)
    assert drop.p_value == pytest.approx(1.0)  # one task differs: its flip is one of two outcomes
    assert drop.passed and "in 6 tasks" in drop.message
    by_type = next(c for c in res.checks if c.kind == "problem_type")
    assert by_type.passed and by_type.groups == 6
    assert res.status == "pass" and len(res.flips_to_wrong) == 8


def test_the_gate_still_fails_a_drop_spread_over_many_tasks() -> None:
    """The same 8 flips, one in each of 8 tasks of 6: that is a regression the group test sees."""
    items = _tasks(8, 6)
    refs = {it.id: 1 for it in items}
    now = {it.id: 0 if it.id.endswith("-0") else 1 for it in items}
    res = _gate(items, refs, dict(refs), now)
    drop = next(c for c in res.checks if c.name == "max_drop accuracy")
    assert drop.groups == 8 and drop.p_value == pytest.approx(2 / 2**8)
    assert not drop.passed and res.status == "regression"


def test_the_gate_without_shared_tasks_is_mcnemars_test() -> None:
    items, refs, before, now = _one_task_flips()
    items = [it.model_copy(update={"task": f"own {it.id}"}) for it in items]
    drop = next(c for c in _gate(items, refs, before, now).checks if c.name == "max_drop accuracy")
    assert drop.groups is None and drop.p_value == pytest.approx(mcnemar_exact_p(8, 0))
    assert not drop.passed


def test_compare_arms_tests_and_resamples_by_task() -> None:
    items, refs, before, now = _one_task_flips()
    ids = [it.id for it in items]
    y = [refs[i] for i in ids]
    groups = [it.task for it in items]
    arms = {"new": [now[i] for i in ids]}
    flat = compare_arms(y, ("old", [before[i] for i in ids]), arms, labels=[0, 1], n_resamples=100)[0]
    by_task = compare_arms(
        y, ("old", [before[i] for i in ids]), arms, labels=[0, 1], n_resamples=100, groups=groups
    )[0]
    assert flat.significant and flat.direction == "worse"
    assert not by_task.significant and by_task.mcnemar.groups == 6
    assert by_task.objective is not None and by_task.objective.p_value == pytest.approx(1.0)


def test_the_icl_effect_passes_the_groups_to_every_test() -> None:
    items, refs, before, now = _one_task_flips()
    ids = [it.id for it in items]
    effect = icl_effect(
        [refs[i] for i in ids],
        [before[i] for i in ids],
        [now[i] for i in ids],
        labels=[0, 1],
        pos_label=1,
        n_resamples=100,
        groups=[it.task for it in items],
    )
    assert effect.mcnemar.groups == 6 and effect.mcnemar.p_value == pytest.approx(1.0)
    assert effect.accuracy.ci_low is not None and effect.accuracy.ci_high is not None


def test_a_study_compares_its_arms_by_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring of a study: its arms are compared with each item's task group."""
    import allure.studies._run as run

    src = _study_source()
    seen: dict[str, object] = {}
    monkeypatch.setattr(run, "compare_arms", lambda *a, **k: seen.update(k) or [])
    run._compare(src, {"ref": [1, 0, 1], "arm": [1, 1, 1]}, "ref", 0.05)  # type: ignore[arg-type]
    assert seen["groups"] == ["a1", "a1", "b1"]


def test_the_reports_did_it_help_intervals_resample_by_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring of the report's first-vs-last intervals: each held-out item's task group."""
    import allure.report._from_store as from_store
    from allure.models import Verdict

    held = [
        Item(id="a1", task="the same question", response="r"),
        Item(id="a2", task="the same question", response="r"),
        Item(id="b1", task="another one", response="r"),
        Item(id="c1", task="no reference", response="r"),
    ]
    store = SimpleNamespace(
        reference_labels=lambda run_id: {"a1": 1, "a2": 0, "b1": 1, "c1": None},
        items=lambda run_id, split: held,
        verdicts=lambda run_id, it: {x.id: Verdict(item_id=x.id, label=1) for x in held},
    )
    spec = SimpleNamespace(
        label_set=[0, 1], positive_label=1, loop=SimpleNamespace(bootstrap_resamples=10, seed=0)
    )
    seen: dict[str, object] = {}
    monkeypatch.setattr(from_store, "icl_helped", lambda *a, **k: seen.update(k) or {})
    from_store._helped(store, spec, "run", 0, 1)  # type: ignore[arg-type]
    assert seen["groups"] == ["a1", "a1", "b1"]


def test_a_studys_table_says_when_its_tests_swap_whole_tasks() -> None:
    from allure.studies._write import _arms_table

    items, refs, before, now = _one_task_flips()
    ids = [it.id for it in items]
    y = [refs[i] for i in ids]

    def table(groups: list[str] | None) -> str:
        cmp = compare_arms(
            y, ("old", [before[i] for i in ids]), {"new": [now[i] for i in ids]}, labels=[0, 1], groups=groups
        )[0]
        metrics = SimpleNamespace(
            accuracy=0.8, ci=SimpleNamespace(accuracy=None), f1=0.8, kappa=0.0, auc=None, n_unparsed=0
        )
        arm = SimpleNamespace(
            arm=SimpleNamespace(name="old"), metrics=metrics, mean_examples=0.0, dropped=0, comparison=None
        )
        study = SimpleNamespace(arms=[arm, SimpleNamespace(**{**vars(arm), "comparison": cmp})])
        return "\n".join(_arms_table(study))  # type: ignore[arg-type]

    assert "(6 tasks)" in table([it.task for it in items])
    assert "tasks" not in table(None)


def test_a_learning_curve_point_resamples_and_tests_by_task() -> None:
    """One task a reference label: every resample of whole tasks is the data itself, so the point's
    intervals collapse to its values; and two tasks cannot make a change significant."""
    from allure.metrics import curve_point

    refs = [1] * 10 + [0] * 10
    zero = [1, 0] * 5 + [0, 1] * 5
    draw = [1] * 10 + [0] * 10
    groups = ["pos"] * 10 + ["neg"] * 10
    flat = curve_point(refs, zero, [draw], size=5, labels=[0, 1], n_resamples=200)
    by_task = curve_point(refs, zero, [draw], size=5, labels=[0, 1], n_resamples=200, groups=groups)
    assert flat.delta == by_task.delta == pytest.approx(0.5)
    assert flat.delta_low is not None and flat.delta_low < 0.45
    assert by_task.delta_low == pytest.approx(0.5) and by_task.delta_high == pytest.approx(0.5)
    assert flat.p_value is not None and flat.p_value < 0.01
    # two tasks differ: of the 4 swaps, none or both swapped give |delta| = 0.5, one swapped gives 0
    assert by_task.p_value == pytest.approx(0.5)


def test_the_learning_curve_study_passes_the_task_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    import allure.studies._learning_curve_fit as fit

    src = _study_source()
    seen: dict[str, object] = {}

    class Seen(Exception):
        pass

    def capture(*a: object, **k: object) -> None:
        seen.update(k)
        raise Seen

    monkeypatch.setattr(fit, "curve_point", capture)
    plan = SimpleNamespace(sizes=[2], repeats=1)
    labels = {"zero-shot": [1, 1, 1], "n=2 #0": [1, 0, 1]}
    with pytest.raises(Seen):
        fit.summarise_curve(src, None, plan, None, labels)  # type: ignore[arg-type]
    assert seen["groups"] == ["a1", "a1", "b1"]


def test_the_paired_t_test_runs_on_the_tasks_means() -> None:
    from scipy import stats

    from allure.metrics import paired_t_test

    a = [0.1, 0.3, 0.2, 0.9, 0.4, 0.4, 0.5]
    b = [0.4, 0.2, 0.6, 1.0, 0.9, 0.8, 0.5]
    groups = ["x", "x", "y", "y", "z", "z", "z"]
    got = paired_t_test(a, b, groups=groups)
    means_a, means_b = [0.2, 0.55, 0.4333333333], [0.3, 0.8, 0.7333333333]
    want = stats.ttest_rel(means_b, means_a)
    assert got.groups == 3 and got.n == 7
    assert got.t == pytest.approx(want.statistic) and got.p_value == pytest.approx(want.pvalue)
    assert got.mean_difference == pytest.approx(sum(b) / 7 - sum(a) / 7)
    flat = paired_t_test(a, b)
    assert flat.groups is None and flat.p_value == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert paired_t_test(a, b, groups=list("abcdefg")).p_value == pytest.approx(flat.p_value)


def test_the_paired_t_test_refuses_groups_of_the_wrong_length() -> None:
    from allure.metrics import MetricsError, paired_t_test

    with pytest.raises(MetricsError, match="group keys"):
        paired_t_test([1.0, 2.0, 3.0], [2.0, 2.0, 4.0], groups=["a"])


def test_the_sensitivity_difference_resamples_and_tests_by_task() -> None:
    """With/without-memory S_tau differences: one task of responses all moving alike cannot make a
    test over two tasks' means significant, nor an interval over tasks narrow."""
    from allure.robustness._sensitivity_report import _difference_test

    items = _tasks(2, 10)
    without = np.zeros(20)
    with_m = np.asarray([0.5] * 10 + [0.0] * 10) + np.linspace(0, 0.01, 20)
    src = SimpleNamespace(spec=SimpleNamespace(loop=SimpleNamespace(bootstrap_resamples=200, seed=0)))
    ci, test = _difference_test(items, without, with_m, src)  # type: ignore[arg-type]
    assert test.groups == 2 and (test.p_value is None or test.p_value > 0.05)
    assert ci is not None and ci.low < 0.05 and ci.high > 0.45  # either task alone can be drawn twice
    own = [it.model_copy(update={"task": it.id}) for it in items]
    ci_flat, flat = _difference_test(own, without, with_m, src)  # type: ignore[arg-type]
    assert flat.groups is None and flat.p_value is not None and flat.p_value < 0.05
    assert ci_flat is not None and ci_flat.high - ci_flat.low < ci.high - ci.low


def test_the_entropy_comparisons_test_by_task() -> None:
    from allure.robustness._entropy_report import _comparisons

    items = _tasks(3, 4)
    src = SimpleNamespace(items=items)
    r_by = {"zero-shot": [0.5] * 12, "memory": [0.5 + 0.01 * k for k in range(12)]}
    variants = [SimpleNamespace(name="original", q=1)]
    got = _comparisons(None, src, variants, r_by, {}, ())  # type: ignore[arg-type]
    assert [(c.a, c.b, c.n, c.test.groups) for c in got] == [("zero-shot", "memory", 12, 3)]


def test_the_sensitivity_finding_says_its_interval_resampled_tasks() -> None:
    from allure.robustness._sensitivity_report import _difference_test, _findings

    items = _tasks(2, 10)
    without, with_m = np.zeros(20), np.linspace(0, 0.2, 20)
    src = SimpleNamespace(spec=SimpleNamespace(loop=SimpleNamespace(bootstrap_resamples=50, seed=0)))
    ci, test = _difference_test(items, without, with_m, src)  # type: ignore[arg-type]
    report = SimpleNamespace(
        conditions=[],
        flips=[],
        difference=float((with_m - without).mean()),
        difference_ci=ci,
        paired_test=test,
    )
    assert "2 tasks resampled" in " ".join(_findings(report))  # type: ignore[arg-type]
    report.paired_test = test.model_copy(update={"groups": None})
    assert "tasks resampled" not in " ".join(_findings(report))  # type: ignore[arg-type]
