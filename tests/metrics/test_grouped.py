"""The test of "better" with items in groups: whole groups swapped (``better_p(groups=)``).

Responses to one task move together; a test that permutes single items calls a gain that sits in one
task significant. The whole-group swap test does not (``benchmarks/results/grouped_level.md``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from allure.graphs.guard import guard_decision
from allure.metrics import (
    MetricsError,
    better_p,
    choose_calibration,
    group_swap_p,
    objective_value,
    significantly_better,
)
from allure.metrics._objective import paired_codes
from allure.models import Verdict

LABELS = ["yes", "no"]


def _one_task_gain() -> tuple[list[str], list[str], list[str], list[str]]:
    """60 items, 6 tasks of 10 responses. A and B agree everywhere except on task t0, where B gets
    all 10 responses right (5 'yes', 5 'no') that A got wrong."""
    refs, a, b, groups = [], [], [], []
    for g in range(6):
        for k in range(10):
            ref = "yes" if k < 5 else "no"
            wrong = "no" if ref == "yes" else "yes"
            refs.append(ref)
            groups.append(f"t{g}")
            if g == 0:
                a.append(wrong)
                b.append(ref)
            else:
                lab = ref if (g + k) % 4 else wrong  # some mistakes both make
                a.append(lab)
                b.append(lab)
    return refs, a, b, groups


def test_a_gain_in_one_task_is_significant_item_by_item_but_not_by_task() -> None:
    refs, a, b, groups = _one_task_gain()
    assert better_p(refs, a, b, labels=LABELS) < 0.01  # 10 items, each its own
    # one group differs: its swap is one of two equally likely outcomes, p = 1/2
    assert better_p(refs, a, b, labels=LABELS, groups=groups) == pytest.approx(0.5)


def test_items_each_their_own_group_give_the_items_test() -> None:
    rng = np.random.default_rng(3)
    refs = [LABELS[int(x)] for x in rng.random(80) < 0.4]
    a = [r if rng.random() < 0.75 else LABELS[1 - LABELS.index(r)] for r in refs]
    b = [r if rng.random() < 0.85 else LABELS[1 - LABELS.index(r)] for r in refs]
    for objective in ("balanced_accuracy", "accuracy", "kappa", "macro_f1"):
        alone = better_p(refs, a, b, labels=LABELS, objective=objective)  # type: ignore[arg-type]
        own = better_p(refs, a, b, labels=LABELS, objective=objective, groups=list(range(80)))  # type: ignore[arg-type]
        assert own == alone


@pytest.mark.parametrize("objective", ["balanced_accuracy", "accuracy", "kappa", "macro_f1"])
def test_exact_enumeration_matches_swapping_by_hand(objective: str) -> None:
    """Every one of the 2^G group swaps, scored with objective_value, against group_swap_p."""
    rng = np.random.default_rng(7)
    n, groups = 40, [i // 5 for i in range(40)]  # 8 groups
    refs = [LABELS[int(x)] for x in rng.random(n) < 0.4]
    a = [r if rng.random() < 0.7 else LABELS[1 - LABELS.index(r)] for r in refs]
    b = [r if rng.random() < 0.8 else LABELS[1 - LABELS.index(r)] for r in refs]
    a[3] = None  # an unparsed verdict counts as wrong under every swap
    observed = objective_value(refs, b, objective=objective, labels=LABELS) - objective_value(  # type: ignore[arg-type,operator]
        refs,
        a,
        objective=objective,
        labels=LABELS,  # type: ignore[arg-type]
    )
    hits = total = 0
    for flips in itertools.product((0, 1), repeat=8):
        aa = [b[i] if flips[groups[i]] else a[i] for i in range(n)]
        bb = [a[i] if flips[groups[i]] else b[i] for i in range(n)]
        d = objective_value(refs, bb, objective=objective, labels=LABELS) - objective_value(  # type: ignore[arg-type,operator]
            refs,
            aa,
            objective=objective,
            labels=LABELS,  # type: ignore[arg-type]
        )
        hits += d >= observed - 1e-12
        total += 1
    labs, t, ca, cb = paired_codes(refs, a, b, LABELS)
    got = group_swap_p(t, ca, cb, groups, objective, len(labs))  # type: ignore[arg-type]
    # groups whose labels agree do not count: their swap changes nothing (each doubles hits and total)
    assert got == pytest.approx(hits / total)


def test_many_groups_are_drawn_and_reproducible() -> None:
    rng = np.random.default_rng(11)
    n = 200
    groups = [i // 4 for i in range(n)]  # 50 groups: random flips, not 2^50
    refs = [LABELS[int(x)] for x in rng.random(n) < 0.3]
    a = [r if rng.random() < 0.75 else LABELS[1 - LABELS.index(r)] for r in refs]
    b = [
        r if x != r and rng.random() < 0.6 else x for r, x in zip(refs, a, strict=True)
    ]  # fixes, no new mistakes
    labs, t, ca, cb = paired_codes(refs, a, b, LABELS)
    p1 = group_swap_p(t, ca, cb, groups, "balanced_accuracy", 2, n_permutations=4000, seed=1)
    assert p1 == group_swap_p(t, ca, cb, groups, "balanced_accuracy", 2, n_permutations=4000, seed=1)
    assert 1 / 4001 <= p1 < 0.05  # a real gain over 50 groups is still seen
    assert group_swap_p(t, cb, ca, groups, "balanced_accuracy", 2, n_permutations=4000, seed=1) > 0.9


def test_groups_must_match_the_items() -> None:
    refs, a, b, groups = _one_task_gain()
    with pytest.raises(MetricsError):
        better_p(refs, a, b, labels=LABELS, groups=groups[:-1])


def test_items_without_a_reference_leave_their_group_key_too() -> None:
    refs, a, b, groups = _one_task_gain()
    refs = [None, *refs[1:]]  # the first response of t0 has no reference: dropped with its key
    assert better_p(refs, a, b, labels=LABELS, groups=groups) == pytest.approx(0.5)


def test_significantly_better_and_calibration_choice_pass_the_groups() -> None:
    refs, a, b, groups = _one_task_gain()
    assert significantly_better(refs, a, b, labels=LABELS, alpha=0.05).better
    assert not significantly_better(refs, a, b, labels=LABELS, alpha=0.05, groups=groups).better
    cands = {"none": a, "offset": b}
    assert choose_calibration(cands, refs, labels=LABELS, alpha=0.05).mode == "offset"
    assert choose_calibration(cands, refs, labels=LABELS, alpha=0.05, groups=groups).mode == "none"


def test_the_guard_keeps_the_active_memory_when_its_gain_sits_in_one_task() -> None:
    from allure.config import LoopSpec

    refs, a, b, groups = _one_task_gain()
    ids = [f"i{k:02d}" for k in range(len(refs))]
    active = {i: Verdict(item_id=i, label=lab) for i, lab in zip(ids, a, strict=True)}
    new = {i: Verdict(item_id=i, label=lab) for i, lab in zip(ids, b, strict=True)}
    references = dict(zip(ids, refs, strict=True))
    loop = LoopSpec(guard_min_per_label=5)

    def decide(by_task: dict[str, str] | None) -> bool:
        return guard_decision(
            loop,
            LABELS,
            references,
            set(ids),
            active,
            new,
            active_name="zero-shot",
            new_name="v2",
            folds=5,
            groups=by_task,
        ).adopt

    assert decide(None)
    assert not decide(dict(zip(ids, groups, strict=True)))


def test_calibration_auto_tests_a_pass_by_its_task_groups() -> None:
    """The wiring of the pass pipeline: ``CalibrationTarget.groups`` reaches ``auto``'s test."""
    from allure.passes._calibrate_modes import CalibrationTarget, choose_mode

    refs, a, b, groups = _one_task_gain()
    ids = [f"i{k:02d}" for k in range(len(refs))]
    candidates = {"none": dict(zip(ids, a, strict=True)), "offset": dict(zip(ids, b, strict=True))}
    parsed = dict(zip(ids, a, strict=True))

    def chosen(by_task: dict[str, str]) -> str:
        target = CalibrationTarget(
            fit=dict(zip(ids, refs, strict=True)),
            folds={i: k % 5 for k, i in enumerate(ids)},
            alpha=0.05,
            min_per_label=5,
            groups=by_task,
        )
        return choose_mode(candidates, parsed, target, LABELS)[0]

    assert chosen({}) == "offset"
    assert chosen(dict(zip(ids, groups, strict=True))) == "none"


