"""Prompt sensitivity and consistency (seed 001): every item under every rephrasing, with and without memory.

The arms are ``rho_q +memory`` (the spec's retrieval policy) and ``rho_q zero-shot`` for each
rephrasing rho_1..rho_Q (rho_1: the spec's prompt set), all over one frozen item set, through
:func:`~allure.audits._run.run_study` (stored, cached, resumable). The reference arm is
``rho_1 +memory``. Rephrasings are either rule-based (written to ``PROJECT/.allure/prompts/`` and
re-used from there, so an edit a user makes is honoured and checked) or prompt set folders given
by the user; every one is checked (placeholders, label instructions, answer format) before
anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Unpack

import numpy as np

from allure.audits._model import Arm, StudyKind, StudyRecord
from allure.audits._robust_model import (
    ConditionSummary,
    InconsistentPair,
    ItemSensitivity,
    PromptVariant,
    RephrasingFlips,
    SensitivityReport,
)
from allure.audits._run import Finish, RunOptions, run_study
from allure.audits._source import StudySource
from allure.audits._studies import StudyOptions, _source
from allure.errors import StudyError
from allure.labels import Label
from allure.memory import EpisodicMemory
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
from allure.prompts import (
    PROMPTS_DIR,
    Rephrasing,
    find_prompt_set,
    load_checked,
    load_prompt_set,
    prompt_set_hash,
    prompt_texts,
    rule_rephrasings,
    write_prompt_set,
)

CONDITIONS = ("memory", "zero-shot")
"""The two conditions, in arm order."""

TOP = 10
"""How many items and pairs the report lists."""


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def prompt_variants(
    project: Path,
    src: StudySource,
    *,
    rephrasings: int | None,
    prompts: Sequence[str] | None,
    seed: int,
    optional: bool = False,
    meta_prompt: str | Path | None = None,
) -> tuple[list[PromptVariant], list[tuple[Path, Rephrasing]]]:
    """rho_1..rho_Q, checked, and the rephrasings still to be written (no prompt set is written here).

    With ``optional``, neither source gives rho_1 alone. With ``meta_prompt``, rho_2..rho_Q are
    written by the evaluator from that meta-prompt file (:mod:`allure.audits._llm_rephrase`).

    Raises:
        StudyError: Neither (unless ``optional``) or both of ``rephrasings`` and ``prompts``, or ``Q < 2``.
        SpecError: A rephrasing lost a placeholder or a label instruction.
    """
    none = rephrasings is None and prompts is None
    if (rephrasings is None) == (prompts is None) and not (optional and none):
        raise StudyError(
            "a sensitivity study needs exactly one source of rephrasings",
            where="options --rephrasings / --prompts",
            fix="pass --rephrasings Q (rule-based, rho_1 = the original) or --prompts SET,SET,... (your own)",
        )
    labels = list(src.spec.label_set)
    base_name = src.spec.evaluator.prompt
    base = load_prompt_set(base_name)
    out = [PromptVariant(q=1, name=base.name, path=base_name, hash=prompt_set_hash(prompt_texts(base)))]
    pending: list[tuple[Path, Rephrasing]] = []
    if none:
        return out, pending
    if prompts is not None:
        if len(prompts) < 1:
            raise StudyError("no prompt set given", where="option --prompts", fix="pass at least one")
        for q, name in enumerate(prompts, start=2):
            path = find_prompt_set(project, name)
            ps = load_checked(path, base, labels)
            out.append(
                PromptVariant(
                    q=q, name=ps.name, path=path, hash=prompt_set_hash(prompt_texts(ps)), method="given"
                )
            )
        return out, pending
    assert rephrasings is not None
    if rephrasings < 2:
        raise StudyError(
            f"--rephrasings {rephrasings}: Q counts the original prompt",
            where="option --rephrasings",
            fix="pass --rephrasings 4 (the original and 3 rule-based rephrasings)",
        )
    if meta_prompt is not None:
        from allure.audits._llm_rephrase import llm_variants

        for v, made in llm_variants(
            project, src, base, rephrasings - 1, meta_prompt, seed=seed, labels=labels
        ):
            out.append(v)
            pending += [(Path(v.path), made)] if made is not None else []
        return out, pending
    for r in rule_rephrasings(base, rephrasings - 1, seed=seed, labels=labels):
        folder = project / PROMPTS_DIR / r.name
        if (folder / "user.txt").is_file():
            ps = load_checked(folder, base, labels)  # re-use (and check) what is on disk, edits included
            texts = prompt_texts(ps)
        else:
            texts = r.texts
            pending.append((folder, r))
        out.append(
            PromptVariant(
                q=len(out) + 1,
                name=r.name,
                path=str(folder),
                hash=prompt_set_hash(texts),
                method="rules",
                rules=list(r.rules),
            )
        )
    return out, pending


def sensitivity_arms(variants: Sequence[PromptVariant], src: StudySource) -> list[Arm]:
    """``rho_q +memory`` and ``rho_q zero-shot`` per rephrasing."""
    arms = []
    for v in variants:
        prompt = None if v.q == 1 else v.path
        tag = f"rho{v.q}"
        arms.append(
            Arm(
                name=f"{tag} +memory",
                policy=src.spec.memory.retrieval,
                prompt=prompt,
                prompt_hash=v.hash,
                rephrasing=v.q,
                with_memory=True,
            )
        )
        arms.append(
            Arm(
                name=f"{tag} zero-shot",
                example_ids=[],
                prompt=prompt,
                prompt_hash=v.hash,
                rephrasing=v.q,
                with_memory=False,
            )
        )
    return arms


def _text(v: Label | None) -> str:
    return NA_CLASS if v is None else str(v)


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
            task=_short(items[i].task),
            response=_short(items[i].response),
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
                        task_a=_short(items[i].task, 100),
                        task_b=_short(items[j].task, 100),
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


def robust_study(
    project: Path,
    kind: StudyKind,
    src: StudySource,
    memory: EpisodicMemory,
    arms: list[Arm],
    finish: Finish,
    run: RunOptions,
) -> StudyRecord:
    """:func:`run_study` with the first arm as the reference and the kind's own ``finish``."""
    return run_study(
        project,
        src,
        memory,
        kind=kind,
        arms=arms,
        reference_arm=arms[0].name,
        record={},
        finish=finish,
        **run,
    )


