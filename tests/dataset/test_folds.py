"""Cross-fitting folds (``[loop] folds``): seeded, stratified by reference label, balanced, audit only."""

from __future__ import annotations

from collections import Counter

import pytest

from allure.config import parse_spec
from allure.dataset import cross_folds, dev_split, folds_digest
from allure.errors import SpecError
from allure.models import Item


def _data(n: int = 103) -> tuple[dict[str, object], dict[str, str]]:
    refs: dict[str, object] = {f"i{k}": ("yes" if k % 7 == 0 else "no") for k in range(n)}
    refs["i5"] = None  # an audit item without a reference still gets a fold
    splits = {i: ("heldout" if k % 4 == 0 else "audit") for k, i in enumerate(refs)}
    return refs, splits


def test_folds_are_seeded_stratified_balanced_and_audit_only() -> None:
    refs, splits = _data()
    folds = cross_folds(refs, splits, 5, 0)
    assert folds == cross_folds(dict(reversed(refs.items())), splits, 5, 0)  # order does not matter
    assert set(folds) == {i for i, s in splits.items() if s == "audit"}
    sizes = Counter(folds.values())
    assert set(sizes) == set(range(5)) and max(sizes.values()) - min(sizes.values()) <= 1
    for label in ("yes", "no"):
        per = Counter(j for i, j in folds.items() if refs[i] == label)
        assert max(per.values()) - min(per.get(j, 0) for j in range(5)) <= 1, label
    assert cross_folds(refs, splits, 5, 1) != folds
    assert folds_digest(folds) == folds_digest(dict(folds)) != folds_digest(cross_folds(refs, splits, 5, 1))
    assert cross_folds(refs, splits, 0, 0) == {}


def test_with_folds_no_dev_split_is_carved() -> None:
    refs, splits = _data()
    items = [Item(id=i, task="t", response="r") for i in refs]
    assert dev_split(items, splits, 0.3, 0) and dev_split(items, splits, 0.3, 0, folds=5) == set()


