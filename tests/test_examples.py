"""The worked examples under ``examples/``: each loads, validates, and runs one pass with the scripted
OpenAI-compatible server on a small slice, with the expected metrics derived from the server's rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.config import AuditSpec, load_spec, parse_spec
from allure.dataset import load_items
from allure.gold_check import GoldCheck
from allure.graphs import start_run
from allure.store import RunStore, project_db_path
from allure.validate import validate_spec
from tests.conftest import ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared" / "data"


def scripted_label(spec: AuditSpec, response: str) -> object:
    """The scripted server's zero-shot rule for a reference-free prompt: labels[len(response) % k]."""
    return spec.label_set[len(response) % len(spec.label_set)]


@pytest.mark.parametrize(
    ("name", "n_items", "references"),
    [
        ("halueval_general", 200, None),
        ("summeval_consistency", 100, {"consistent": 70, "inconsistent": 30}),  # ALLURE's 2.5 threshold
        ("qags_cnndm", 235, {"consistent": 113, "inconsistent": 122}),  # 113 rows with consistency 1.0
        ("cb_nli", 56, {"contradiction": 28, "entailment": 23, "neutral": 5}),
        ("rte_nli", 277, {"entailment": 146, "not_entailment": 131}),
    ],
)
def test_worked_example(
    name: str,
    n_items: int,
    references: dict[str, int] | None,
    tmp_path: Path,
    scripted_server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert SHARED.is_dir(), f"the worked examples need the shared data at {SHARED}"
    spec = load_spec(ROOT / "examples" / f"{name}.toml")
    v = validate_spec(spec)
    assert v.n_items == n_items
    if references is not None:
        assert v.reference_labels == references
    # one pass on a 12-item slice against the scripted server
    raw = spec.model_dump(mode="json")
    raw["dataset"]["limit"] = 12
    raw["evaluator"].update(
        kind="openai", model="scripted", base_url=scripted_server.base_url, api_key_env="ALLURE_TEST_KEY"
    )
    raw["loop"].update(max_iterations=1, heldout_fraction=0)
    raw["memory"]["location"] = str(tmp_path / "memory")
    small = parse_spec(raw, source=name, base_dir=Path(spec.base_dir))
    monkeypatch.setenv("ALLURE_TEST_KEY", "k")
    outcome = start_run(small, tmp_path)
    assert outcome.status == "done"

    items = load_items(small.dataset, base_dir=Path(small.base_dir), label_set=small.label_set)
    check = GoldCheck(small.gold_check)
    pairs = [(check.reference_label(it), scripted_label(small, it.response)) for it in items]
    pairs = [(r, p) for r, p in pairs if r is not None]
    store = RunStore(project_db_path(tmp_path))
    m = store.metrics(outcome.run_id)[1]["all"]
    store.close()
    assert m.n == 12 and m.n_unparsed == 0 and m.n_scored == len(pairs)
    assert m.accuracy == sum(r == p for r, p in pairs) / len(pairs)
    labels = list(small.label_set)
    expected = [[sum(r == a and p == b for r, p in pairs) for b in labels] for a in labels]
    assert m.confusion.labels == labels and m.confusion.matrix == expected
    assert len(scripted_server.requests()) == 12
