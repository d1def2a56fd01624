"""Study records: each kind reads back as its own type, and the older one-shape ``study.json``
(version 1, every kind's fields in one record) still opens, in Python and from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.errors import StudyError
from allure.metrics import compute_metrics
from allure.robustness import SensitivityRecord
from allure.studies import (
    STUDY_SCHEMA_VERSION,
    AblationRecord,
    ArmResult,
    ArmSpec,
    StudyRecord,
    SweepRecord,
    list_studies,
    load_study,
    migrate_study,
    record_type,
)
from tests.cli_run import run_cli


def _arm(name: str, **arm: object) -> dict[str, object]:
    metrics = compute_metrics([1, 0, 1, 0], [1, 0, 0, 0], labels=(0, 1), pos_label=1, n_resamples=50)
    result = ArmResult(
        arm=ArmSpec(name=name, **arm),  # type: ignore[arg-type]
        index=1,
        example_ids=[],
        mean_examples=0.0,
        dropped=0,
        prompts_with_drops=0,
        calls=4,
        cache_hits=0,
        wall_s=0.5,
        metrics=metrics,
    )
    return result.model_dump(mode="json")


def _v1(kind: str, study_id: str, **own: object) -> dict[str, object]:
    """A ``study.json`` as version 1 wrote it: every kind's fields, the other kinds' left empty."""
    record: dict[str, object] = {
        "version": 1,
        "id": study_id,
        "kind": kind,
        "status": "done",
        "created_at": f"2026-01-0{len(study_id) % 9 + 1}T00:00:00+00:00",
        "finished_at": "2026-01-01T00:01:00+00:00",
        "source": {"spec": "audit.toml", "split": "all"},
        "n_items": 4,
        "item_ids_hash": "abc",
        "evaluator": {"model": "scripted", "params": {}},
        "prompt": "default",
        "memory_location": "memory",
        "memory_version": "v1hash",
        "memory_size": 3,
        "by": None,
        "clusters": [],
        "sizes": [],
        "repeats": 0,
        "balance": None,
        "max_prompt_tokens": None,
        "token_counter": "",
        "reference_arm": "full",
        "alpha": 0.05,
        "arms": [_arm("full")],
        "sweep": [],
        "sensitivity": None,
        "entropy": None,
        "consistency": None,
        "request": None,
        "findings": ["a finding"],
        "calls": 4,
        "wall_s": 1.0,
    }
    return record | own


def _write(project: Path, record: dict[str, object]) -> None:
    folder = project / ".allure" / "studies" / str(record["id"])
    folder.mkdir(parents=True)
    (folder / "study.json").write_text(json.dumps(record))
    (folder / "study.md").write_text(f"# Study {record['id']}\n")


@pytest.mark.integration
def test_version_1_records_open_as_their_kinds_types(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    clusters = [{"name": "keywords", "size": 3, "by_mode": {"keywords": 3}}]
    _write(proj, _v1("ablation", "ablation-0000aaaa", by="failure_mode", clusters=clusters))
    point = {"size": 2, "repeats": 1, "metric": "accuracy", "mean": 0.75, "sd": None, "low": 0.75}
    sweep = _v1(
        "sweep",
        "sweep-0000bbbb",
        sizes=[0, 2],
        repeats=1,
        reference_arm="x=0",
        arms=[_arm("x=0", example_ids=[], size=0, repeat=0)],
        sweep=[point | {"high": 0.75, "values": [0.75]}],
    )
    _write(proj, sweep)
    # an earlier study of arms of one's own was stored as an ablation without clusters
    _write(proj, _v1("ablation", "ablation-0000eeee", reference_arm="raw", arms=[_arm("raw")]))
    studies = {s.id: s for s in list_studies(proj)}
    assert len(studies) == 3
    mine = studies["ablation-0000eeee"]
    assert isinstance(mine, AblationRecord) and mine.by is None and mine.clusters == []
    ablation = studies["ablation-0000aaaa"]
    assert isinstance(ablation, AblationRecord) and ablation.version == STUDY_SCHEMA_VERSION == 2
    assert ablation.by == "failure_mode" and [c.name for c in ablation.clusters] == ["keywords"]
    assert "sizes" not in ablation.model_dump() and "sensitivity" not in ablation.model_dump()
    assert ablation.arms[0].metrics.accuracy == 0.75 and ablation.findings == ["a finding"]
    assert ablation.to_pandas().loc["full", "accuracy"] == 0.75
    swept = load_study(proj, "sweep-0000bbbb")
    assert isinstance(swept, SweepRecord) and swept.sizes == [0, 2] and swept.sweep[0].mean == 0.75
    assert swept.arms[0].arm.size == 0 and "clusters" not in swept.model_dump()
    # the CLI lists and shows them
    listed = run_cli(tmp_path, "study", "list")
    assert listed.returncode == 0, listed.stderr
    assert "ablation-0000aaaa" in listed.stdout and "sweep-0000bbbb" in listed.stdout
    shown = run_cli(tmp_path, "study", "show", "sweep-0000bbbb")
    assert shown.returncode == 0 and "# Study sweep-0000bbbb" in shown.stdout


def test_a_version_1_robustness_record_keeps_its_report(tmp_path: Path) -> None:
    report = {
        "prompts": [{"q": 1, "name": "default", "path": "default", "hash": "h"}],
        "conditions": [],
        "findings": ["memory: S_tau = 0.1"],
    }
    data = _v1("sensitivity", "sensitivity-0000cccc", reference_arm="rho1 +memory", sensitivity=report)
    _write(tmp_path, data)
    study = load_study(tmp_path, "sensitivity-0000cccc")
    assert isinstance(study, SensitivityRecord) and study.sensitivity.findings == ["memory: S_tau = 0.1"]
    assert set(migrate_study(dict(data))) == set(data) - {
        "by",
        "clusters",
        "sizes",
        "repeats",
        "balance",
        "sweep",
    } - {
        "entropy",
        "consistency",
        "request",
    }


def test_an_unregistered_kind_opens_as_the_shared_record_and_a_broken_one_is_a_study_error(
    tmp_path: Path,
) -> None:
    _write(tmp_path, _v1("elsewhere", "elsewhere-0000dddd") | {"version": 2, "extra": 1})
    study = load_study(tmp_path, "elsewhere-0000dddd")
    assert (
        type(study) is StudyRecord and study.kind == "elsewhere" and record_type("elsewhere") is StudyRecord
    )
    _write(tmp_path, {"version": 2, "id": "ablation-broken", "kind": "ablation"})
    with pytest.raises(StudyError, match="cannot read the study"):
        load_study(tmp_path, "ablation-broken")
