"""Semantic entropy robustness (seed 004): M sampled answers per item and prompt variant, clustered.

The arms are ``rho_q CONDITION #m`` for each prompt variant rho_q (rho_1: the spec's prompt set;
more from ``--rephrasings``/``--prompts`` as in the sensitivity study), each condition (``memory``:
the spec's retrieval policy, ``zero-shot``) and each sample m < M, all through
:func:`~allure.studies.run_study` at the given temperature. The sample index is part of every
call's cache key and the seed sent is the evaluator's seed plus m, so the M samples are M stored
calls and a re-run sends none.

Per item, condition and variant, the M raw outputs are embedded with all-MiniLM-L6-v2
(L2-normalised) and clustered: scikit-learn's HDBSCAN with min cluster size 2 (a single cluster
allowed; a sample in no cluster counts as a cluster of its own); with fewer than 4 samples, or with
``clusterer="kmeans"``, KMeans with the number of clusters (2 .. M-1; two different samples: 2)
chosen by silhouette.
Identical embeddings are always one cluster. Then H (bits) per variant, R = 1/(1+H_bar),
S = mean_v(R_v)(1 - min(sd_v(R_v), 1)) and the band of R, per item and averaged over items.

Comparisons (paired t-test, Cohen's d_z, Bonferroni over all of them): per-item R with vs without
the memory; per-item R_v of rho_1 vs each rho_q; and per-item R against earlier entropy studies on the
same items (``against``: another evaluator or prompt set).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Unpack, cast

from allure.errors import StudyError
from allure.models import stable_hash
from allure.prompts import write_prompt_set
from allure.robustness._base import run_robust
from allure.robustness._entropy_report import EntropyRecord, entropy_report
from allure.robustness._reports import EntropyReport, PromptVariant
from allure.robustness._sampling import SAMPLING_PARAMS, SamplingStudy, check_sampling
from allure.robustness._variants import CONDITIONS, sensitivity_arms
from allure.safe_text import markdown_cell as md
from allure.studies import (
    ArmSpec,
    ParamType,
    StudyContext,
    StudyOptions,
    StudyRecord,
    StudySource,
    load_study,
)
from allure.studies.figures import figure, fmt, png

Clusterer = Literal["hdbscan", "kmeans"]
"""How the M samples of one prompt are clustered."""


def entropy_arms(
    variants: Sequence[PromptVariant], src: StudySource, samples: int, conditions: Sequence[str]
) -> list[ArmSpec]:
    """``rho_q CONDITION #m`` for each prompt variant, condition and sample."""
    arms = []
    for base in sensitivity_arms(variants, src):
        if (base.with_memory and "memory" in conditions) or (
            not base.with_memory and "zero-shot" in conditions
        ):
            arms += [
                base.model_copy(update={"name": f"{base.name} #{m}", "sample": m}) for m in range(samples)
            ]
    return arms


class EntropyOptions(StudyOptions, total=False):
    """The keyword arguments of :func:`entropy_study`: the study's own (its ``params``) and the
    :class:`~allure.studies.StudyOptions`; the defaults are :meth:`EntropyStudy.prepare`'s."""

    samples: int
    temperature: float
    rephrasings: int | None
    prompts: Sequence[str] | None
    conditions: Sequence[str]
    clusterer: Clusterer
    against: Sequence[str]
    seed: int


def entropy_study(project: str | Path = ".", **options: Unpack[EntropyOptions]) -> EntropyRecord:
    """Semantic entropy robustness of the evaluator (see the module docstring).

    Args:
        samples: M, sampled answers per item, prompt variant and condition (at least 2; default 5).
        temperature: The sampling temperature (above 0; default 0.7).
        rephrasings: Q rule-based prompt variants (rho_1 = the original); default: the original only.
        prompts: Prompt sets (names or folders) as rho_2.. instead.
        conditions: ``memory`` and/or ``zero-shot`` (default both).
        clusterer: ``hdbscan`` (default) or ``kmeans``.
        against: Ids of earlier entropy studies on the same items to compare per-item R with.
        seed: Seed of the rule-based rephrasings (default 0).
        options: as :func:`~allure.robustness.sensitivity_study` takes them: ``from_run``, ``spec``,
            ``split``, ``memory``, ``max_prompt_tokens``, ``name``, ``alpha``, ``say``, ``arm_progress``.

    Returns:
        The :class:`EntropyRecord` (``study.entropy.to_pandas()``: item x condition).

    Raises:
        StudyError: ``M < 2``, ``T <= 0``, an unknown condition or clusterer, a study in ``against``
            that is not an entropy study over the same items; as the sensitivity study otherwise.
    """
    result = run_robust(EntropyStudy, project, options)
    assert isinstance(result, EntropyRecord)
    return result


def _earlier(project: Path, src: StudySource, against: Sequence[str]) -> list[EntropyRecord]:
    """The entropy studies ``against`` names, each checked to be over the same items."""
    earlier = [load_study(project, sid) for sid in against]
    ids_hash = stable_hash([it.id for it in src.items])
    for other in earlier:
        if not isinstance(other, EntropyRecord) or other.item_ids_hash != ids_hash:
            raise StudyError(
                f"study {other.id} is not an entropy study over the same {len(src.items)} items",
                where="option --against",
                fix="name an entropy study run with the same --from-run/--spec and --split",
            )
    return [e for e in earlier if isinstance(e, EntropyRecord)]


