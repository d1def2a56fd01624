"""Studies: arms (:class:`ArmSpec` values) over one frozen item set, each compared with a reference arm.

- :func:`ablation`: full memory, minus each failure mode (or embedding cluster), zero-shot.
- :func:`sweep`: ICL_x, x examples drawn from memory per size and seed.
- :func:`learning_curve`: how many approvals it takes: the loop's read-out fitted on the first n
  mined audit items of a run, scored on its held-out split against zero-shot (no call: a
  :class:`StoredStudy`, its arms read from the run's stored verdicts).
- :func:`validated_selection` with :func:`candidate_blocks`: ICL blocks scored on dev, the best kept.
- :func:`list_studies`, :func:`load_study`: read finished studies back, each as its kind's own record
  type (older ``study.json`` files too); :func:`study_states`: which are done, running or interrupted.
- :func:`run_study` with a :class:`Study` (:class:`ArmsStudy` for arms of your own) and a
  :class:`StudySource` (or :func:`resolve_source`, :func:`open_source`).
- :class:`Study`, :func:`register_study`, :func:`study_kind`, :func:`study_kinds`,
  :func:`load_study_file`, :func:`build_study`: the catalogue of study kinds; a new kind is one
  class in one file (``docs/ARCHITECTURE.md``), run with ``allure study run KIND --load FILE.py``;
  :func:`read_params` reads its ``--param`` values (keys checked, values typed).

The robustness studies (sensitivity, entropy, consistency, ReQuest) are in :mod:`allure.robustness`.
A study only evaluates and compares (McNemar exact + Holm, paired bootstrap); it never mines,
reviews or commits. Results have ``to_pandas()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.studies._ablation import (
        AblateBy,
        AblationRecord,
        AblationStudy,
        ClusterInfo,
        ablation,
        ablation_arms,
    )
    from allure.studies._arm import pass_options
    from allure.studies._arms import ArmsStudy
    from allure.studies._catalog import (
        build_study,
        list_studies,
        load_study,
        load_study_file,
        read_study,
        record_type,
        register_study,
        study_kind,
        study_kinds,
        study_states,
    )
    from allure.studies._learning_curve import LearningCurveStudy, learning_curve, parse_curve_sizes
    from allure.studies._learning_curve_record import CurveFit, LearningCurveRecord
    from allure.studies._options import ArmProgress, RunOptions, Say, StudyOptions, open_source
    from allure.studies._params import ParamType, read_params
    from allure.studies._protocol import ArmLabels, StoredStudy, Study, StudyContext, as_kind
    from allure.studies._record import (
        STUDY_SCHEMA_VERSION,
        ArmResult,
        ArmSpec,
        StudyKind,
        StudyRecord,
        migrate_study,
    )
    from allure.studies._run import STUDIES, run_study
    from allure.studies._select import Selection, candidate_blocks, validated_selection
    from allure.studies._source import ItemSplit, StudySource, open_memory, resolve_source
    from allure.studies._sweep import SweepPoint, SweepRecord, SweepStudy, parse_sizes, sweep, sweep_arms
    from allure.studies._write import comparison_png, study_markdown, write_study

_WHERE = {
    "AblateBy": "_ablation",
    "AblationRecord": "_ablation",
    "AblationStudy": "_ablation",
    "ClusterInfo": "_ablation",
    "ablation": "_ablation",
    "ablation_arms": "_ablation",
    "pass_options": "_arm",
    "ArmsStudy": "_arms",
    "CurveFit": "_learning_curve_record",
    "LearningCurveRecord": "_learning_curve_record",
    "LearningCurveStudy": "_learning_curve",
    "learning_curve": "_learning_curve",
    "parse_curve_sizes": "_learning_curve",
    "StoredStudy": "_protocol",
    "build_study": "_catalog",
    "list_studies": "_catalog",
    "load_study": "_catalog",
    "load_study_file": "_catalog",
    "read_study": "_catalog",
    "record_type": "_catalog",
    "register_study": "_catalog",
    "study_kind": "_catalog",
    "study_kinds": "_catalog",
    "study_states": "_catalog",
    "ArmProgress": "_options",
    "RunOptions": "_options",
    "Say": "_options",
    "StudyOptions": "_options",
    "open_source": "_options",
    "ParamType": "_params",
    "read_params": "_params",
    "ArmLabels": "_protocol",
    "Study": "_protocol",
    "StudyContext": "_protocol",
    "as_kind": "_protocol",
    "STUDY_SCHEMA_VERSION": "_record",
    "ArmResult": "_record",
    "ArmSpec": "_record",
    "StudyKind": "_record",
    "StudyRecord": "_record",
    "migrate_study": "_record",
    "STUDIES": "_run",
    "run_study": "_run",
    "Selection": "_select",
    "candidate_blocks": "_select",
    "validated_selection": "_select",
    "ItemSplit": "_source",
    "StudySource": "_source",
    "open_memory": "_source",
    "resolve_source": "_source",
    "SweepPoint": "_sweep",
    "SweepRecord": "_sweep",
    "SweepStudy": "_sweep",
    "parse_sizes": "_sweep",
    "sweep": "_sweep",
    "sweep_arms": "_sweep",
    "comparison_png": "_write",
    "study_markdown": "_write",
    "write_study": "_write",
}

__all__ = [
    "AblateBy",
    "AblationRecord",
    "AblationStudy",
    "ArmLabels",
    "ArmProgress",
    "ArmResult",
    "ArmSpec",
    "ArmsStudy",
    "ClusterInfo",
    "CurveFit",
    "ItemSplit",
    "LearningCurveRecord",
    "LearningCurveStudy",
    "ParamType",
    "RunOptions",
    "STUDIES",
    "STUDY_SCHEMA_VERSION",
    "Say",
    "Selection",
    "StoredStudy",
    "Study",
    "StudyContext",
    "StudyKind",
    "StudyOptions",
    "StudyRecord",
    "StudySource",
    "SweepPoint",
    "SweepRecord",
    "SweepStudy",
    "ablation",
    "ablation_arms",
    "as_kind",
    "build_study",
    "candidate_blocks",
    "comparison_png",
    "list_studies",
    "learning_curve",
    "load_study",
    "load_study_file",
    "migrate_study",
    "open_memory",
    "open_source",
    "parse_curve_sizes",
    "parse_sizes",
    "read_params",
    "pass_options",
    "read_study",
    "record_type",
    "register_study",
    "resolve_source",
    "run_study",
    "study_kind",
    "study_kinds",
    "study_markdown",
    "study_states",
    "sweep",
    "sweep_arms",
    "validated_selection",
    "write_study",
]

__getattr__ = lazy_exports(__name__, _WHERE)