def test_the_read_out_auto_tests_by_task_groups() -> None:
    """The wiring of the read-out step: ``PassReadout.groups`` reaches ``auto``'s test. A backwards
    judge's read-out is adopted item by item; with its 100 fit items in 3 tasks, no flip of 3 groups
    can reach p < 0.05 (the smallest p is 1/8), so the parsed labels are kept."""
    from dataclasses import replace

    from tests.metrics.test_readout import _cross_fitted, _items

    items, verdicts, refs = _items(200)
    step, fit, _ = _cross_fitted("auto", items, refs, 100)
    assert "adopted out of fold" in step.read(items, verdicts).decision
    tasks = {i: f"t{int(i[1:]) % 3}" for i in fit}
    kept = replace(step, groups=tasks).read(items, verdicts)
    assert kept.labels == {} and "parsed labels kept" in kept.decision


def test_the_held_out_claim_treats_a_task_as_one_unit() -> None:
    """``objective_difference(groups=)``: the gain of one task out of six is no claim (its interval
    resamples whole tasks, its two-sided p swaps them); item by item it was 'helped'."""
    from allure.metrics import objective_difference

    refs, a, b, groups = _one_task_gain()
    alone = objective_difference(refs, a, b, labels=LABELS)
    assert alone.helped == "yes" and alone.p_value is not None and alone.p_value < 0.01
    by_task = objective_difference(refs, a, b, labels=LABELS, groups=groups)
    assert by_task.helped == "unclear" and by_task.p_value == 1.0  # both swaps of t0: the same |delta|
    assert by_task.ci_low is not None and by_task.ci_low <= 0.0 < by_task.ci_high  # type: ignore[operator]
    same = objective_difference(refs, a, b, labels=LABELS, groups=list(range(len(refs))))
    assert same == alone  # every item its own task: item by item


