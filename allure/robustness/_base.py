"""What the robustness studies share as :class:`~allure.studies.Study` kinds: the first arm is the
reference, the definition is the arms alone, the record carries the kind's report under the kind's
name, and ``study.md`` carries the kind's own sections.

Each kind's :meth:`RobustStudy.prepare` builds it from an opened source and the kind's own keyword
arguments (its ``params``); its function (``sensitivity_study``...) hands them, with the
:class:`~allure.studies.StudyOptions`, to :func:`run_robust`, and ``allure study run KIND --param
key=value`` reads them from ``params`` (keys checked, values typed), so both roads build the same
study. A kind defines :meth:`~RobustStudy.report` (the figures of the finished arms) and
:meth:`~RobustStudy.markdown` (its sections), and may define :meth:`~RobustStudy.findings` and
:meth:`~RobustStudy.figure` (``KIND.png``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

from allure.studies import (
    ArmLabels,
    ArmSpec,
    ParamType,
    StudyContext,
    StudyRecord,
    as_kind,
    open_source,
    read_params,
    run_study,
    study_markdown,
    write_study,
)


@dataclass
class RobustStudy:
    """Base of the robustness kinds: subclasses set ``kind``, ``result`` (a record with a field named
    as the kind, holding the report) and ``params``, and define :meth:`prepare`, :meth:`report` and
    :meth:`markdown`."""

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

    def report(self, record: StudyRecord, labels: ArmLabels) -> Any:
        """The kind's report of the finished arms (each kind defines it)."""
        raise NotImplementedError

    def findings(self, report: Any) -> list[str]:
        """The kind's findings, put before the shared ones: the report's own by default."""
        return list(report.findings)

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        report = self.report(record, labels)
        findings = [*self.findings(report), *record.findings]
        return as_kind(self.result, record, **{self.kind: report}, findings=findings)

    def markdown(self, report: Any) -> list[str]:
        """The kind's own sections of ``study.md`` from its report (each kind defines it)."""
        raise NotImplementedError

    def figure(self, report: Any, study_id: str) -> bytes | None:
        """The kind's plot (``KIND.png``), or ``None`` for none."""
        return None

    def sections(self, result: StudyRecord) -> list[str]:
        """The kind's own sections of ``study.md`` (after the errors per generator)."""
        return self.markdown(getattr(result, self.kind))

    def plots(self, result: StudyRecord) -> dict[str, bytes]:
        """The kind's own plots, by file name."""
        png = self.figure(getattr(result, self.kind), result.id)
        return {} if png is None else {f"{self.kind}.png": png}

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        text = study_markdown(result, tail=self.sections(result))
        return write_study(result, folder, text, self.plots(result))


def run_robust(kind: type[RobustStudy], project: str | Path, options: Mapping[str, Any]) -> StudyRecord:
    """A robustness kind's function: its own keyword arguments (the kind's ``params``) to
    :meth:`RobustStudy.prepare`, the rest (:class:`~allure.studies.StudyOptions`) to open the items
    and memory and to run the study.

    Raises:
        TypeError: An option neither the kind nor any study takes.
    """
    own = {k: v for k, v in options.items() if k in kind.params}
    rest: Any = {k: v for k, v in options.items() if k not in kind.params}
    proj = Path(project).resolve()
    src, mem, run = open_source(proj, rest)
    study = kind.prepare(StudyContext(proj, src, mem, alpha=run.get("alpha", 0.05)), **own)
    result = run_study(proj, src, mem, study, **run)
    assert isinstance(result, kind.result)
    return result