@dataclass
class EntropyStudy(SamplingStudy):
    """The semantic entropy study as a :class:`~allure.studies.Study`."""

    kind: ClassVar[str] = "entropy"
    result: ClassVar[type[StudyRecord]] = EntropyRecord
    params: ClassVar[dict[str, ParamType]] = SAMPLING_PARAMS | {
        "conditions": "names",
        "clusterer": "text",
        "against": "names",
    }
    head: EntropyReport
    """The settings (samples, temperature, clusterer, prompt variants); the figures are added."""
    against: list[EntropyRecord]
    """Earlier entropy studies over the same items to compare per-item R with."""
    alpha: float

    @classmethod
    def prepare(
        cls,
        context: StudyContext,
        *,
        rephrasings: int | None = None,
        prompts: Sequence[str] | None = None,
        conditions: Sequence[str] = CONDITIONS,
        clusterer: str = "hdbscan",
        against: Sequence[str] = (),
        seed: int = 0,
        samples: int = 5,
        temperature: float = 0.7,
    ) -> EntropyStudy:
        """The checked settings, the prompt variants (written) and the arms, as :func:`entropy_study` takes them."""
        check_sampling(samples, temperature)
        bad = [c for c in conditions if c not in CONDITIONS] or ([] if conditions else ["(none)"])
        if bad:
            raise StudyError(
                f"unknown condition(s) {', '.join(map(repr, bad))}",
                where="option --conditions",
                fix="pass --conditions memory,zero-shot (or one of them)",
            )
        if clusterer not in ("hdbscan", "kmeans"):
            raise StudyError(
                f"unknown clusterer {clusterer!r}",
                where="option --clusterer",
                fix="pass --clusterer hdbscan or kmeans",
            )
        proj, src = context.project, context.source
        earlier = _earlier(proj, src, against)
        variants, pending = cls.sampled_variants(
            context, temperature=temperature, rephrasings=rephrasings, prompts=prompts, seed=seed
        )
        for folder, r in pending:
            write_prompt_set(folder, r)
        arms = entropy_arms(variants, src, samples, conditions)
        head = EntropyReport(
            samples=samples,
            temperature=temperature,
            clusterer=cast(Clusterer, clusterer),
            prompts=variants,
            conditions=[],
        )
        return cls(arms, proj, src, head, earlier, context.alpha)

    def sampled_report(self, record: StudyRecord, outputs: dict[str, list[str]]) -> EntropyReport:
        return entropy_report(record, outputs, self.src, self.head, against=self.against, alpha=self.alpha)

    def markdown(self, report: EntropyReport) -> list[str]:
        return entropy_markdown(report)

    def figure(self, report: EntropyReport, study_id: str) -> bytes:
        return entropy_png(report, study_id)


def entropy_markdown(r: EntropyReport) -> list[str]:
    """The semantic entropy sections of ``study.md``."""
    names = [v.name for v in r.prompts]
    lines = [
        "",
        f"## Semantic entropy (M = {r.samples} samples at T = {r.temperature:g}, {r.clusterer})",
        "",
        "| condition | R | band | S | "
        + " | ".join(f"H {n}" for n in names)
        + " | items per band | clustering |",
        "|---|---|---|---|" + "---|" * (len(names) + 2),
    ]
    for c in r.conditions:
        hs = " | ".join(f"{c.mean_entropy.get(n, 0.0):.3f}" for n in names)
        bands = ", ".join(f"{k}: {v}" for k, v in c.bands.items())
        how = ", ".join(f"{k}: {v}" for k, v in c.clusterers.items())
        lines.append(
            f"| {md(c.condition)} | {c.robustness:.3f} | {c.band} | {c.stability:.3f} | {hs} | {bands} | {how} |"
        )
    lines += ["", "## Paired comparisons of per-item R", ""]
    lines += ["| b | a | n | mean b | mean a | t | p | Cohen's d_z | p (Bonferroni) |"]
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for cmp in r.comparisons:
        t = cmp.test
        lines.append(
            f"| {md(cmp.b)} | {md(cmp.a)} | {cmp.n} | {cmp.mean_b:.3f} | {cmp.mean_a:.3f} | {fmt(t.t)} | "
            f"{fmt(t.p_value, 4)} | {fmt(t.cohens_d)} | {fmt(t.p_bonferroni, 4)} |"
        )
    lines += ["", f"## The {len(r.least_robust)} least robust items", ""]
    lines += ["| item | condition | R | band | H per prompt set | clusters |", "|---|---|---|---|---|---|"]
    for it in r.least_robust:
        hs = ", ".join(f"{k}: {v:.3f}" for k, v in it.entropy.items())
        cl = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in it.clusters.items())
        lines.append(
            f"| {md(it.item_id)} | {md(it.condition)} | {it.robustness:.3f} | {it.band} | {md(hs)} | {md(cl)} |"
        )
    lines += ["", "![entropy.png](entropy.png)"]
    return lines


def entropy_png(r: EntropyReport, study_id: str) -> bytes:
    """Histograms of per-item R per condition, with the band limits."""
    fig = figure((6, 3.6))
    ax = fig.subplots()
    bins = [i / 20 for i in range(21)]
    for c in r.conditions:
        vals = [it.robustness for it in r.items if it.condition == c.condition]
        ax.hist(vals, bins=bins, alpha=0.5, label=f"{c.condition} (R = {c.robustness:.2f})")
    for x in (0.2, 0.4, 0.6, 0.8):
        ax.axvline(x, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xlabel("R = 1 / (1 + H_bar)")
    ax.set_ylabel("items")
    ax.legend(fontsize=8)
    ax.set_title(f"Semantic entropy robustness {study_id}: M = {r.samples}, T = {r.temperature:g}")
    return png(fig)
