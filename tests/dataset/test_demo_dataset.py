"""The shipped demo dataset: loadable, composed as its README says, covering all scored CogEval values."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from allure.dataset import DatasetSpec, demo_audit_spec, demo_dataset_path, demo_spec, load_items
from allure.models import Item
from tests.conftest import shared_file

COGEVAL = "data/cogeval_cogmaps/cogeval_conversations.jsonl.gz"

DATA = Path(__file__).parents[2] / "allure" / "data"


def readme_counts() -> dict[str, dict[str, int]]:
    """``{"graphs": {"n7line": 77, ...}, ...}`` from the README's composition block."""
    text = (DATA / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- demo-summary:start -->")[1].split("<!-- demo-summary:end -->")[0]
    out: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"^- (\w+) \((\d+)\): (.+)$", block, flags=re.M):
        pairs = [p.rsplit(" ", 1) for p in m.group(3).split(", ")]
        out[m.group(1)] = {k: int(v) for k, v in pairs}
        assert len(out[m.group(1)]) == int(m.group(2))
    rows = re.search(r"^- rows: (\d+)$", block, flags=re.M)
    assert rows is not None
    out["rows"] = {"": int(rows.group(1))}
    return out


@pytest.fixture(scope="module")
def demo() -> list[Item]:
    return load_items(demo_spec())


def test_demo_file_is_in_the_package() -> None:
    path = demo_dataset_path()
    assert path.is_file() and path.parent.name == "data"
    assert path.stat().st_size < 2_000_000
    assert "MIT License" in (path.parent / "LICENSE-cogeval.txt").read_text(encoding="utf-8")
    spec = demo_spec()
    assert spec.format == "cogeval" and Path(spec.path) == path
    pyproject = tomllib.loads((DATA.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/*" in pyproject["tool"]["setuptools"]["package-data"]["allure"]


def test_demo_matches_its_readme(demo: list[Item]) -> None:
    counts = readme_counts()
    assert len(demo) == counts["rows"][""] and len(demo) >= 300
    assert Counter(i.metadata["graph"] for i in demo) == counts["graphs"]
    assert Counter(i.metadata["domain"] for i in demo) == counts["domains"]
    assert Counter(i.problem_type for i in demo) == counts["tasks"]
    assert Counter(i.generator for i in demo) == counts["generators"]
    assert Counter(i.group for i in demo) == counts["groups"]
    assert Counter(str(i.recorded_label) for i in demo) == counts["scores"]
    assert all(i.gold_answers and i.task and i.response for i in demo)


def test_demo_prefers_short_responses(demo: list[Item]) -> None:
    short = sum(1 for i in demo if len(i.response) <= 400)
    assert short / len(demo) >= 0.5
    assert max(len(i.response) for i in demo) <= 2500


@pytest.mark.slow
def test_demo_covers_every_scored_graph_task_generator(demo: list[Item]) -> None:
    full = load_items(DatasetSpec(path=str(shared_file(COGEVAL))))
    scored = [i for i in full if i.recorded_label is not None]
    for key in (lambda i: i.metadata["graph"], lambda i: i.problem_type, lambda i: i.generator):
        assert {key(i) for i in demo} == {key(i) for i in scored}
    by_id = {i.id: i for i in full}
    for item in demo:  # every demo row is the upstream row, unchanged
        src = by_id[item.id]
        assert (item.response, item.gold_answers, item.recorded_label) == (
            src.response,
            src.gold_answers,
            src.recorded_label,
        )


def test_demo_audit_items_share_tasks(demo: list[Item]) -> None:
    audit = load_items(demo_audit_spec())
    assert len(audit) == 50 and {i.id for i in audit} <= {i.id for i in demo}
    assert {i.problem_type for i in audit} == {i.problem_type for i in demo}  # every task type
    assert all(len(i.response) <= 300 for i in audit)
    # drawn task by task: at most half as many task texts as items (an item-wise draw gives 42)
    assert len({i.task for i in audit}) <= 25