def test_a_gain_spread_over_many_tasks_is_still_claimed() -> None:
    from allure.metrics import objective_difference

    rng = np.random.default_rng(5)
    n = 300
    groups = [i // 3 for i in range(n)]  # 100 tasks of 3 responses
    refs = [LABELS[int(x)] for x in rng.random(n) < 0.3]
    a = [r if rng.random() < 0.7 else LABELS[1 - LABELS.index(r)] for r in refs]
    b = [r if x != r and rng.random() < 0.6 else x for r, x in zip(refs, a, strict=True)]
    got = objective_difference(refs, a, b, labels=LABELS, groups=groups)
    assert got.helped == "yes" and got.ci_low is not None and got.ci_low > 0


def test_the_report_claims_on_held_out_responses_grouped_by_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring of the report: the held-out claim gets each item's task group (responses to one
    task text share a key; an item with a task of its own keys itself)."""
    from types import SimpleNamespace

    import allure.report._from_store as from_store
    from allure.models import Item

    held = [
        Item(id="a1", task="the same question", response="r"),
        Item(id="a2", task="the same question", response="r"),
        Item(id="b1", task="another one", response="r"),
        Item(id="c1", task="no reference", response="r"),
    ]
    refs = {"a1": "yes", "a2": "no", "b1": "yes", "c1": None}
    store = SimpleNamespace(
        reference_labels=lambda run_id: refs,
        items=lambda run_id, split: held,
        verdicts=lambda run_id, it: {x.id: Verdict(item_id=x.id, label="yes") for x in held},
    )
    spec = SimpleNamespace(
        label_set=LABELS,
        positive_label="yes",
        loop=SimpleNamespace(objective="balanced_accuracy", bootstrap_resamples=10, seed=0),
    )
    seen: dict[str, object] = {}
    monkeypatch.setattr(from_store, "icl_effect", lambda *a, **k: seen.update(k) or "effect")
    assert from_store._effect(store, spec, "run", 1, 2) == "effect"  # type: ignore[arg-type]
    assert seen["groups"] == ["a1", "a1", "b1"]  # c1 has no reference: not compared
