"""Prompt sensitivity and consistency (seed 001): every item under every rephrasing, with and without memory.

The arms are ``rho_q +memory`` (the spec's retrieval policy) and ``rho_q zero-shot`` for each
rephrasing rho_1..rho_Q (rho_1: the spec's prompt set), all over one frozen item set, through
:func:`~allure.studies.run_study` (stored, cached, resumable). The reference arm is
``rho_1 +memory``. The rephrasings come from :mod:`allure.robustness._variants`. Writes
``sensitivity.png`` besides the shared files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Unpack

import numpy as np

from allure.labels import Label
from allure.metrics import (
    NA_CLASS,
    bootstrap_indices,
    class_consistency,
    micro_f1,
    paired_t_test,
    pairwise_consistency,
    percentile_interval,
    rephrasing_distribution,
    sensitivity,
)
from allure.prompts import write_prompt_set
from allure.robustness._base import RobustStudy
from allure.robustness._reports import (
    ConditionSummary,
    InconsistentPair,
    ItemSensitivity,
    PromptVariant,
    RephrasingFlips,
    SensitivityReport,
)
from allure.robustness._variants import CONDITIONS, TOP, prompt_variants, sensitivity_arms, short
from allure.safe_text import markdown_cell as md
from allure.studies import (
    ParamType,
    StudyContext,
    StudyOptions,
    StudyRecord,
    StudySource,
    as_kind,
    open_source,
    read_params,
    run_study,
)
from allure.studies.figures import figure, fmt, png


def _text(v: Label | None) -> str:
    return NA_CLASS if v is None else str(v)


class SensitivityRecord(StudyRecord):
    """``study.json`` of a sensitivity study: the shared record and its :class:`SensitivityReport`."""

    kind: str = "sensitivity"
    sensitivity: SensitivityReport
    """Per condition S_tau, C_y and micro-F1, the paired with/without-memory comparison."""


@dataclass
class SensitivityStudy(RobustStudy):
    """The sensitivity study as a :class:`~allure.studies.Study`."""

    kind: ClassVar[str] = "sensitivity"
    result: ClassVar[type[StudyRecord]] = SensitivityRecord
    params: ClassVar[dict[str, ParamType]] = {
        "rephrasings": "int",
        "prompts": "names",
        "seed": "int",
        "meta_prompt": "text",
    }
    src: StudySource
    variants: list[PromptVariant]

    @classmethod
    def build(cls, context: StudyContext) -> SensitivityStudy:
        """From ``allure study run KIND --param key=value``: :meth:`prepare` with those options."""
        return cls.prepare(context, **read_params(cls.kind, context.params, cls.params))

    @classmethod
    def prepare(
        cls,
        context: StudyContext,
        *,
        rephrasings: int | None = 4,
        prompts: Sequence[str] | None = None,
        seed: int = 0,
        meta_prompt: str | Path | None = None,
    ) -> SensitivityStudy:
        """The rephrasings (written as prompt sets) and their arms, as :func:`sensitivity_study` takes them."""
        src = context.source
        variants, pending = prompt_variants(
            context.project,
            src,
            rephrasings=None if prompts is not None else rephrasings,
            prompts=prompts,
            seed=seed,
            meta_prompt=meta_prompt,
        )
        for folder, r in pending:
            write_prompt_set(folder, r)
        return cls(sensitivity_arms(variants, src), src, variants)

    def summarise(self, record: StudyRecord, labels: dict[str, list[Label | None]]) -> StudyRecord:
        report = sensitivity_report(record, labels, self.src, self.variants)
        return as_kind(
            SensitivityRecord, record, sensitivity=report, findings=[*report.findings, *record.findings]
        )

    def sections(self, result: StudyRecord) -> list[str]:
        assert isinstance(result, SensitivityRecord)
        return sensitivity_markdown(result.sensitivity)

    def plots(self, result: StudyRecord) -> dict[str, bytes]:
        assert isinstance(result, SensitivityRecord)
        return {"sensitivity.png": sensitivity_png(result.sensitivity, result.id)}


def sensitivity_report(
    study: StudyRecord,
    labels_by_arm: dict[str, list[Label | None]],
    src: StudySource,
    variants: list[PromptVariant],
) -> SensitivityReport:
    """The report of a finished sensitivity study from each arm's labels (items in ``src.items`` order)."""
    label_set = list(src.spec.label_set)
    gold = [src.reference.get(it.id) for it in src.items]
    any_na = any(v is None for col in labels_by_arm.values() for v in col)
    n_classes = len(label_set) + (1 if any_na else 0)
    by_arm = {r.arm.name: r for r in study.arms}
    conds, per_item, preds_by = [], {}, {}
    for cond in CONDITIONS:
        names = [a for a in by_arm if by_arm[a].arm.with_memory == (cond == "memory")]
        if not names:
            continue
        names.sort(key=lambda n: by_arm[n].arm.rephrasing or 0)
        preds = [[labels_by_arm[n][i] for n in names] for i in range(len(src.items))]
        dist = rephrasing_distribution(preds, label_set)
        s = sensitivity(dist, n_classes=max(n_classes, 2))
        preds_by[cond] = (preds, dist, s)
        per_item[cond] = s
        cons = class_consistency(dist, gold, label_set)
        conds.append(
            ConditionSummary(
                condition=cond,
                n_classes=max(n_classes, 2),
                mean_sensitivity=float(s.mean()) if s.size else 0.0,
                consistency={str(k): v for k, v in cons.items()},
                micro_f1=micro_f1(preds, gold),
                accuracy_by_rephrasing={
                    variants[(by_arm[n].arm.rephrasing or 1) - 1].name: by_arm[n].metrics.accuracy
                    for n in names
                },
                unparsed=sum(v is None for row in preds for v in row),
            )
        )
    items = src.items
    item_s = {it.id: {c: float(per_item[c][i]) for c in per_item} for i, it in enumerate(items)}
    report = SensitivityReport(
        prompts=variants,
        conditions=conds,
        item_sensitivity=item_s,
        item_gold={it.id: None if g is None else str(g) for it, g in zip(items, gold, strict=True)},
    )
    ranked = sorted(range(len(items)), key=lambda i: (-max(item_s[items[i].id].values()), items[i].id))
    report.most_sensitive = [
        ItemSensitivity(
            item_id=items[i].id,
            gold=None if gold[i] is None else str(gold[i]),
            task=short(items[i].task),
            response=short(items[i].response),
            sensitivity=item_s[items[i].id],
            labels={c: [_text(v) for v in preds_by[c][0][i]] for c in preds_by},
        )
        for i in ranked[:TOP]
        if max(item_s[items[i].id].values()) > 0
    ]
    pairs: list[InconsistentPair] = []
    for cond, (_, dist, _) in preds_by.items():
        for y in label_set:
            idx = [i for i, g in enumerate(gold) if g is not None and type(g) is type(y) and g == y]
            if len(idx) < 2:
                continue
            m = pairwise_consistency(dist[idx])
            a, b = np.triu_indices(len(idx), k=1)
            order = np.argsort(m[a, b], kind="stable")[:TOP]
            for k in order:
                i, j = idx[int(a[k])], idx[int(b[k])]
                if m[a[k], b[k]] >= 1.0:
                    break
                pairs.append(
                    InconsistentPair(
                        condition=cond,
                        gold=str(y),
                        item_a=items[i].id,
                        item_b=items[j].id,
                        consistency=float(m[a[k], b[k]]),
                        task_a=short(items[i].task, 100),
                        task_b=short(items[j].task, 100),
                    )
                )
    report.least_consistent = sorted(pairs, key=lambda p: (p.consistency, p.condition, p.item_a, p.item_b))[
        :TOP
    ]
    for cond, (preds, _, _) in preds_by.items():
        for q in range(2, len(variants) + 1):
            changed = [items[i].id for i, row in enumerate(preds) if row[q - 1] != row[0]]
            report.flips.append(
                RephrasingFlips(
                    condition=cond,
                    q=q,
                    prompt=variants[q - 1].name,
                    flips=len(changed),
                    item_ids=changed[:50],
                )
            )
    if "memory" in per_item and "zero-shot" in per_item and len(items) >= 2:
        with_m, without = per_item["memory"], per_item["zero-shot"]
        diff = with_m - without
        report.difference = float(diff.mean())
        draws = bootstrap_indices(
            len(items), n_resamples=src.spec.loop.bootstrap_resamples, random_state=src.spec.loop.seed
        )
        report.difference_ci = percentile_interval(diff[draws].mean(axis=1))
        report.paired_test = paired_t_test(without.tolist(), with_m.tolist())
    report.findings = _findings(report)
    return report


