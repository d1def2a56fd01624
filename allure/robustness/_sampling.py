"""What the sampling studies (entropy, consistency) share: the checks of M samples at a temperature,
the evaluator set to sample, the prompt variants, each arm's raw outputs read back from the run
store (:class:`SamplingStudy`, their common base), and the clustering of samples by their
embeddings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from allure.errors import StudyError
from allure.prompts import Rephrasing
from allure.robustness._base import RobustStudy
from allure.robustness._reports import PromptVariant
from allure.robustness._variants import VARIANT_PARAMS, prompt_variants
from allure.store import open_project_store
from allure.studies import ArmLabels, ParamType, StudyContext, StudyRecord, StudySource

MAX_SAMPLES = 100
"""Most samples per item and prompt a sampling study draws (each is one call per item)."""

SAMPLING_PARAMS: dict[str, ParamType] = {"samples": "int", "temperature": "float", **VARIANT_PARAMS}
"""The ``--param`` keys every sampling kind takes: what :func:`check_sampling` checks and the prompt
variants' (:func:`~allure.robustness._variants.prompt_variants`)."""


def check_sampling(samples: int, temperature: float, flag: str = "--samples") -> None:
    """M (or K) from 2 to :data:`MAX_SAMPLES` samples at a temperature above 0 and at most 2.

    Raises:
        StudyError: Otherwise.
    """
    if not 2 <= samples <= MAX_SAMPLES:
        raise StudyError(
            f"{flag} {samples}: {'at least 2' if samples < 2 else f'at most {MAX_SAMPLES}'} samples per prompt"
            + (" are needed" if samples < 2 else " (each is one call per item)"),
            where=f"option {flag}",
            fix=f"pass {flag} 5 (2 to {MAX_SAMPLES})",
        )
    if not math.isfinite(temperature) or temperature > 2:
        raise StudyError(
            f"--temperature {temperature}: a sampling temperature is a number above 0 and at most 2",
            where="option --temperature",
            fix="pass a sampling temperature above 0, e.g. --temperature 0.7",
        )
    if not temperature > 0:
        raise StudyError(
            f"--temperature {temperature}: at temperature 0 the samples are one answer repeated",
            where="option --temperature",
            fix="pass a sampling temperature above 0, e.g. --temperature 0.7",
        )


def sample_at(src: StudySource, temperature: float) -> None:
    """Set the source's evaluator to sample at ``temperature`` (the embedded one not deterministic)."""
    ev = src.spec.evaluator
    local = ev.local.model_copy(update={"deterministic": False})
    src.spec = src.spec.model_copy(
        update={"evaluator": ev.model_copy(update={"temperature": temperature, "local": local})}
    )


def raw_outputs(project: Path, study: StudyRecord, src: StudySource) -> dict[str, list[str]]:
    """Arm name -> the raw output of each item (``src.items`` order; empty for an error)."""
    store = open_project_store(project)
    try:
        outputs = {}
        for r in study.arms:
            got = store.verdicts(study.id, r.index)
            outputs[r.arm.name] = [(got[it.id].raw_output or "") if it.id in got else "" for it in src.items]
        return outputs
    finally:
        store.close()


@dataclass
class SamplingStudy(RobustStudy):
    """Base of the sampling kinds: the evaluator samples each item under each prompt variant, and the
    kind's report is computed from the arms' raw outputs (:meth:`sampled_report`)."""

    project: Path
    src: StudySource

    @staticmethod
    def sampled_variants(
        context: StudyContext,
        *,
        temperature: float,
        rephrasings: int | None,
        prompts: Sequence[str] | None,
        seed: int,
    ) -> tuple[list[PromptVariant], list[tuple[Path, Rephrasing]]]:
        """The shared set-up of :meth:`prepare`: the evaluator set to sample at ``temperature``, and the
        prompt variants (rho_1 alone when neither ``rephrasings`` nor ``prompts`` is given) with the
        rephrasings still to be written."""
        sample_at(context.source, temperature)
        return prompt_variants(
            context.project,
            context.source,
            rephrasings=rephrasings,
            prompts=prompts,
            seed=seed,
            optional=True,
        )

    def report(self, record: StudyRecord, labels: ArmLabels) -> Any:
        return self.sampled_report(record, raw_outputs(self.project, record, self.src))

    def sampled_report(self, record: StudyRecord, outputs: dict[str, list[str]]) -> Any:
        """The kind's report from the arms' raw outputs (arm name -> one per item; each kind defines it)."""
        raise NotImplementedError


MIN_HDBSCAN = 4
"""Fewer samples than this are clustered with KMeans (HDBSCAN needs some density to work with)."""


def cluster_samples(vectors: np.ndarray, clusterer: str = "hdbscan", seed: int = 0) -> tuple[list[int], str]:
    """Cluster labels of ``M`` unit-norm embeddings, and the method used.

    Identical embeddings are one cluster (``identical``). Otherwise scikit-learn's HDBSCAN with min
    cluster size 2 (a single cluster allowed; a sample in no cluster is labelled -1 and counts as a
    cluster of its own); with fewer than :data:`MIN_HDBSCAN` samples, or ``clusterer="kmeans"``,
    KMeans with the number of clusters (2 .. M-1; two different samples: 2) chosen by silhouette.
    """
    m = len(vectors)
    if m == 0:
        return [], "none"
    if m == 1 or float(np.abs(vectors - vectors[0]).max()) < 1e-6:
        return [0] * m, "identical"
    if clusterer == "hdbscan" and m >= MIN_HDBSCAN:
        from sklearn.cluster import HDBSCAN

        labels = HDBSCAN(min_cluster_size=2, allow_single_cluster=True, copy=True).fit_predict(vectors)
        return [int(v) for v in labels], "hdbscan"
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    distinct = len(np.unique(np.round(vectors, 6), axis=0))
    if m == 2:
        return [0, 1], "kmeans"
    best: tuple[float, list[int]] = (-2.0, list(range(m)))
    for k in range(2, min(m - 1, distinct) + 1):
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(vectors)
        score = float(silhouette_score(vectors, labels))
        if score > best[0]:
            best = (score, [int(v) for v in labels])
    return best[1], "kmeans"
