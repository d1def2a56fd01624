"""Validated selection against the scripted server: it reads dev items only and keeps a block only
when the block beats zero-shot there (the scripted judge grades strictly once it has examples)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from allure.config import load_spec
from allure.errors import StudyError
from allure.gold_check import GoldCheck
from allure.graphs.prepare import prepare_audit
from allure.memory import EpisodicMemory
from allure.models import IclExample
from allure.store import project_db_path
from allure.studies import StudySource, candidate_blocks, validated_selection
from tests.conftest import ScriptedServer, write_dataset, write_spec

pytestmark = pytest.mark.integration


def test_validated_selection_sends_no_heldout_item_and_beats_zero_shot(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    spec_path = write_spec(tmp_path, scripted_server.base_url)
    write_dataset(tmp_path / "items.jsonl", n_per_type=12)
    spec = load_spec(spec_path)
    prepared = prepare_audit(spec, tmp_path)
    items = prepared.items
    heldout = {i for i, s in prepared.splits.items() if s == "heldout"}
    audit = [it for it in items if it.id not in heldout]
    mine, dev = audit[: len(audit) // 2], audit[len(audit) // 2 :]
    check = GoldCheck(spec.gold_check)
    memory = EpisodicMemory.open(str(tmp_path / "memory"))
    memory.add(
        IclExample.model_validate(
            {
                **it.model_dump(include={"task", "response", "gold_answers", "problem_type"}),
                "id": IclExample.make_id(it.id, ref),
                "item_id": it.id,
                "correct_label": ref,
                "decision": "approve",
                "source": "mistake" if "Room" in it.response else "success",
            }
        )
        for it in mine
        if (ref := check.reference_label(it)) is not None
    )
    src = StudySource(
        spec=spec,
        items=dev,
        reference={it.id: prepared.references[it.id] for it in dev},
        splits={it.id: "audit" for it in dev},
        source={"spec": str(spec_path), "split": "dev"},
        memory_location=memory.location,
    )
    cands = candidate_blocks(memory, 2, prior={"0": 0.67, "1": 0.33})
    project = tmp_path / "proj"
    sel = validated_selection(project, src, memory, cands, heldout_ids=heldout, name="select")
    assert sel.best.example_ids, sel.scores  # a block beat zero-shot on dev
    assert sel.scores[sel.best.name] > sel.scores["cand-0 zero-shot"]
    with sqlite3.connect(project_db_path(project)) as db:
        sent = {r[0] for r in db.execute("SELECT DISTINCT item_id FROM calls")}
    assert sent and sent <= {it.id for it in dev}
    assert not sent & heldout
    # a held-out item among the dev items is refused before any call
    before = len(scripted_server.requests())
    bad = StudySource(**{**src.__dict__, "items": [*dev, next(it for it in items if it.id in heldout)]})
    with pytest.raises(StudyError, match="held-out"):
        validated_selection(project, bad, memory, cands, heldout_ids=heldout, name="select-bad")
    assert len(scripted_server.requests()) == before
