"""The loop graph compiled with an in-memory saver and fake evaluator/memory (unit level)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from allure.config import parse_spec
from allure.dataset import split_heldout
from allure.graphs import build_graph
from allure.graphs.state import AuditContext
from allure.models import IclExample, Item
from allure.store import RunStore
from tests.conftest import write_dataset
from tests.specs import COLUMNS


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

    def all(self) -> list[IclExample]:
        return sorted(self.examples.values(), key=lambda e: e.id)

    def retrieve(self, item: Item, policy: Any) -> list[IclExample]:
        return [e for e in self.all() if e.id not in set(policy.exclude_ids)]

    def retrieve_many(
        self, items: list[Item], policy: Any, *, excluded: dict[str, list[str]] | None = None
    ) -> dict[str, list[IclExample]]:
        """Every example not excluded, an item's own withheld as the real memory withholds it."""
        from allure.memory import without_own

        def every(its: list[Item], pol: Any) -> dict[str, list[IclExample]]:
            return {it.id: self.retrieve(it, pol) for it in its}

        return without_own(every, self.all(), items, policy, excluded)

    def embeddings(self) -> tuple[list[IclExample], Any]:
        """No stored embeddings: the read-out's memory vote is left out (``z`` alone)."""
        import numpy as np

        return [], np.zeros((0, 384), dtype=np.float32)


def test_split_is_stratified_seeded_and_disjoint() -> None:
    # one task an item (the items sharing a task go to one side: tests/dataset/test_folds.py)
    items = [
        Item(id=f"{p}-{i}", task=f"t{p}{i}", response="r", problem_type=p) for p in "ab" for i in range(10)
    ]
    s1, s2 = split_heldout(items, 0.3, 1), split_heldout(items, 0.3, 1)
    assert s1 == s2
    for p in "ab":
        assert sum(v == "heldout" for k, v in s1.items() if k.startswith(p)) == 3
    assert split_heldout(items, 0.3, 2) != s1
    assert set(split_heldout(items, 0.0, 1).values()) == {"audit"}


def _replay_run(
    tmp_path: Path,
    auto: bool,
    max_iterations: int,
    lines: list[str] | None = None,
    memory: FakeMemory | None = None,
    n_per_type: int = 6,
    **loop: Any,
) -> tuple[Any, RunStore, AuditContext, str, Any]:
    write_dataset(tmp_path / "items.jsonl", n_per_type)
    spec = parse_spec(
        {
            "dataset": {
                "path": "items.jsonl",
                "columns": {k: v for k, v in COLUMNS.items() if k != "generator"},
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
        spec=spec,
        store=store,
        memory=FakeMemory() if memory is None else memory,
        project_dir=tmp_path,
        run_dir=tmp_path / "run",
        progress=None if lines is None else lines.append,
    )
    graph = build_graph().compile(checkpointer=InMemorySaver())
    out = graph.invoke(
        {"run_id": rid, "iteration": 0, "history": []}, {"configurable": {"thread_id": rid}}, context=ctx
    )
    return out, store, ctx, rid, graph


@pytest.mark.slow
def test_the_status_line_tells_capped_candidates_from_corrected_ones(tmp_path: Path) -> None:
    lines: list[str] = []
    _, store, _, rid, _ = _replay_run(tmp_path, auto=True, max_iterations=1, lines=lines, max_candidates=1)
    (line,) = [x for x in lines if "mistakes on the audit split" in x]
    mistakes = int(line.split(": ", 1)[1].split(" mistakes")[0])
    assert mistakes > 1 and len(store.candidates(rid)) == 1
    assert (
        f"(0 already corrected in memory, {mistakes - 1} left out by max_candidates), 1 new candidates"
        in line
    )


def test_last_pass_auto_approved_candidates_enter_memory(tmp_path: Path) -> None:
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=True, max_iterations=1)
    assert out["stop_reason"] == "reached max_iterations (1)"
    assert out["iteration"] == 1  # committed, not evaluated again
    approved = store.candidates(rid, status="approved", iteration=1)
    assert approved and set(ctx.memory.examples) == {c.id for c in approved}
    assert store.get_run(rid).status == "done"


def test_last_pass_without_auto_approve_stops_without_review(tmp_path: Path) -> None:
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=False, max_iterations=1)
    assert "__interrupt__" not in out and out["stop_reason"] == "reached max_iterations (1)"
    assert not ctx.memory.examples
    assert store.candidates(rid, status="pending", iteration=1)  # listed for the record, not reviewed