def sensitivity_study(
    project: str | Path = ".",
    *,
    rephrasings: int | None = 4,
    prompts: Sequence[str] | None = None,
    seed: int = 0,
    meta_prompt: str | Path | None = None,
    **options: Unpack[StudyOptions],
) -> StudyRecord:
    """Prompt sensitivity and consistency with and without the memory (see the module docstring).

    Args:
        rephrasings: Q, rule-based (rho_1 = the original); ignored when ``prompts`` is given.
        prompts: Prompt sets (saved names or folders) to use as rho_2.. instead.
        seed: Seed of the rule-based rephrasings (of the LLM's samples with ``meta_prompt``).
        meta_prompt: A meta-prompt file (holding ``{text}``): the evaluator writes the rephrasings.
        options: :class:`~allure.audits.StudyOptions` (``from_run``, ``spec``, ``split``, ``memory``,
            ``max_prompt_tokens``, ``name``, ``alpha``, ``say``, ``arm_progress``).

    Returns:
        The :class:`StudyRecord` with ``sensitivity``.

    Raises:
        StudyError: No source, an empty memory, ``Q < 2``.
        SpecError: A rephrasing lost a placeholder or a label instruction.
    """
    proj = Path(project).resolve()
    src, mem, run = _source(proj, options)
    variants, pending = prompt_variants(
        proj,
        src,
        rephrasings=None if prompts is not None else rephrasings,
        prompts=prompts,
        seed=seed,
        meta_prompt=meta_prompt,
    )
    for folder, r in pending:
        write_prompt_set(folder, r)
    arms = sensitivity_arms(variants, src)

    def finish(study: StudyRecord, labels: dict[str, list[Label | None]]) -> StudyRecord:
        report = sensitivity_report(study, labels, src, variants)
        return study.model_copy(
            update={"sensitivity": report, "findings": [*report.findings, *study.findings]}
        )

    return robust_study(proj, "sensitivity", src, mem, arms, finish, run)
