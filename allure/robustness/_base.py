"""What the robustness studies share as :class:`~allure.studies.Study` kinds: the first arm is the
reference, the definition is the arms alone, and ``study.md`` carries the kind's own sections.

Each kind's :meth:`RobustStudy.prepare` builds it from an opened source and the keyword arguments of
its function (``sensitivity_study``...); ``allure study run KIND --param key=value`` reads those
arguments from its ``params`` (keys checked, values typed), so both roads build the same study."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from allure.studies import (
    ArmLabels,
    ArmSpec,
    ParamType,
    StudyContext,
    StudyRecord,
    read_params,
    study_markdown,
    write_study,
)


@dataclass
class RobustStudy:
    """Base of the robustness kinds: subclasses set ``kind`` and ``result`` and define
    :meth:`summarise`, :meth:`sections` and :meth:`plots`."""

    kind: ClassVar[str]
    result: ClassVar[type[StudyRecord]]
    params: ClassVar[dict[str, ParamType]]
    """The keyword arguments of :meth:`prepare`, as ``--param`` keys with their types."""
    arm_list: list[ArmSpec]

    @classmethod
    def build(cls, context: StudyContext) -> Self:
        """From ``allure study run KIND --param key=value``: the kind's ``params`` read (keys checked,
        values typed) and passed to its own :meth:`prepare`, as its function passes its keyword
        arguments."""
        return cls.prepare(context, **read_params(cls.kind, context.params, cls.params))

    @classmethod
    def prepare(cls, context: StudyContext, *args: Any, **kwargs: Any) -> Self:
        """The study from an opened source and the kind's keyword arguments (each kind defines it)."""
        raise NotImplementedError

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
