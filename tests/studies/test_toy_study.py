"""A study kind defined in this one file, registered in the catalogue, run through ``allure study run``.

``ToyStudy`` compares zero-shot with the examples of one failure mode (``--param mode=...``); its
own result (``ToyRecord``) names the better arm and counts each arm's labelled items, and its own
report section says so. The CLI loads this file with ``--load`` (as inspect_ai loads a task file),
so the kind exists in the CLI's process too; this module imports nothing from ``tests`` at its top,
so that loading it needs only ``allure``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from allure.errors import StudyError
from allure.studies import (
    ArmLabels,
    ArmSpec,
    StudyContext,
    StudyRecord,
    as_kind,
    register_study,
    study_markdown,
    write_study,
)

pytestmark = pytest.mark.integration


class ToyRecord(StudyRecord):
    """The toy study's own result."""

    kind: str = "toy"
    mode: str
    """The failure mode whose examples the ``examples`` arm carries."""
    best_arm: str
    """The arm with the highest accuracy (the first on a tie)."""
    labelled: dict[str, int]
    """Arm -> items that got a label."""


@register_study
@dataclass
class ToyStudy:
    """Zero-shot against the examples of one failure mode."""

    kind: ClassVar[str] = "toy"
    result: ClassVar[type[StudyRecord]] = ToyRecord
    mode: str
    example_ids: list[str]

    @classmethod
    def build(cls, context: StudyContext) -> ToyStudy:
        mode = context.params.get("mode", "keywords")
        ids = [ex.id for ex in context.memory.all() if ex.failure_mode == mode]
        if not ids:
            raise StudyError(
                f"no example of mode {mode!r}", where="--param mode", fix="name a mode in memory"
            )
        return cls(mode, ids)

    def arms(self) -> list[ArmSpec]:
        return [
            ArmSpec(name="zero-shot", example_ids=[]),
            ArmSpec(name="examples", example_ids=self.example_ids),
        ]

    def reference_arm(self) -> str:
        return "zero-shot"

    def definition(self) -> object:
        return {"mode": self.mode}

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> ToyRecord:
        best = max(record.arms, key=lambda r: r.metrics.accuracy or 0.0).arm.name
        count = {arm: sum(v is not None for v in vals) for arm, vals in labels.items()}
        result: ToyRecord = as_kind(ToyRecord, record, mode=self.mode, best_arm=best, labelled=count)
        return result

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        assert isinstance(result, ToyRecord)
        section = ["", "## Toy", "", f"best arm: {result.best_arm} (examples of {result.mode})"]
        return write_study(result, folder, study_markdown(result, tail=section), {})


def test_a_study_defined_in_one_file_runs_through_the_cli(tmp_path: Path) -> None:
    from allure.studies import list_studies, load_study, study_kinds
    from tests.cli_run import run_cli
    from tests.conftest import start_scripted_server
    from tests.studies.test_studies_scripted import _project

    assert "toy" in study_kinds()  # registered here, by importing this module
    srv = start_scripted_server(tmp_path, "--strict-if-example", "room")
    try:
        spec = _project(tmp_path, srv.base_url)
        args = ("study", "run", "toy", "--load", __file__, "--spec", str(spec), "--param", "mode=keywords")
        res = run_cli(tmp_path, *args, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "examples" in res.stdout and "zero-shot" in res.stdout  # the arms table
        assert len(srv.requests()) == 2 * 60  # 60 items per arm, nothing stored before
    finally:
        srv.stop()
    proj = tmp_path / "proj"
    (study,) = list_studies(proj)
    assert isinstance(study, ToyRecord) and study.kind == "toy"  # read back as its own type
    # only the keywords examples teach the judge the 20 'room' items (as in the ablation test)
    by = {r.arm.name: r for r in study.arms}
    assert by["examples"].metrics.accuracy == 1.0 and by["zero-shot"].metrics.accuracy == 40 / 60
    assert study.best_arm == "examples" and study.labelled == {"zero-shot": 60, "examples": 60}
    comparison = by["examples"].comparison
    assert comparison is not None and (comparison.mcnemar.b, comparison.mcnemar.c) == (0, 20)
    out = proj / ".allure" / "studies" / study.id
    assert (
        "## Toy" in (out / "study.md").read_text() and "best arm: examples" in (out / "study.md").read_text()
    )
    assert sorted(p.name for p in out.iterdir()) == ["errors_by_problem_type.png", "study.json", "study.md"]
    stored = json.loads((out / "study.json").read_text())
    assert (stored["kind"], stored["version"], stored["best_arm"]) == ("toy", 2, "examples")
    assert load_study(proj, study.id) == study
    # a process that has not loaded the file still lists the study (as the shared record)
    listed = run_cli(tmp_path, "study", "list")
    assert listed.returncode == 0 and study.id in listed.stdout and "toy" in listed.stdout, listed.stderr


def test_study_run_refuses_an_unknown_kind_and_a_bad_param(tmp_path: Path) -> None:
    from tests.cli_run import run_cli

    res = run_cli(tmp_path, "study", "run", "nosuch")
    assert (
        res.returncode == 2 and "unknown study kind 'nosuch'" in res.stderr and "Traceback" not in res.stderr
    )
    assert "ablation" in res.stderr and "fix:" in res.stderr
    res = run_cli(tmp_path, "study", "run", "toy", "--load", str(tmp_path / "none.py"))
    assert res.returncode == 2 and "no such Python file" in res.stderr and "Traceback" not in res.stderr
    res = run_cli(tmp_path, "study", "run", "toy", "--load", __file__, "--param", "mode")
    assert res.returncode == 2 and "is not key=value" in res.stderr and "Traceback" not in res.stderr
