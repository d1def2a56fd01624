"""What the robustness studies share as :class:`~allure.studies.Study` kinds: the first arm is the
reference, the definition is the arms alone, and ``study.md`` carries the kind's own sections."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from allure.errors import StudyError
from allure.studies import ArmLabels, ArmSpec, StudyContext, StudyRecord, study_markdown, write_study


@dataclass
class RobustStudy:
    """Base of the robustness kinds: subclasses set ``kind`` and ``result`` and define
    :meth:`summarise`, :meth:`sections` and :meth:`plots`."""

    kind: ClassVar[str]
    result: ClassVar[type[StudyRecord]]
    arm_list: list[ArmSpec]

    @classmethod
    def build(cls, context: StudyContext) -> RobustStudy:
        """Not from ``allure study run``: each robustness kind has its own command and options."""
        raise StudyError(
            f"the {cls.kind} study has its own command",
            where=f"allure study run {cls.kind}",
            fix=f"run `allure study {cls.kind} --help` for its options",
        )

    def arms(self) -> list[ArmSpec]:
        return self.arm_list

    def reference_arm(self) -> str:
        return self.arm_list[0].name

    def definition(self) -> object:
        return {}

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        raise NotImplementedError

    def sections(self, result: StudyRecord) -> list[str]:
        """The kind's own sections of ``study.md`` (after the errors per generator)."""
        return []

    def plots(self, result: StudyRecord) -> dict[str, bytes]:
        """The kind's own plots, by file name."""
        return {}

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        text = study_markdown(result, tail=self.sections(result))
        return write_study(result, folder, text, self.plots(result))
