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

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal, Unpack

import numpy as np

from allure.errors import StudyError
from allure.labels import Label
from allure.metrics import cluster_entropy, paired_t_test, robustness, robustness_band, stability
from allure.models import stable_hash
from allure.prompts import write_prompt_set
from allure.robustness._base import RobustStudy
from allure.robustness._reports import (
    EntropyComparison,
    EntropyCondition,
    EntropyItem,
    EntropyReport,
    PromptVariant,
)
from allure.robustness._sampling import check_sampling, cluster_samples, raw_outputs, sample_at
from allure.robustness._variants import CONDITIONS, TOP, prompt_variants, sensitivity_arms
from allure.safe_text import markdown_cell as md
from allure.studies import (
    ArmSpec,
    StudyOptions,
    StudyRecord,
    StudySource,
    as_kind,
    load_study,
    open_source,
    run_study,
)
from allure.studies.figures import figure, fmt, png

Clusterer = Literal["hdbscan", "kmeans"]
"""How the M samples of one prompt are clustered."""


class EntropyRecord(StudyRecord):
    """``study.json`` of a semantic entropy study: the shared record and its :class:`EntropyReport`."""

    kind: str = "entropy"
    entropy: EntropyReport
    """Per item and condition H, R, S and band; the paired comparisons."""


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


def _compare(name_a: str, name_b: str, a: list[float], b: list[float]) -> EntropyComparison | None:
    if len(a) < 2:
        return None
    return EntropyComparison(
        a=name_a,
        b=name_b,
        n=len(a),
        mean_a=float(np.mean(a)),
        mean_b=float(np.mean(b)),
        test=paired_t_test(a, b),
    )


def entropy_report(
    study: StudyRecord,
    outputs: dict[str, list[str]],
    src: StudySource,
    head: EntropyReport,
    *,
    against: Sequence[EntropyRecord] = (),
    alpha: float = 0.05,
) -> EntropyReport:
    """The report of a finished entropy study from each arm's raw outputs (items in ``src.items`` order).

    ``head`` holds the settings (samples, temperature, clusterer, prompt variants); the figures are added.
    """
    variants, clusterer = head.prompts, head.clusterer
    from allure.memory import embed

    texts = sorted({t for col in outputs.values() for t in col})
    vec = dict(zip(texts, embed(texts), strict=True))
    arms = [r.arm for r in study.arms]
    items: list[EntropyItem] = []
    conds: list[EntropyCondition] = []
    r_by: dict[str, list[float]] = {}
    rv_by: dict[tuple[str, int], list[float]] = {}
    for cond in CONDITIONS:
        mine = [a for a in arms if a.with_memory == (cond == "memory")]
        if not mine:
            continue
        methods: Counter[str] = Counter()
        for i, it in enumerate(src.items):
            ent: dict[str, float] = {}
            clusters: dict[str, list[int]] = {}
            for v in variants:
                col = [outputs[a.name][i] for a in mine if a.rephrasing == v.q]
                labels, used = cluster_samples(np.stack([vec[t] for t in col]), clusterer, src.spec.loop.seed)
                methods[used] += 1
                clusters[v.name] = labels
                ent[v.name] = cluster_entropy(labels)
                rv_by.setdefault((cond, v.q), []).append(1.0 / (1.0 + ent[v.name]))
            r = robustness(list(ent.values()))
            r_by.setdefault(cond, []).append(r)
            items.append(
                EntropyItem(
                    item_id=it.id,
                    condition=cond,
                    entropy=ent,
                    clusters=clusters,
                    robustness=r,
                    stability=stability(list(ent.values())),
                    band=robustness_band(r),
                )
            )
        here = [x for x in items if x.condition == cond]
        mean_r = float(np.mean([x.robustness for x in here]))
        conds.append(
            EntropyCondition(
                condition=cond,
                mean_entropy={v.name: float(np.mean([x.entropy[v.name] for x in here])) for v in variants},
                robustness=mean_r,
                stability=float(np.mean([x.stability for x in here])),
                band=robustness_band(mean_r),
                bands=dict(Counter(x.band for x in here)),
                clusterers=dict(methods),
            )
        )
    pairs: list[tuple[str, str, list[float], list[float]]] = []
    if len(r_by) == 2:
        pairs.append(("zero-shot", "memory", r_by["zero-shot"], r_by["memory"]))
    for cond in r_by:
        pairs += [
            (f"{cond} {variants[0].name}", f"{cond} {v.name}", rv_by[(cond, 1)], rv_by[(cond, v.q)])
            for v in variants[1:]
        ]
    ids = [it.id for it in src.items]
    for other in against:
        theirs = {(x.condition, x.item_id): x.robustness for x in other.entropy.items}
        for cond, mine_r in r_by.items():
            if all((cond, i) in theirs for i in ids):
                pairs.append(
                    (f"{other.id} {cond}", f"{study.id} {cond}", [theirs[(cond, i)] for i in ids], mine_r)
                )
    comparisons = [c for c in (_compare(*p) for p in pairs) if c is not None]
    m = len(comparisons)
    comparisons = [
        c.model_copy(update={"test": paired_t_test(*_pair(pairs, c), n_comparisons=m)}) for c in comparisons
    ]
    report = head.model_copy(update={"conditions": conds, "items": items, "comparisons": comparisons})
    report.least_robust = sorted(items, key=lambda x: (x.robustness, x.item_id, x.condition))[:TOP]
    report.findings = _findings(report, alpha)
    return report


