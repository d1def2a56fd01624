"""Robustness studies: how the evaluator's verdicts move with the wording, the sample and the procedure.

- :func:`sensitivity_study`: every item under Q prompt rephrasings, with and without the memory
  (S_tau, C_y, micro-F1; the paired with/without-memory comparison).
- :func:`entropy_study`: M sampled answers per item and prompt variant, clustered: H, R, S, bands.
- :func:`consistency_study`: K self-scored answers per prompt of paired prompts: Siegel-Tukey, TC.
- :func:`request_study`: ReQuest, the grading procedure the evaluator says it followed, run as the
  prompt: PerRR and PreRR against the original prompt.
- :func:`reproducibility`: PerRR and PreRR of one labelling against another (runs, passes, arms).

Each study is a :class:`~allure.studies.Study` kind (``SensitivityStudy``...) run by
:func:`allure.studies.run_study`, with its own record type (``SensitivityRecord``...) and files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.robustness._consistency import ConsistencyStudy, consistency_study
    from allure.robustness._consistency_report import ConsistencyRecord
    from allure.robustness._entail import nli_entailment
    from allure.robustness._entropy import EntropyStudy, entropy_study
    from allure.robustness._entropy_report import EntropyRecord
    from allure.robustness._reports import (
        ConsistencyReport,
        EntropyReport,
        PromptVariant,
        ReproducibilityResult,
        RequestReport,
        SensitivityReport,
    )
    from allure.robustness._reproducibility import reproducibility
    from allure.robustness._request import RequestRecord, RequestStudy, request_study
    from allure.robustness._sampling import cluster_samples
    from allure.robustness._sensitivity import SensitivityStudy, sensitivity_study
    from allure.robustness._sensitivity_report import SensitivityRecord
    from allure.robustness._variants import prompt_variants

_WHERE = {
    "ConsistencyRecord": "_consistency_report",
    "ConsistencyStudy": "_consistency",
    "consistency_study": "_consistency",
    "nli_entailment": "_entail",
    "EntropyRecord": "_entropy_report",
    "EntropyStudy": "_entropy",
    "cluster_samples": "_sampling",
    "entropy_study": "_entropy",
    "ConsistencyReport": "_reports",
    "EntropyReport": "_reports",
    "PromptVariant": "_reports",
    "ReproducibilityResult": "_reports",
    "RequestReport": "_reports",
    "SensitivityReport": "_reports",
    "reproducibility": "_reproducibility",
    "RequestRecord": "_request",
    "RequestStudy": "_request",
    "request_study": "_request",
    "SensitivityRecord": "_sensitivity_report",
    "SensitivityStudy": "_sensitivity",
    "sensitivity_study": "_sensitivity",
    "prompt_variants": "_variants",
}

__all__ = [
    "ConsistencyRecord",
    "ConsistencyReport",
    "ConsistencyStudy",
    "EntropyRecord",
    "EntropyReport",
    "EntropyStudy",
    "PromptVariant",
    "ReproducibilityResult",
    "RequestRecord",
    "RequestReport",
    "RequestStudy",
    "SensitivityRecord",
    "SensitivityReport",
    "SensitivityStudy",
    "cluster_samples",
    "consistency_study",
    "entropy_study",
    "nli_entailment",
    "prompt_variants",
    "reproducibility",
    "request_study",
    "sensitivity_study",
]

__getattr__ = lazy_exports(__name__, _WHERE)
