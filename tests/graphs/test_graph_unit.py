"""The loop graph compiled with an in-memory saver and fake evaluator/memory (unit level)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from allure.config import parse_spec
from allure.graphs import build_graph
from allure.graphs.nodes import split_items
from allure.graphs.state import AuditContext
from allure.models import IclExample, Item
from allure.store import RunStore
from tests.conftest import write_dataset


class FakeMemory:
    """Enough of EpisodicMemory for the loop."""

    def __init__(self) -> None:
        self.examples: dict[str, IclExample] = {}

    def version(self) -> Any:
        from allure.memory import MemoryVersion, content_hash

        ex = sorted(self.examples.values(), key=lambda e: e.id)
        return MemoryVersion(ids=[e.id for e in ex], content_hash=content_hash(ex), size=len(ex))

    def add(self, examples: list[IclExample]) -> int:
        new = [e for e in examples if e.id not in self.examples]
        self.examples.update({e.id: e for e in examples})
        return len(new)

    def retrieve(self, item: Item, policy: Any) -> list[IclExample]:
        return sorted(self.examples.values(), key=lambda e: e.id)


def test_split_is_stratified_seeded_and_disjoint() -> None:
    items = [Item(id=f"{p}-{i}", task="t", response="r", problem_type=p) for p in "ab" for i in range(10)]
    s1, s2 = split_items(items, 0.3, 1), split_items(items, 0.3, 1)
    assert s1 == s2
    for p in "ab":
        assert sum(v == "heldout" for k, v in s1.items() if k.startswith(p)) == 3
    assert split_items(items, 0.3, 2) != s1
    assert set(split_items(items, 0.0, 1).values()) == {"audit"}


def _replay_run(
    tmp_path: Path, auto: bool, max_iterations: int, **loop: Any
) -> tuple[Any, RunStore, AuditContext, str, Any]:
    write_dataset(tmp_path / "items.jsonl")
    spec = parse_spec(
        {
            "dataset": {
                "path": "items.jsonl",
                "columns": {
                    "id": "uid",
                    "task": "question",
                    "response": "answer",
                    "gold_answers": "gold",
                    "problem_type": "kind",
                    "recorded_label": "judge",
                },
            },
            "evaluator": {"kind": "replay"},
            "loop": {"max_iterations": max_iterations, "heldout_fraction": 0.34, **loop},
            "auto_approve": auto,
        },
        base_dir=tmp_path,
    )
    store = RunStore(tmp_path / "s.db")
    rid = store.create_run(spec.model_dump(mode="json"))
    ctx = AuditContext(
        spec=spec, store=store, project_dir=tmp_path, run_dir=tmp_path / "run", _memory=FakeMemory()
    )
    graph = build_graph().compile(checkpointer=InMemorySaver())
    out = graph.invoke(
        {"run_id": rid, "iteration": 0, "history": []}, {"configurable": {"thread_id": rid}}, context=ctx
    )
    return out, store, ctx, rid, graph


def test_last_pass_auto_approved_candidates_enter_memory(tmp_path: Path) -> None:
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=True, max_iterations=1)
    assert out["stop_reason"] == "reached max_iterations (1)"
    assert out["iteration"] == 1  # committed, not evaluated again
    approved = store.candidates(rid, status="approved", iteration=1)
    assert approved and set(ctx._memory.examples) == {c.id for c in approved}
    assert store.get_run(rid).status == "done"


def test_last_pass_without_auto_approve_stops_without_review(tmp_path: Path) -> None:
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=False, max_iterations=1)
    assert "__interrupt__" not in out and out["stop_reason"] == "reached max_iterations (1)"
    assert not ctx._memory.examples
    assert store.candidates(rid, status="pending", iteration=1)  # listed for the record, not reviewed


@pytest.mark.parametrize("auto", [True, False])
def test_loop_with_in_memory_saver(tmp_path: Path, auto: bool) -> None:
    out, store, ctx, rid, graph = _replay_run(tmp_path, auto=auto, max_iterations=3, stop_when_no_gain=False)
    config = {"configurable": {"thread_id": rid}}
    if not auto:
        # exactly one interrupt, whose payload lists the pending candidates
        (intr,) = out["__interrupt__"]
        assert intr.value["n_pending"] == len(intr.value["candidates"]) > 0
        decisions = [{"candidate_id": c["id"], "decision": "approve"} for c in intr.value["candidates"]]
        out = graph.invoke(Command(resume={"decisions": decisions}), config, context=ctx)
    # replay labels never change, so the 2nd pass finds nothing new: the loop stops on its own
    assert out["stop_reason"] == "no new candidates"
    assert out["iteration"] == 2
    assert len(ctx._memory.examples) == store.candidate_counts(rid)["approved"] > 0
    assert all(store.candidates(rid, status="approved"))
    assert (tmp_path / "run" / "report.json").is_file()
    # each iteration names the memory it used: ids and content hash, in the store and the report
    versions = store.memory_versions(rid)
    assert versions[1][1] == [] and sorted(versions[2][1]) == sorted(ctx._memory.examples)
    assert versions[2][0] == ctx._memory.version().content_hash != versions[1][0]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [i["memory_ids"] for i in report["iterations"]] == [versions[1][1], versions[2][1]]
    assert store.get_run(rid).status == "done"
