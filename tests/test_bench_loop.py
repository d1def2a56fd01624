"""``benchmarks/bench_loop.py``'s item draws (issue 43): every pre-registered task is one the bench
runs, the two draws of a large task are disjoint, seeded and of the registered size, and the RTE draws
keep the label shares; the pairwise task's spec is one the product accepts."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_loop  # noqa: E402


def test_every_preregistered_task_is_a_bench_task() -> None:
    pre = bench_loop.prereg()
    assert sorted(pre["task"]) == sorted(bench_loop.TASKS)
    assert pre["alpha"] == 0.05 and pre["alternative"] == "two-sided"
    for name, task in pre["task"].items():
        assert task["objective"] in ("balanced_accuracy", "macro_f1", "accuracy", "kappa"), name


def test_rte_draws_are_disjoint_seeded_and_keep_the_label_shares() -> None:
    pre = bench_loop.prereg()["task"]["rte"]
    first, second = bench_loop.rte_draws(pre)
    assert len(first) == len(second) == pre["draw_size"] == 600
    assert not set(first) & set(second)
    assert bench_loop.rte_draws(pre) == [first, second]  # the same draws again
    rows = bench_loop._zhao_rows("rte")
    for draw in (first, second):
        shares = Counter(rows[i]["label"] for i in draw)
        assert abs(shares["entailment"] - shares["not_entailment"]) <= 2, shares


def test_halueval_second_draw_is_new_items() -> None:
    pre = bench_loop.prereg()["task"]["halueval"]
    first, second = bench_loop.halueval_draws(pre)
    assert len(first) == len(second) == 600
    assert not set(first) & set(second)


@pytest.mark.parametrize("name", [pytest.param("pairwise", marks=pytest.mark.slow), "cb", "rte"])
def test_a_tasks_spec_is_one_the_product_accepts(name: str, tmp_path: Path) -> None:
    from allure.config import parse_spec

    task, pre = bench_loop.TASKS[name], bench_loop.prereg()
    ids = task.draws(pre["task"][name])[0][:20]
    data = task.write(tmp_path, ids)
    spec = parse_spec(bench_loop.audit_spec(task, data, pre, 0), source=name)
    assert spec.loop.max_iterations == 2 and spec.loop.heldout_fraction == 0.5
    assert spec.loop.objective == pre["task"][name]["objective"]
    from allure.dataset import load_items

    items = load_items(spec.dataset, label_set=spec.label_set, synonyms=spec.label_synonyms)
    assert sorted(it.id for it in items) == sorted(ids)
