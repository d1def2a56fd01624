"""Two identical CogEval replays in one project give identical reports (issue 12: the cache key).

Calls are cached by everything the answer depends on; for replay that includes the item's
recorded answer, so a second run answered from the store reports the same disagreements and
metrics as the first. Needs the shared CogEval file (``../shared`` from the repository root).

The replays read one graph and domain of CogEval (:data:`SLICE`, 2,682 of its 61,696 items), not all
of it: the slice holds 142 groups of items that share a prompt, 45 of them with different recorded
labels (the items a cache key without the recorded answer mixes up), and 87 unlabelled items; the
example spec is run as shipped but for its dataset path (the whole file: 50 s of the suite, the
same assertions).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from allure.config import load_spec
from allure.graphs import start_run
from allure.store import RunStore, project_db_path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "cogeval_replay.toml"
DATA = ROOT / ".." / "shared" / "data" / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz"

pytestmark = pytest.mark.integration

SLICE = b'"path": "conversations/n7line/unordSpatial/'
"""The CogEval lines replayed: one graph (n7line) and domain (unordSpatial)."""

_COST = {"calls", "cache_hits", "wall_s", "prompt_tokens", "completion_tokens", "cached_tokens", "retries"}


def _verdict_view(report: dict[str, Any]) -> dict[str, Any]:
    """What the verdicts determine: metrics, agreement and candidate counts (not costs, ids or times)."""
    its = [{k: v for k, v in it.items() if k not in _COST} for it in report["iterations"]]
    return {"iterations": its, "replay_agreement": report["replay_agreement"], "dataset": report["dataset"]}


def _candidates(run_dir: Path) -> list[tuple[str, int, int | None]]:
    rows = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    return [(r["item_id"], r["correct_label"], r["wrong_label"]) for r in rows]


def test_two_replays_of_a_cogeval_slice_in_one_project_give_identical_reports(tmp_path: Path) -> None:
    assert DATA.is_file(), f"the shared CogEval file is missing: {DATA}"
    data = tmp_path / "cogeval_slice.jsonl.gz"
    with gzip.open(DATA, "rb") as src, gzip.open(data, "wb", compresslevel=1) as out:
        out.writelines(line for line in src if SLICE in line)
    spec = load_spec(SPEC)
    spec.dataset = spec.dataset.model_copy(update={"path": str(data)})
    from allure.dataset import load_items
    from allure.gold_check import GoldCheck

    items = load_items(spec.dataset, base_dir=Path(spec.base_dir), label_set=spec.label_set)
    shared = {}  # prompt -> recorded labels: the slice holds items a prompt-only cache key would mix up
    for it in items:
        shared.setdefault((it.task, it.response, tuple(it.gold_answers)), set()).add(it.recorded_label)
    assert len(items) == 2682 and sum(len(labels) > 1 for labels in shared.values()) == 45
    check = GoldCheck(spec.gold_check)
    expected = sorted(
        (it.id, ref, it.recorded_label)
        for it in items
        if (ref := check.reference_label(it)) is not None
        and it.recorded_label is not None
        and it.recorded_label != ref
    )
    first = start_run(spec, tmp_path)
    second = start_run(spec, tmp_path)
    assert first.status == second.status == "done"
    r1 = json.loads((first.run_dir / "report.json").read_text())
    r2 = json.loads((second.run_dir / "report.json").read_text())
    assert r2["iterations"][0]["cache_hits"] == len(items)  # the second run sent nothing
    assert _verdict_view(r1) == _verdict_view(r2)
    c1, c2 = _candidates(first.run_dir), _candidates(second.run_dir)
    assert c1 == c2
    assert sorted(c1) == expected  # every disagreement of the recorded label with the gold check, once
    store = RunStore(project_db_path(tmp_path), create=False)
    v2 = store.verdicts(second.run_id, 1)
    recorded = {it.id: it.recorded_label for it in items}
    assert len(v2) == len(items)
    assert [
        k for k, v in v2.items() if v.label != recorded[k]
    ] == []  # no verdict names another item's answer