def test_one_fold_is_refused_naming_the_field_and_the_fix(tmp_path: object) -> None:
    base = {"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}}
    assert parse_spec(base).loop.folds == 5
    assert parse_spec({**base, "loop": {"folds": 0}}).loop.folds == 0
    with pytest.raises(SpecError) as err:
        parse_spec({**base, "loop": {"folds": 1}})
    assert "loop.folds" in str(err.value) and "folds = 5" in str(err.value)


def test_a_dev_fraction_without_folds_asks_for_the_dev_split() -> None:
    """A spec written before cross-fitting (or a stored run's spec from then) keeps the dev split rule."""
    base = {"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}}
    assert parse_spec({**base, "loop": {"dev_fraction": 0.5}}).loop.folds == 0
    assert parse_spec({**base, "loop": {"dev_fraction": 0.5, "folds": 3}}).loop.folds == 3
    old = parse_spec(base).model_dump(mode="json")
    del old["loop"]["folds"]
    from allure.config import AuditSpec

    assert AuditSpec.model_validate(old).loop.folds == 0


def _cogeval_shaped(seed: int = 3) -> tuple[list[Item], dict[str, object]]:
    """CogEval's shape: per problem type, prompts that several responses answer (1 to 12 each), the
    responses' labels mixed within a prompt; item ids unrelated to the prompt."""
    import random

    rng = random.Random(seed)
    items, refs = [], {}
    for ptype in ("1stepPath", "2stepPath", "valuePath"):
        for p in range(25):
            for r in range(rng.randint(1, 12)):
                item_id = f"row-{rng.randrange(10**9):09d}"
                items.append(
                    Item(id=item_id, task=f"{ptype} prompt {p}", response=f"answer {r}", problem_type=ptype)
                )
                refs[item_id] = rng.random() < 0.35
    return items, refs


def test_splits_and_folds_keep_the_responses_to_one_task_together() -> None:
    """Issue 41 item 3: no task's responses sit on both sides of the held-out split or of two folds;
    the split stays near its share per problem type, and the folds stay near equal and stratified."""
    from allure.dataset import split_heldout, task_groups

    items, refs = _cogeval_shaped()
    task = {it.id: it.task for it in items}
    splits = split_heldout(items, 0.3, 0)
    assert split_heldout(items, 0.3, 0) == splits  # seeded
    per_task: dict[str, set[str]] = {}
    for i, s in splits.items():
        per_task.setdefault(task[i], set()).add(s)
    assert len(per_task) == 75 and all(len(sides) == 1 for sides in per_task.values())
    for ptype in ("1stepPath", "2stepPath", "valuePath"):
        mine = [it.id for it in items if it.problem_type == ptype]
        held = sum(splits[i] == "heldout" for i in mine)
        assert 0 < held < len(mine) and abs(held - 0.3 * len(mine)) <= 12, (ptype, held, len(mine))
    folds = cross_folds(refs, splits, 5, 0, task_groups(items))
    assert set(folds) == {i for i, s in splits.items() if s == "audit"}
    per_task_fold: dict[str, set[int]] = {}
    for i, j in folds.items():
        per_task_fold.setdefault(task[i], set()).add(j)
    assert per_task_fold and all(len(js) == 1 for js in per_task_fold.values())
    sizes = Counter(folds.values())
    assert set(sizes) == set(range(5)) and max(sizes.values()) - min(sizes.values()) <= 12, sizes
    for label in (True, False):  # every fold holds each label
        assert set(Counter(j for i, j in folds.items() if refs[i] is label)) == set(range(5)), label
    # item by item (the rule before), the same data puts one task on both sides: the test can fail
    old = split_heldout(items, 0.3, 0, by_task=False)
    assert any(len({old[it.id] for it in items if it.task == t}) == 2 for t in per_task)
    loose = cross_folds(refs, old, 5, 0)
    assert any(len({loose[it.id] for it in items if it.task == t and it.id in loose}) > 1 for t in per_task)


def test_a_run_whose_folds_were_dealt_item_by_item_keeps_them(tmp_path: object) -> None:
    """A run stored before folds kept tasks together resumes with the folds it recorded (run info
    ``folds``); a new run records the grouped ones; folds that match neither are refused."""
    from pathlib import Path

    from allure.errors import StoreError
    from allure.graphs.state import AuditContext
    from allure.store import RunStore

    items, refs = _cogeval_shaped()
    tmp = Path(str(tmp_path))
    store = RunStore(tmp / "s.db")
    spec = parse_spec({"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}})
    from allure.dataset import split_heldout, task_groups

    splits = split_heldout(items, 0.3, 0)
    audit = {i for i, s in splits.items() if s == "audit"}
    grouped = cross_folds(refs, splits, 5, 0, task_groups(items))
    older = cross_folds(refs, splits, 5, 0)
    assert grouped != older

    def ctx_for(info: dict[str, object] | None) -> tuple[AuditContext, str]:
        rid = store.create_run(spec.model_dump(mode="json"))
        store.add_items(rid, items, splits, refs)  # type: ignore[arg-type]
        if info is not None:
            store.update_run(rid, info={"folds": info})
        ctx = AuditContext(spec=spec, store=store, memory=None, project_dir=tmp, run_dir=tmp)  # type: ignore[arg-type]
        return ctx, rid

    ctx, rid = ctx_for(None)
    assert ctx.folds(rid) == grouped
    assert store.get_run(rid).info["folds"] == {"k": 5, "n": len(audit), "digest": folds_digest(grouped)}
    ctx, rid = ctx_for({"k": 5, "n": len(audit), "digest": folds_digest(older)})
    assert ctx.folds(rid) == older
    ctx, rid = ctx_for({"k": 5, "n": len(audit), "digest": "0" * 16})
    with pytest.raises(StoreError, match="differ from the run's"):
        ctx.folds(rid)