def _findings(r: SensitivityReport) -> list[str]:
    out = [
        f"{c.condition}: S_tau = {c.mean_sensitivity:.3f} (C = {c.n_classes}), micro-F1 = "
        + ("-" if c.micro_f1 is None else f"{c.micro_f1:.3f}")
        + ", C_y = "
        + ", ".join(f"{k}: {'-' if v is None else f'{v:.3f}'}" for k, v in c.consistency.items())
        for c in r.conditions
    ]
    if r.difference is not None:
        ci = r.difference_ci
        interval = f" [{ci.low:+.3f}, {ci.high:+.3f}]" if ci else ""
        moved = "less" if r.difference < 0 else "more"
        significant = ci is not None and (ci.low > 0 or ci.high < 0)
        out.append(
            f"with the memory the evaluator is {moved if r.difference else 'no more and no less'} sensitive to "
            f"wording: mean S_tau(x) difference {r.difference:+.3f}{interval} (paired bootstrap 95%), "
            + (
                "the interval excludes 0"
                if significant
                else "the interval includes 0: no evidence of a change"
            )
        )
    worst = max(r.flips, key=lambda f: f.flips, default=None)
    if worst is not None and worst.flips:
        out.append(
            f"rephrasing rho_{worst.q} ({worst.prompt}) changes the most labels: {worst.flips} item(s) "
            f"({worst.condition})"
        )
    return out


