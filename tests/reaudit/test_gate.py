"""The gate's checks on hand-made labels (no evaluator)."""

from __future__ import annotations

import pytest

from allure.config import GateSpec
from allure.metrics import compute_metrics
from allure.models import Item
from allure.reaudit import evaluate_gate


def _items(n_per_type: int) -> list[Item]:
    return [
        Item(
            id=f"{t}-{j}",
            task=f"task {t}-{j}",
            response=f"Answer: {j}",
            gold_answers=[f"Answer: {j}"],
            problem_type=t,
        )
        for t in ("a", "b")
        for j in range(n_per_type)
    ]


def _gate(items: list[Item], refs: dict, now: dict, before: dict | None, gate: GateSpec):  # type: ignore[no-untyped-def]
    ids = [it.id for it in items]
    metrics = compute_metrics([refs[i] for i in ids], [now[i] for i in ids], pos_label=1, n_resamples=100)
    return evaluate_gate(
        gate,
        items=items,
        references=refs,
        labels=now,
        metrics=metrics,
        label_set=[0, 1],
        baseline_id="ra-base" if before is not None else "",
        baseline_labels=before,
    )


def test_significant_drop_on_one_type_fails_and_names_flips() -> None:
    items = _items(10)
    refs = {it.id: 1 for it in items}
    before = dict(refs)  # all right
    now = {i: (0 if i.startswith("b-") and int(i[2:]) < 7 else 1) for i in refs}  # 7 of type b flip
    res = _gate(items, refs, now, before, GateSpec(max_drop={"accuracy": 0.1}))
    drop = next(c for c in res.checks if c.name == "max_drop accuracy")
    # b = 7, c = 0: p = 2 * 0.5**7 = 0.015625 < 0.05; drop 7/20 = 0.35 > 0.1
    assert (drop.b, drop.c) == (7, 0) and drop.p_value == pytest.approx(0.015625) and not drop.passed
    by_type = {c.name: c for c in res.checks if c.kind == "problem_type"}
    # Holm over two types: p_b = 0.015625 * 2 = 0.03125 (the smaller p is multiplied by m = 2)
    assert not by_type["problem_type b"].passed and by_type["problem_type b"].p_value == pytest.approx(
        0.03125
    )
    assert by_type["problem_type a"].passed and by_type["problem_type a"].p_value == pytest.approx(1.0)
    assert res.status == "regression"
    assert sorted(f.item_id for f in res.flips_to_wrong) == [f"b-{j}" for j in range(7)]


def test_drop_beyond_threshold_but_not_significant_passes() -> None:
    items = _items(10)
    refs = {it.id: 1 for it in items}
    now = {i: (0 if i in ("a-0", "b-0", "b-1") else 1) for i in refs}  # 3 flips: p = 2 * 0.5**3 = 0.25
    res = _gate(items, refs, now, dict(refs), GateSpec(max_drop={"accuracy": 0.05}))
    drop = next(c for c in res.checks if c.name == "max_drop accuracy")
    assert drop.passed and drop.p_value == pytest.approx(0.25)
    assert "not significant at n = 20" in drop.message
    assert res.status == "pass" and len(res.flips_to_wrong) == 3


def test_minimum_broken_fails_without_baseline() -> None:
    items = _items(5)
    refs = {it.id: 1 for it in items}
    now = {i: (1 if i.endswith(("-0", "-1")) else 0) for i in refs}  # accuracy 4/10
    res = _gate(items, refs, now, None, GateSpec(min={"accuracy": 0.5, "f1": 0.5}))
    checks = {c.name: c for c in res.checks}
    assert not checks["min accuracy"].passed and checks["min accuracy"].value == pytest.approx(0.4)
    assert checks["min f1"].passed  # f1 = 2*4 / (2*4 + 6) = 0.571
    assert res.status == "regression" and res.baseline_id == ""
    per_type = [c for c in res.checks if c.kind == "problem_type"]
    assert len(per_type) == len({it.problem_type for it in items}) >= 2
    assert all(c.passed for c in per_type)  # nothing to compare with


def test_gate_spec_rejects_unknown_metric_and_bad_threshold() -> None:
    with pytest.raises(ValueError, match="unknown gate metric 'acc'"):
        GateSpec(min={"acc": 0.5})
    with pytest.raises(ValueError, match="outside"):
        GateSpec(max_drop={"kappa": -0.1})
