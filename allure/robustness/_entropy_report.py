"""The record and figures of a finished entropy study (seed 004) from each arm's raw outputs: per item and
condition the samples of each prompt variant clustered (H, R, S, band), per condition the averages,
and the paired t-tests of per-item R between conditions, prompt variants and earlier studies."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from allure.metrics import cluster_entropy, paired_t_test, robustness, robustness_band, stability
from allure.robustness._reports import (
    EntropyComparison,
    EntropyCondition,
    EntropyItem,
    EntropyReport,
    PromptVariant,
)
from allure.robustness._sampling import cluster_samples
from allure.robustness._variants import CONDITIONS, TOP
from allure.studies import ArmSpec, StudyRecord, StudySource


class EntropyRecord(StudyRecord):
    """``study.json`` of a semantic entropy study: the shared record and its :class:`EntropyReport`."""

    kind: str = "entropy"
    entropy: EntropyReport
    """Per item and condition H, R, S and band; the paired comparisons."""


def _compare(
    name_a: str, name_b: str, a: list[float], b: list[float], groups: list[str]
) -> EntropyComparison | None:
    if len(a) < 2 or len(set(groups)) < 2:
        return None
    return EntropyComparison(
        a=name_a,
        b=name_b,
        n=len(a),
        mean_a=float(np.mean(a)),
        mean_b=float(np.mean(b)),
        test=paired_t_test(a, b, groups=groups),
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
        if mine:
            here, condition = _condition(cond, mine, outputs, vec, src, head, r_by, rv_by)
            items += here
            conds.append(condition)
    comparisons = _comparisons(study, src, head.prompts, r_by, rv_by, against)
    report = head.model_copy(update={"conditions": conds, "items": items, "comparisons": comparisons})
    report.least_robust = sorted(items, key=lambda x: (x.robustness, x.item_id, x.condition))[:TOP]
    report.findings = _findings(report, alpha)
    return report


def _condition(
    cond: str,
    mine: list[ArmSpec],
    outputs: dict[str, list[str]],
    vec: dict[str, np.ndarray],
    src: StudySource,
    head: EntropyReport,
    r_by: dict[str, list[float]],
    rv_by: dict[tuple[str, int], list[float]],
) -> tuple[list[EntropyItem], EntropyCondition]:
    """One condition's items (the samples of each prompt variant clustered: H, R, S, band) and its
    averages; each item's R is added to ``r_by`` and each variant's to ``rv_by``."""
    variants = head.prompts
    methods: Counter[str] = Counter()
    items: list[EntropyItem] = []
    for i, it in enumerate(src.items):
        ent: dict[str, float] = {}
        clusters: dict[str, list[int]] = {}
        for v in variants:
            col = [outputs[a.name][i] for a in mine if a.rephrasing == v.q]
            labels, used = cluster_samples(
                np.stack([vec[t] for t in col]), head.clusterer, src.spec.loop.seed
            )
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
    mean_r = float(np.mean([x.robustness for x in items]))
    return items, EntropyCondition(
        condition=cond,
        mean_entropy={v.name: float(np.mean([x.entropy[v.name] for x in items])) for v in variants},
        robustness=mean_r,
        stability=float(np.mean([x.stability for x in items])),
        band=robustness_band(mean_r),
        bands=dict(Counter(x.band for x in items)),
        clusterers=dict(methods),
    )


def _comparisons(
    study: StudyRecord,
    src: StudySource,
    variants: list[PromptVariant],
    r_by: dict[str, list[float]],
    rv_by: dict[tuple[str, int], list[float]],
    against: Sequence[EntropyRecord],
) -> list[EntropyComparison]:
    """Paired t-tests of per-item R (Bonferroni over all of them): memory against zero-shot, each
    prompt variant against the original, and this study against each earlier one in ``against``."""
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
    from allure.dataset import task_groups

    tasks = task_groups(src.items)  # a task's responses: one unit of the test
    keys = [tasks[i] for i in ids]
    comparisons = [c for c in (_compare(*p, keys) for p in pairs) if c is not None]
    m = len(comparisons)
    return [
        c.model_copy(update={"test": paired_t_test(*_pair(pairs, c), n_comparisons=m, groups=keys)})
        for c in comparisons
    ]


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
        tasks = f", tested over the means of {t.groups} tasks" if t.groups else ""
        out.append(f"R {c.b} vs {c.a}: {c.mean_b:.3f} vs {c.mean_a:.3f} (n = {c.n}{d}{tasks}), {verdict}")
    return out
