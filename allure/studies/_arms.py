"""A study of your own arms (``kind = "arms"``): each compared with a reference arm, with the shared
record and files and ``comparison.png`` (each arm's change against the reference)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from allure.errors import StudyError
from allure.studies._protocol import ArmLabels, StudyContext
from allure.studies._record import ArmSpec, StudyRecord
from allure.studies._write import comparison_png, study_markdown, write_study


@dataclass
class ArmsStudy:
    """Arms you define (validated selection's candidates, a benchmark's conditions), as a
    :class:`~allure.studies.Study`; the reference arm is ``reference`` or the first arm."""

    kind: ClassVar[str] = "arms"
    result: ClassVar[type[StudyRecord]] = StudyRecord
    arm_list: list[ArmSpec]
    reference: str | None = None
    extra: object = None
    """Anything else that tells two such studies apart (part of the id)."""

    @classmethod
    def build(cls, context: StudyContext) -> ArmsStudy:
        """Not from the command line: its arms are Python values."""
        raise StudyError(
            "a study of your own arms is defined in Python",
            where="allure study run arms",
            fix="call allure.studies.run_study(project, src, memory, ArmsStudy([...])) or register a study kind",
        )

    def arms(self) -> list[ArmSpec]:
        return self.arm_list

    def reference_arm(self) -> str:
        return self.reference or self.arm_list[0].name

    def definition(self) -> object:
        return self.extra

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        return record

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        text = study_markdown(result, plots=["comparison.png"])
        return write_study(result, folder, text, {"comparison.png": comparison_png(result, "Arms")})
