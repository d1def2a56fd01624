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

from allure.prompts import write_prompt_set
from allure.robustness._base import RobustStudy, run_robust
from allure.robustness._reports import PromptVariant, SensitivityReport
from allure.robustness._sensitivity_report import SensitivityRecord, sensitivity_report
from allure.robustness._variants import VARIANT_PARAMS, prompt_variants, sensitivity_arms
from allure.safe_text import markdown_cell as md
from allure.studies import ArmLabels, ParamType, StudyContext, StudyOptions, StudyRecord, StudySource
from allure.studies.figures import figure, fmt, png


@dataclass
class SensitivityStudy(RobustStudy):
    """The sensitivity study as a :class:`~allure.studies.Study`."""

    kind: ClassVar[str] = "sensitivity"
    result: ClassVar[type[StudyRecord]] = SensitivityRecord
    params: ClassVar[dict[str, ParamType]] = {**VARIANT_PARAMS, "meta_prompt": "text"}
    src: StudySource
    variants: list[PromptVariant]

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

    def report(self, record: StudyRecord, labels: ArmLabels) -> SensitivityReport:
        return sensitivity_report(record, labels, self.src, self.variants)

    def markdown(self, report: SensitivityReport) -> list[str]:
        return sensitivity_markdown(report)

    def figure(self, report: SensitivityReport, study_id: str) -> bytes:
        return sensitivity_png(report, study_id)


class SensitivityOptions(StudyOptions, total=False):
    """The keyword arguments of :func:`sensitivity_study`: the study's own (its ``params``) and the
    :class:`~allure.studies.StudyOptions`; the defaults are :meth:`SensitivityStudy.prepare`'s."""

    rephrasings: int | None
    prompts: Sequence[str] | None
    seed: int
    meta_prompt: str | Path | None


def sensitivity_study(project: str | Path = ".", **options: Unpack[SensitivityOptions]) -> SensitivityRecord:
    """Prompt sensitivity and consistency with and without the memory (see the module docstring).

    Args:
        rephrasings: Q, rule-based (rho_1 = the original; default 4); ignored when ``prompts`` is given.
        prompts: Prompt sets (saved names or folders) to use as rho_2.. instead.
        seed: Seed of the rule-based rephrasings (of the LLM's samples with ``meta_prompt``; default 0).
        meta_prompt: A meta-prompt file (holding ``{text}``): the evaluator writes the rephrasings.
        options: :class:`~allure.studies.StudyOptions` (``from_run``, ``spec``, ``split``, ``memory``,
            ``max_prompt_tokens``, ``name``, ``alpha``, ``say``, ``arm_progress``).

    Returns:
        The :class:`SensitivityRecord`.

    Raises:
        StudyError: No source, an empty memory, ``Q < 2``.
        SpecError: A rephrasing lost a placeholder or a label instruction.
        TypeError: An option no study takes.
    """
    result = run_robust(SensitivityStudy, project, options)
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
            f"- paired t-test{f' over the means of {t.groups} tasks' if t and t.groups else ''}: "
            f"t = {fmt(t.t if t else None)}, p = {fmt(t.p_value if t else None, 4)}, "
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
