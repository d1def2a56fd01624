"""The seeded stratified limit: proportions, minimum one per stratum, reproducibility."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from allure.dataset import ColumnMap, DatasetSpec, allocate, load_items, stratified_sample
from allure.errors import DatasetError
from allure.models import Item


def items(counts: dict[str, int]) -> list[Item]:
    out = []
    for kind, n in counts.items():
        out += [Item(id=f"{kind}-{i}", task="t", response="r", problem_type=kind) for i in range(n)]
    return out


def test_allocate_by_hand() -> None:
    # quotas 3.0, 1.5, 0.5 -> floors 3, 1, 0; remainders tie b/c, by name b -> {3, 2, 0};
    # c is raised to 1 from the largest share a -> {2, 2, 1}
    assert allocate({"a": 6, "b": 3, "c": 1}, 5) == {"a": 2, "b": 2, "c": 1}
    # quotas 5, 2.5, 2.5 -> floors 5, 2, 2 (sum 9); one left for b (tie, by name)
    assert allocate({"a": 10, "b": 5, "c": 5}, 10) == {"a": 5, "b": 3, "c": 2}
    assert allocate({"a": 2, "b": 1}, 9) == {"a": 2, "b": 1}  # total above size: everything


def test_allocate_sums_to_total_and_respects_sizes() -> None:
    sizes = {"a": 100, "b": 7, "c": 1, "d": 40}
    for total in range(4, 148):
        alloc = allocate(sizes, total)
        assert sum(alloc.values()) == total
        assert all(1 <= alloc[k] <= sizes[k] for k in sizes)


def test_sample_is_stratified_and_reproducible() -> None:
    pool = items({"x": 60, "y": 30, "z": 10})
    a = stratified_sample(pool, 20, seed=3)
    b = stratified_sample(pool, 20, seed=3)
    c = stratified_sample(pool, 20, seed=4)
    assert [i.id for i in a] == [i.id for i in b]
    assert [i.id for i in a] != [i.id for i in c]
    assert Counter(i.problem_type for i in a) == {"x": 12, "y": 6, "z": 2}
    ids = [i.id for i in a]
    assert ids == [i.id for i in pool if i.id in set(ids)]  # file order kept
    assert stratified_sample(pool, 500, seed=0) == pool


def test_limit_through_load_items(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    kinds = ["p"] * 30 + ["q"] * 10
    path.write_text("".join(json.dumps({"response": f"r{i}", "k": k}) + "\n" for i, k in enumerate(kinds)))
    spec = DatasetSpec(path=str(path), columns=ColumnMap(problem_type="k"), limit=8, seed=11)
    first = load_items(spec)
    assert [i.id for i in first] == [i.id for i in load_items(spec)]
    assert Counter(i.problem_type for i in first) == {"p": 6, "q": 2}
    other = load_items(spec.model_copy(update={"seed": 12}))
    assert {i.id for i in other} != {i.id for i in first}


def test_sample_by_task_takes_whole_tasks_largest_first() -> None:
    pool = []
    sizes = {"x": {"t1": 5, "t2": 1, "t3": 3, "t4": 1}, "y": {"u1": 2, "u2": 4}}
    for kind, tasks in sizes.items():
        for task, n in tasks.items():
            pool += [Item(id=f"{task}-{i}", task=task, response="r", problem_type=kind) for i in range(n)]
    a = stratified_sample(pool, 10, seed=1, by_task=True)
    assert a == stratified_sample(pool, 10, seed=1, by_task=True)
    by_kind = Counter(i.problem_type for i in a)
    assert by_kind == Counter(i.problem_type for i in stratified_sample(pool, 10, seed=1))  # same quotas
    tasks = Counter(i.task for i in a)
    # x's quota (10 * 10/16 -> 6): t1 whole (5), then one of t3; y's quota 4: u2 whole
    assert tasks["t1"] == 5 and tasks["t3"] == 1 and tasks["u2"] == 4 and len(tasks) == 3
    assert [i.id for i in a] == [i.id for i in pool if i in a]  # input order kept


def _rows(path: Path, bad_line: int | None = None) -> None:
    with path.open("w") as fh:
        for i in range(60):
            label = "maybe" if i + 1 == bad_line else i % 2
            fh.write(
                json.dumps(
                    {
                        "id": f"r{i}",
                        "q": f"task {i % 7}",
                        "a": "x" * (i % 13),
                        "kind": "ab"[i % 3 == 0],
                        "y": label,
                    }
                )
                + "\n"
            )


def test_a_limit_builds_the_same_items_as_sampling_them_all(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    _rows(data)
    cols = ColumnMap(id="id", task="q", response="a", problem_type="kind", gold_label="y")
    for by in ("item", "task"):
        everything = load_items(DatasetSpec(path=str(data), columns=cols, max_response_chars=10))
        limited = load_items(
            DatasetSpec(path=str(data), columns=cols, max_response_chars=10, limit=12, seed=5, sample_by=by)
        )
        assert limited == stratified_sample(everything, 12, seed=5, by_task=by == "task")
        assert len(limited) == 12


def test_a_limit_maps_only_the_sampled_rows(tmp_path: Path) -> None:
    """A bad label outside the sample is not read; inside it, it is reported with its line."""
    data = tmp_path / "d.jsonl"
    cols = ColumnMap(id="id", task="q", response="a", problem_type="kind", gold_label="y")
    spec = DatasetSpec(path=str(data), columns=cols, limit=5, seed=1)
    _rows(data)
    sample = load_items(spec)
    chosen = {int(it.id[1:]) + 1 for it in sample}  # line numbers of the sampled rows
    _rows(data, bad_line=next(n for n in range(1, 61) if n not in chosen))
    assert load_items(spec) == sample
    _rows(data, bad_line=min(chosen))
    with pytest.raises(DatasetError, match=rf"d.jsonl:{min(chosen)}, field 'y'"):
        load_items(spec)