@pytest.mark.slow
@pytest.mark.parametrize("auto", [True, False])
def test_loop_with_in_memory_saver(tmp_path: Path, auto: bool) -> None:
    # the guard is off: replayed labels never change, and the guard adopts only a significant rise
    out, store, ctx, rid, graph = _replay_run(
        tmp_path, auto=auto, max_iterations=3, stop_when_no_gain=False, guard=False
    )
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
    assert len(ctx.memory.examples) == store.candidate_counts(rid)["approved"] > 0
    approved = store.candidates(rid, status="approved")
    assert {c.decision for c in approved} == {"approve"} and {c.id for c in approved} == set(
        ctx.memory.examples
    )
    assert (tmp_path / "run" / "report.json").is_file()
    # each iteration names the memory it used: ids and content hash, in the store and the report
    versions = store.memory_versions(rid)
    assert versions[1][1] == [] and sorted(versions[2][1]) == sorted(ctx.memory.examples)
    assert versions[2][0] == ctx.memory.version().content_hash != versions[1][0]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [i["memory_ids"] for i in report["iterations"]] == [versions[1][1], versions[2][1]]
    assert store.get_run(rid).status == "done"


@pytest.mark.slow
def test_stop_when_no_gain_reads_the_audit_split_out_of_fold_when_cross_fitted(tmp_path: Path) -> None:
    # the default [loop] folds = 5: no dev split is carved; the stop rule reads the audit split
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=True, max_iterations=3, guard=False)
    ba = [store.metrics(rid)[i]["audit"].balanced_accuracy for i in (1, 2)]
    assert "dev" not in store.metrics(rid)[1] and ctx.dev_ids(rid) == set()
    assert out["stop_reason"] == (
        f"no gain on the audit split out of fold (balanced accuracy {ba[0]:.3f} -> {ba[1]:.3f})"
    )
    line = store.get_run(rid).info["decision_data"]
    assert re.fullmatch(r"decision data: 8 audit items \(0: \d, 1: \d\), 5 folds, cross-fitted", line), line


@pytest.mark.slow
def test_stop_when_no_gain_stops_the_loop_when_the_dev_objective_does_not_rise(tmp_path: Path) -> None:
    # Replayed labels never change, so the 2nd pass's dev balanced accuracy equals the 1st: no gain.
    # folds = 0: the dev split rule, kept working
    out, store, ctx, rid, _ = _replay_run(tmp_path, auto=True, max_iterations=3, guard=False, folds=0)
    ba = [store.metrics(rid)[i]["dev"].balanced_accuracy for i in (1, 2)]
    assert ba[0] is not None and ba[0] == ba[1]
    assert out["stop_reason"] == f"no gain on the dev split (balanced accuracy {ba[0]:.3f} -> {ba[1]:.3f})"
    assert out["iteration"] == 2
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["stop_reason"] == out["stop_reason"]
    # The same run with the rule off goes on until nothing new is proposed.
    (tmp_path / "off").mkdir()
    off, *_ = _replay_run(
        tmp_path / "off", auto=True, max_iterations=3, stop_when_no_gain=False, guard=False, folds=0
    )
    assert off["stop_reason"] == "no new candidates"


def test_a_label_set_other_than_0_1_runs_through_the_loop(tmp_path: Path) -> None:
    """Labels 1 (wrong) and 2 (right): reference, replayed labels, candidates, metrics and report use them."""
    rows = [json.loads(line) for line in write_dataset(tmp_path / "raw.jsonl").read_text().splitlines()]
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps({**r, "judge": r["judge"] + 1}) + "\n" for r in rows)
    )
    spec = parse_spec(
        {
            "label_set": [1, 2],
            "dataset": {
                "path": "items.jsonl",
                "columns": {k: v for k, v in COLUMNS.items() if k != "generator"},
            },
            "gold_check": {"positive_label": 2, "negative_label": 1},
            "evaluator": {"kind": "replay", "label_pattern": "score:\\s*([12])\\b"},
            "loop": {"max_iterations": 2, "heldout_fraction": 0.34},
            "auto_approve": True,
        },
        base_dir=tmp_path,
    )
    store = RunStore(tmp_path / "s.db")
    rid = store.create_run(spec.model_dump(mode="json"))
    ctx = AuditContext(
        spec=spec, store=store, memory=FakeMemory(), project_dir=tmp_path, run_dir=tmp_path / "run"
    )
    graph = build_graph().compile(checkpointer=InMemorySaver())
    out = graph.invoke(
        {"run_id": rid, "iteration": 0, "history": []}, {"configurable": {"thread_id": rid}}, context=ctx
    )
    assert out["stop_reason"]
    assert set(store.reference_labels(rid).values()) == {1, 2}
    labels = {v.label for v in store.verdicts(rid, 1).values()}
    assert labels == {1, 2}  # parsed by the spec's pattern, never coerced to 0/1
    m = store.metrics(rid)[1]["all"]
    assert m.confusion.labels == [1, 2] and m.positive_label == 2 and m.n_unparsed == 0
    # The recorded judge calls every 'Room' answer right: its mistakes are false 2s, corrected to 1.
    cands = store.candidates(rid)
    assert cands and {(c.wrong_label, c.correct_label) for c in cands} == {(2, 1)}
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["iterations"][0]["splits"]["heldout"]["confusion"]["labels"] == [1, 2]