def _pair(
    pairs: list[tuple[str, str, list[float], list[float]]], c: EntropyComparison
) -> tuple[list[float], list[float]]:
    return next((a, b) for na, nb, a, b in pairs if (na, nb) == (c.a, c.b))


def _findings(r: EntropyReport, alpha: float) -> list[str]:
    out = [
        f"{c.condition}: R = {c.robustness:.3f} ({c.band}), S = {c.stability:.3f}, mean H "
        + ", ".join(f"{k}: {v:.3f} bits" for k, v in c.mean_entropy.items())
        + f" (M = {r.samples}, T = {r.temperature:g})"
        for c in r.conditions
    ]
    for c in r.comparisons:
        t = c.test
        p = t.p_bonferroni
        verdict = (
            "no spread in the differences"
            if p is None
            else f"p = {p:.4f} (Bonferroni over {len(r.comparisons)}): "
            + ("a significant difference" if p < alpha else "no significant difference")
        )
        d = "" if t.cohens_d is None else f", d_z = {t.cohens_d:+.2f}"
        out.append(f"R {c.b} vs {c.a}: {c.mean_b:.3f} vs {c.mean_a:.3f} (n = {c.n}{d}), {verdict}")
    return out


def entropy_study(
    project: str | Path = ".",
    *,
    samples: int = 5,
    temperature: float = 0.7,
    rephrasings: int | None = None,
    prompts: Sequence[str] | None = None,
    conditions: Sequence[str] = CONDITIONS,
    clusterer: Clusterer = "hdbscan",
    against: Sequence[str] = (),
    seed: int = 0,
    **options: Unpack[StudyOptions],
) -> EntropyRecord:
    """Semantic entropy robustness of the evaluator (see the module docstring).

    Args:
        samples: M, sampled answers per item, prompt variant and condition (at least 2).
        temperature: The sampling temperature (above 0).
        rephrasings: Q rule-based prompt variants (rho_1 = the original); default: the original only.
        prompts: Prompt sets (names or folders) as rho_2.. instead.
        conditions: ``memory`` and/or ``zero-shot``.
        clusterer: ``hdbscan`` or ``kmeans``.
        against: Ids of earlier entropy studies on the same items to compare per-item R with.
        options: as :func:`~allure.robustness.sensitivity_study` takes them: ``from_run``, ``spec``,
            ``split``, ``memory``, ``max_prompt_tokens``, ``name``, ``alpha``, ``say``, ``arm_progress``.

    Returns:
        The :class:`EntropyRecord` (``study.entropy.to_pandas()``: item x condition).

    Raises:
        StudyError: ``M < 2``, ``T <= 0``, an unknown condition or clusterer, a study in ``against``
            that is not an entropy study over the same items; as the sensitivity study otherwise.
    """
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
    proj = Path(project).resolve()
    src, mem, run = open_source(proj, options)
    sample_at(src, temperature)
    earlier = [load_study(proj, sid) for sid in against]
    ids_hash = stable_hash([it.id for it in src.items])
    for other in earlier:
        if not isinstance(other, EntropyRecord) or other.item_ids_hash != ids_hash:
            raise StudyError(
                f"study {other.id} is not an entropy study over the same {len(src.items)} items",
                where="option --against",
                fix="name an entropy study run with the same --from-run/--spec and --split",
            )
    variants, pending = prompt_variants(
        proj, src, rephrasings=rephrasings, prompts=prompts, seed=seed, optional=True
    )
    for folder, r in pending:
        write_prompt_set(folder, r)
    arms = entropy_arms(variants, src, samples, conditions)
    head = EntropyReport(
        samples=samples, temperature=temperature, clusterer=clusterer, prompts=variants, conditions=[]
    )

    study = EntropyStudy(
        arms, proj, src, head, [e for e in earlier if isinstance(e, EntropyRecord)], run.get("alpha", 0.05)
    )
    result = run_study(proj, src, mem, study, **run)
    assert isinstance(result, EntropyRecord)
    return result


@dataclass
class EntropyStudy(RobustStudy):
    """The semantic entropy study as a :class:`~allure.studies.Study`."""

    kind: ClassVar[str] = "entropy"
    result: ClassVar[type[StudyRecord]] = EntropyRecord
    project: Path
    src: StudySource
    head: EntropyReport
    """The settings (samples, temperature, clusterer, prompt variants); the figures are added."""
    against: list[EntropyRecord]
    """Earlier entropy studies over the same items to compare per-item R with."""
    alpha: float

    def summarise(self, record: StudyRecord, labels: dict[str, list[Label | None]]) -> StudyRecord:
        outputs = raw_outputs(self.project, record, self.src)
        report = entropy_report(record, outputs, self.src, self.head, against=self.against, alpha=self.alpha)
        return as_kind(EntropyRecord, record, entropy=report, findings=[*report.findings, *record.findings])

    def sections(self, result: StudyRecord) -> list[str]:
        assert isinstance(result, EntropyRecord)
        return entropy_markdown(result.entropy)

    def plots(self, result: StudyRecord) -> dict[str, bytes]:
        assert isinstance(result, EntropyRecord)
        return {"entropy.png": entropy_png(result.entropy, result.id)}


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
