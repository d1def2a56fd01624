"""The record and figures of a finished sensitivity study (seed 001) from each arm's labels: per condition S_tau,
C_y and micro-F1; the most sensitive items and least consistent pairs; the labels each rephrasing
flips; and the paired with/without-memory difference in S_tau."""

from __future__ import annotations

import numpy as np

from allure.labels import Label
from allure.metrics import (
    NA_CLASS,
    Interval,
    PairedTest,
    bootstrap_indices,
    class_consistency,
    grouped,
    item_draws,
    micro_f1,
    paired_t_test,
    pairwise_consistency,
    percentile_interval,
    rephrasing_distribution,
    sensitivity,
)
from allure.models import Item
from allure.robustness._reports import (
    ConditionSummary,
    InconsistentPair,
    ItemSensitivity,
    PromptVariant,
    RephrasingFlips,
    SensitivityReport,
)
from allure.robustness._variants import CONDITIONS, TOP, short
from allure.studies import StudyRecord, StudySource


class SensitivityRecord(StudyRecord):
    """``study.json`` of a sensitivity study: the shared record and its :class:`SensitivityReport`."""

    kind: str = "sensitivity"
    sensitivity: SensitivityReport
    """Per condition S_tau, C_y and micro-F1, the paired with/without-memory comparison."""


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
    conds, preds_by = _conditions(study, labels_by_arm, src, variants, gold)
    per_item = {c: s for c, (_, _, s) in preds_by.items()}
    items = src.items
    item_s = {it.id: {c: float(per_item[c][i]) for c in per_item} for i, it in enumerate(items)}
    report = SensitivityReport(
        prompts=variants,
        conditions=conds,
        item_sensitivity=item_s,
        item_gold={it.id: None if g is None else str(g) for it, g in zip(items, gold, strict=True)},
    )
    report.most_sensitive = _most_sensitive(items, gold, item_s, preds_by)
    report.least_consistent = _least_consistent(items, gold, label_set, preds_by)
    report.flips = _flips(items, variants, preds_by)
    if "memory" in per_item and "zero-shot" in per_item and len(items) >= 2:
        with_m, without = per_item["memory"], per_item["zero-shot"]
        diff = with_m - without
        report.difference = float(diff.mean())
        report.difference_ci, report.paired_test = _difference_test(items, without, with_m, src)
    report.findings = _findings(report)
    return report


def _difference_test(
    items: list[Item], without: np.ndarray, with_m: np.ndarray, src: StudySource
) -> tuple[Interval | None, PairedTest]:
    """The interval of the mean with-minus-without difference and its paired t-test; where items
    share a task, the interval resamples whole tasks and the test runs on the tasks' means."""
    from allure.dataset import task_groups

    loop = src.spec.loop
    tasks = task_groups(items)
    keys = [tasks[it.id] for it in items]
    diff = with_m - without
    if grouped(keys):
        # every item drawn as often as its task (one stratum: no reference label is read here)
        weights = item_draws(
            np.zeros(len(items), dtype=np.int64),
            keys,
            1,
            n_resamples=loop.bootstrap_resamples,
            seed=loop.seed,
        )
        means = (weights @ diff) / weights.sum(axis=1)
    else:
        means = diff[
            bootstrap_indices(len(items), n_resamples=loop.bootstrap_resamples, random_state=loop.seed)
        ].mean(axis=1)
    return percentile_interval(means), paired_t_test(without.tolist(), with_m.tolist(), groups=keys)


Preds = dict[str, tuple[list[list[Label | None]], np.ndarray, np.ndarray]]
"""Condition -> (each item's label per rephrasing, the rephrasing distributions, S_tau per item)."""


def _conditions(
    study: StudyRecord,
    labels_by_arm: dict[str, list[Label | None]],
    src: StudySource,
    variants: list[PromptVariant],
    gold: list[Label | None],
) -> tuple[list[ConditionSummary], Preds]:
    """Per condition (with and without the memory): its summary, and the labels behind it."""
    label_set = list(src.spec.label_set)
    any_na = any(v is None for col in labels_by_arm.values() for v in col)
    n_classes = len(label_set) + (1 if any_na else 0)
    by_arm = {r.arm.name: r for r in study.arms}
    conds: list[ConditionSummary] = []
    preds_by: Preds = {}
    for cond in CONDITIONS:
        names = [a for a in by_arm if by_arm[a].arm.with_memory == (cond == "memory")]
        if not names:
            continue
        names.sort(key=lambda n: by_arm[n].arm.rephrasing or 0)
        preds = [[labels_by_arm[n][i] for n in names] for i in range(len(src.items))]
        dist = rephrasing_distribution(preds, label_set)
        s = sensitivity(dist, n_classes=max(n_classes, 2))
        preds_by[cond] = (preds, dist, s)
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
    return conds, preds_by


def _most_sensitive(
    items: list[Item], gold: list[Label | None], item_s: dict[str, dict[str, float]], preds_by: Preds
) -> list[ItemSensitivity]:
    """The :data:`TOP` items whose label moves most with the wording (those that move at all)."""
    ranked = sorted(range(len(items)), key=lambda i: (-max(item_s[items[i].id].values()), items[i].id))
    return [
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


def _least_consistent(
    items: list[Item], gold: list[Label | None], label_set: list[Label], preds_by: Preds
) -> list[InconsistentPair]:
    """The :data:`TOP` pairs of items with the same reference label whose rephrasing distributions
    agree least (per condition and label)."""
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
    return sorted(pairs, key=lambda p: (p.consistency, p.condition, p.item_a, p.item_b))[:TOP]


def _flips(items: list[Item], variants: list[PromptVariant], preds_by: Preds) -> list[RephrasingFlips]:
    """Per condition and rephrasing rho_q (q >= 2): the items whose label differs from rho_1's."""
    flips = []
    for cond, (preds, _, _) in preds_by.items():
        for q in range(2, len(variants) + 1):
            changed = [items[i].id for i, row in enumerate(preds) if row[q - 1] != row[0]]
            flips.append(
                RephrasingFlips(
                    condition=cond,
                    q=q,
                    prompt=variants[q - 1].name,
                    flips=len(changed),
                    item_ids=changed[:50],
                )
            )
    return flips


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
            f"wording: mean S_tau(x) difference {r.difference:+.3f}{interval} (paired bootstrap 95%"
            + (f", {r.paired_test.groups} tasks resampled" if r.paired_test and r.paired_test.groups else "")
            + "), "
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
