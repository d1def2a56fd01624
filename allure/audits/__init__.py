"""Studies: arms (evaluator + prompt + a fixed choice of ICL examples) over one frozen item set.

- :func:`ablation`: full memory, minus each failure mode (or embedding cluster), zero-shot.
- :func:`sweep`: ICL_x, x examples drawn from memory per size and seed.
- :func:`list_studies`, :func:`load_study`: read finished studies back.
- :func:`run_study` with :class:`Arm` and :class:`StudySource` (or :func:`resolve_source`): a study of
  your own arms.

A study only evaluates and compares (McNemar exact + Holm, paired bootstrap); it never mines,
reviews or commits. Results are :class:`StudyRecord` objects with ``to_pandas()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.audits._catalog import list_studies, load_study
    from allure.audits._model import (
        STUDY_SCHEMA_VERSION,
        AblateBy,
        Arm,
        ArmResult,
        ClusterInfo,
        StudyKind,
        StudyRecord,
        SweepPoint,
    )
    from allure.audits._run import STUDIES, RunOptions, run_study
    from allure.audits._source import ItemSplit, StudySource, open_memory, resolve_source
    from allure.audits._studies import StudyOptions, ablation, ablation_arms, parse_sizes, sweep, sweep_arms

_WHERE = {
    "list_studies": "_catalog",
    "load_study": "_catalog",
    "STUDY_SCHEMA_VERSION": "_model",
    "AblateBy": "_model",
    "Arm": "_model",
    "ArmResult": "_model",
    "ClusterInfo": "_model",
    "StudyKind": "_model",
    "StudyRecord": "_model",
    "SweepPoint": "_model",
    "ItemSplit": "_source",
    "STUDIES": "_run",
    "run_study": "_run",
    "RunOptions": "_run",
    "StudySource": "_source",
    "open_memory": "_source",
    "resolve_source": "_source",
    "StudyOptions": "_studies",
    "ablation": "_studies",
    "ablation_arms": "_studies",
    "parse_sizes": "_studies",
    "sweep": "_studies",
    "sweep_arms": "_studies",
}

__all__ = [
    "STUDIES",
    "StudySource",
    "AblateBy",
    "Arm",
    "ArmResult",
    "ClusterInfo",
    "ItemSplit",
    "STUDY_SCHEMA_VERSION",
    "StudyKind",
    "RunOptions",
    "StudyOptions",
    "StudyRecord",
    "SweepPoint",
    "ablation",
    "ablation_arms",
    "list_studies",
    "load_study",
    "open_memory",
    "parse_sizes",
    "resolve_source",
    "run_study",
    "sweep",
    "sweep_arms",
]

__getattr__ = lazy_exports(__name__, _WHERE)
