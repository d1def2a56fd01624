"""The :class:`Study` protocol: what a study kind is, in one small class.

A study kind says which arms it runs (:class:`~allure.studies.ArmSpec` values), which arm the others
are compared with, how it turns the finished arms into its own typed result (a subclass of
:class:`~allure.studies.StudyRecord`), and which files it writes. The runner
(:func:`~allure.studies.run_study`) does the rest for every kind alike: the store, the evaluator
passes (cached, resumable), the metrics and the paired comparisons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

from allure.labels import Label
from allure.studies._record import ArmResult, ArmSpec, StudyRecord

if TYPE_CHECKING:
    from allure.memory import EpisodicMemory
    from allure.store import RunStore
    from allure.studies._options import Say
    from allure.studies._source import StudySource

ArmLabels = dict[str, list[Label | None]]
"""Arm name -> the arm's final label per item (in the study's item order; ``None``: unparsed)."""


@dataclass
class StudyContext:
    """What a study kind is built from: the project, its frozen items and its memory."""

    project: Path
    """The project folder (holding ``.allure/``)."""
    source: StudySource
    """The frozen items and the spec they run with."""
    memory: EpisodicMemory
    """The memory the arms draw examples from."""
    params: Mapping[str, str] = field(default_factory=dict)
    """The kind's own settings as text (``allure study run KIND --param key=value``); a kind that
    declares ``params: ClassVar[dict[str, ParamType]]`` has the keys checked before ``build``."""
    alpha: float = 0.05
    """The family-wise significance level the study runs with (``--alpha``)."""


class Study(Protocol):
    """One study kind. Register it with :func:`~allure.studies.register_study` to run it from
    ``allure study run KIND`` and to read its records back as its own ``result`` type.

    A kind may also declare ``params: ClassVar[dict[str, ParamType]]`` (``--param`` key -> how its
    value is read): ``allure study run`` then refuses any other key, naming the closest valid one."""

    kind: ClassVar[str]
    """The catalogue key, stored as the record's ``kind``."""
    result: ClassVar[type[StudyRecord]]
    """The kind's typed result: :class:`StudyRecord` plus its own fields."""

    @classmethod
    def build(cls, context: StudyContext) -> Study:
        """The study from its context (``allure study run``); raises ``StudyError`` on a bad param."""
        ...

    def arms(self) -> list[ArmSpec]:
        """The arms, in the order they run (each name unique)."""
        ...

    def reference_arm(self) -> str:
        """The arm every other arm is compared with."""
        ...

    def definition(self) -> Any:
        """The kind's own settings: part of the study id (the same definition resumes the study)."""
        ...

    def summarise(self, record: StudyRecord, labels: ArmLabels) -> StudyRecord:
        """The kind's ``result`` from the shared record (arms, metrics, comparisons) and the labels."""
        ...

    def write(self, result: StudyRecord, folder: Path) -> dict[str, Path]:
        """Write the study's files (``study.json``, ``study.md``, its plots); returns them by name."""
        ...


@runtime_checkable
class StoredStudy(Protocol):
    """A study kind whose arms are read from calls already stored (e.g. the learning curve's
    read-outs, fitted on a run's stored verdicts): the runner calls :meth:`measure` instead of
    evaluating the arms, so it sends no call; the id, the store's record, the comparisons and the
    files are the runner's, as for every kind."""

    def measure(
        self, src: StudySource, store: RunStore, say: Say | None
    ) -> tuple[list[ArmResult], ArmLabels, dict[str, Any]]:
        """Every arm's result (``calls = 0``) and labels, in :meth:`Study.arms`'s order, and the
        record's evaluator facts (``max_prompt_tokens``, ``token_counter``, ``evaluator``)."""
        ...


R = TypeVar("R", bound=StudyRecord)


def as_kind(result: type[R], record: StudyRecord, **fields: Any) -> R:
    """``record`` as the kind's ``result`` type with its own ``fields`` (the shared ones kept; a
    field given here wins, e.g. ``findings`` with the kind's own first)."""
    return result(**{**dict(record), **fields})