def sensitivity_study(
    project: str | Path = ".",
    *,
    rephrasings: int | None = 4,
    prompts: Sequence[str] | None = None,
    seed: int = 0,
    meta_prompt: str | Path | None = None,
    **options: Unpack[StudyOptions],
) -> SensitivityRecord:
    """Prompt sensitivity and consistency with and without the memory (see the module docstring).

    Args:
        rephrasings: Q, rule-based (rho_1 = the original); ignored when ``prompts`` is given.
        prompts: Prompt sets (saved names or folders) to use as rho_2.. instead.
        seed: Seed of the rule-based rephrasings (of the LLM's samples with ``meta_prompt``).
        meta_prompt: A meta-prompt file (holding ``{text}``): the evaluator writes the rephrasings.
        options: :class:`~allure.studies.StudyOptions` (``from_run``, ``spec``, ``split``, ``memory``,
            ``max_prompt_tokens``, ``name``, ``alpha``, ``say``, ``arm_progress``).

    Returns:
        The :class:`SensitivityRecord`.

    Raises:
        StudyError: No source, an empty memory, ``Q < 2``.
        SpecError: A rephrasing lost a placeholder or a label instruction.
    """
    proj = Path(project).resolve()
    src, mem, run = open_source(proj, options)
    context = StudyContext(proj, src, mem, alpha=run.get("alpha", 0.05))
    study = SensitivityStudy.prepare(
        context, rephrasings=rephrasings, prompts=prompts, seed=seed, meta_prompt=meta_prompt
    )
    result = run_study(proj, src, mem, study, **run)
    assert isinstance(result, SensitivityRecord)
    return result


