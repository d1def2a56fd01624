"""Studies: arms (evaluator + prompt + a fixed choice of ICL examples) over one frozen item set.

- :func:`ablation`: full memory, minus each failure mode (or embedding cluster), zero-shot.
- :func:`sweep`: ICL_x, x examples drawn from memory per size and seed.
- :func:`sensitivity_study`: every item under Q prompt rephrasings, with and without the memory
  (S_tau, C_y, micro-F1; the paired with/without-memory comparison).
- :func:`entropy_study`: M sampled answers per item and prompt variant, clustered: H, R, S, bands.
- :func:`request_study`: ReQuest, the grading procedure the evaluator says it followed, run as the
  prompt: PerRR and PreRR against the original prompt.
- :func:`consistency_study`: K self-scored answers per prompt of paired prompts: Siegel-Tukey, TC.
- :func:`list_studies`, :func:`load_study`: read finished studies back; :func:`study_states`: which
  are done, running or interrupted.
- :func:`run_study` with :class:`Arm` and :class:`StudySource` (or :func:`resolve_source`): a study of
  your own arms.

A study only evaluates and compares (McNemar exact + Holm, paired bootstrap); it never mines,
reviews or commits. Results are :class:`StudyRecord` objects with ``to_pandas()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.audits._catalog import list_studies, load_study, study_states
    from allure.audits._consistency import consistency_study
    from allure.audits._entail import nli_entailment
    from allure.audits._entropy import cluster_samples, entropy_study
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
    from allure.audits._reproducibility import reproducibility
    from allure.audits._request import request_study
    from allure.audits._robust_model import (
        ConsistencyReport,
        EntropyReport,
        ReproducibilityResult,
        RequestReport,
        SensitivityReport,
    )
    from allure.audits._run import STUDIES, RunOptions, run_study
    from allure.audits._select import Selection, candidate_blocks, validated_selection
    from allure.audits._sensitivity import sensitivity_study
    from allure.audits._source import ItemSplit, StudySource, open_memory, resolve_source
    from allure.audits._studies import StudyOptions, ablation, ablation_arms, parse_sizes, sweep, sweep_arms

_WHERE = {
    "list_studies": "_catalog",
    "load_study": "_catalog",
    "study_states": "_catalog",
    "STUDY_SCHEMA_VERSION": "_model",
    "AblateBy": "_model",
    "Arm": "_model",
    "ArmResult": "_model",
    "ClusterInfo": "_model",
    "StudyKind": "_model",
    "StudyRecord": "_model",
    "SweepPoint": "_model",
    "ItemSplit": "_source",
    "SensitivityReport": "_robust_model",
    "ReproducibilityResult": "_robust_model",
    "RequestReport": "_robust_model",
    "request_study": "_request",
    "reproducibility": "_reproducibility",
    "sensitivity_study": "_sensitivity",
    "EntropyReport": "_robust_model",
    "cluster_samples": "_entropy",
    "entropy_study": "_entropy",
    "ConsistencyReport": "_robust_model",
    "consistency_study": "_consistency",
    "nli_entailment": "_entail",
    "STUDIES": "_run",
    "run_study": "_run",
    "Selection": "_select",
    "candidate_blocks": "_select",
    "validated_selection": "_select",
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
    "Selection",
    "candidate_blocks",
    "validated_selection",
    "STUDIES",
    "SensitivityReport",
    "EntropyReport",
    "cluster_samples",
    "entropy_study",
    "ConsistencyReport",
    "consistency_study",
    "nli_entailment",
    "ReproducibilityResult",
    "RequestReport",
    "request_study",
    "reproducibility",
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
    "sensitivity_study",
    "study_states",
    "sweep",
    "sweep_arms",
]

__getattr__ = lazy_exports(__name__, _WHERE)