def sensitivity_markdown(r: SensitivityReport) -> list[str]:
    """The sensitivity sections of ``study.md``."""
    lines = ["", "## Rephrasings", "", "| q | prompt set | method | hash | rules |", "|---|---|---|---|---|"]
    lines += [
        f"| {v.q} | {md(v.name)} | {v.method} | {v.hash} | {md(', '.join(v.rules) or '-')} |"
        for v in r.prompts
    ]
    classes = sorted({k for c in r.conditions for k in c.consistency})
    lines += [
        "",
        "## Sensitivity and consistency",
        "",
        "| condition | S_tau | C | micro-F1 | " + " | ".join(f"C_{md(k)}" for k in classes) + " | unparsed |",
        "|---|---|---|---|" + "---|" * (len(classes) + 1),
    ]
    for c in r.conditions:
        cons = " | ".join(fmt(c.consistency.get(k)) for k in classes)
        lines.append(
            f"| {md(c.condition)} | {c.mean_sensitivity:.3f} | {c.n_classes} | {fmt(c.micro_f1)} | {cons} | {c.unparsed} |"
        )
    if r.paired_test is not None or r.difference is not None:
        ci = r.difference_ci
        t = r.paired_test
        lines += [
            "",
            f"- with minus without memory, mean S_tau(x): {fmt(r.difference)}"
            + (f" [{ci.low:+.3f}, {ci.high:+.3f}] (paired bootstrap 95%)" if ci else ""),
            f"- paired t-test: t = {fmt(t.t if t else None)}, p = {fmt(t.p_value if t else None, 4)}, "
            f"Cohen's d_z = {fmt(t.cohens_d if t else None)}",
        ]
    lines += ["", "## Labels changed by each rephrasing (against rho_1)", ""]
    lines += [
        f"- {md(f.condition)}, rho_{f.q} ({md(f.prompt)}): {f.flips} item(s)"
        + (f": {md(', '.join(f.item_ids[:20]))}" if f.item_ids else "")
        for f in r.flips
    ]
    lines += ["", f"## The {len(r.most_sensitive)} most sensitive items", ""]
    lines += ["| item | gold | S_tau (memory / zero-shot) | labels rho_1..Q | task | response |"]
    lines.append("|---|---|---|---|---|---|")
    for it in r.most_sensitive:
        s = " / ".join(f"{v:.3f}" for v in it.sensitivity.values())
        labs = md("; ".join(f"{c}: {' '.join(v)}" for c, v in it.labels.items()))
        task, resp = md(it.task), md(it.response)
        lines.append(f"| {md(it.item_id)} | {md(it.gold)} | {s} | {labs} | {task} | {resp} |")
    lines += ["", "## Least consistent pairs (same gold class)", ""]
    lines += ["| condition | gold | item | item | 1 - TVD | task | task |", "|---|---|---|---|---|---|---|"]
    for p in r.least_consistent:
        ta, tb = md(p.task_a), md(p.task_b)
        lines.append(
            f"| {md(p.condition)} | {md(p.gold)} | {md(p.item_a)} | {md(p.item_b)} | {p.consistency:.3f} | {ta} | {tb} |"
        )
    lines += ["", "![sensitivity.png](sensitivity.png)"]
    return lines


def sensitivity_png(r: SensitivityReport, study_id: str) -> bytes:
    """Histograms of S_tau(x) per gold class and condition."""
    classes = sorted({k for c in r.conditions for k in c.consistency})
    by_class: dict[str, dict[str, list[float]]] = {k: {} for k in classes}
    for item_id, per_cond in r.item_sensitivity.items():
        g = r.item_gold.get(item_id)
        for cond, s in per_cond.items():
            by_class.setdefault(g or "all", {}).setdefault(cond, []).append(s)
    panels = [k for k, v in by_class.items() if v] or ["all"]
    fig = figure((5 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    bins = [i / 10 for i in range(11)]
    for ax, k in zip(axes, panels, strict=True):
        for cond, vals in sorted(by_class.get(k, {}).items()):
            ax.hist(vals, bins=bins, alpha=0.5, label=f"{cond} (n = {len(vals)})")
        ax.set_title(f"gold {k}")
        ax.set_xlabel("S_tau(x)")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("items")
    fig.suptitle(f"Prompt sensitivity {study_id}: Q = {len(r.prompts)} rephrasings")
    return png(fig)
