"""The sensitivity study's part of ``study.md`` and its plot ``sensitivity.png``.

``sensitivity.png``: per gold class, the histogram of S_tau(x) over its items for each condition
(seed 001, Fig. 3-5: the per-sample distribution matters more than the mean).
"""

from __future__ import annotations

from allure.audits._model import StudyRecord
from allure.audits._plot import _figure, _fmt, _png


def sensitivity_markdown(study: StudyRecord) -> list[str]:
    """The sensitivity sections of ``study.md`` (empty for other studies)."""
    r = study.sensitivity
    if r is None:
        return []
    lines = ["", "## Rephrasings", "", "| q | prompt set | method | hash | rules |", "|---|---|---|---|---|"]
    lines += [
        f"| {v.q} | {v.name} | {v.method} | {v.hash} | {', '.join(v.rules) or '-'} |" for v in r.prompts
    ]
    classes = sorted({k for c in r.conditions for k in c.consistency})
    lines += [
        "",
        "## Sensitivity and consistency",
        "",
        "| condition | S_tau | C | micro-F1 | " + " | ".join(f"C_{k}" for k in classes) + " | unparsed |",
        "|---|---|---|---|" + "---|" * (len(classes) + 1),
    ]
    for c in r.conditions:
        cons = " | ".join(_fmt(c.consistency.get(k)) for k in classes)
        lines.append(
            f"| {c.condition} | {c.mean_sensitivity:.3f} | {c.n_classes} | {_fmt(c.micro_f1)} | {cons} | {c.unparsed} |"
        )
    if r.paired_test is not None or r.difference is not None:
        ci = r.difference_ci
        t = r.paired_test
        lines += [
            "",
            f"- with minus without memory, mean S_tau(x): {_fmt(r.difference)}"
            + (f" [{ci.low:+.3f}, {ci.high:+.3f}] (paired bootstrap 95%)" if ci else ""),
            f"- paired t-test: t = {_fmt(t.t if t else None)}, p = {_fmt(t.p_value if t else None, 4)}, "
            f"Cohen's d_z = {_fmt(t.cohens_d if t else None)}",
        ]
    lines += ["", "## Labels changed by each rephrasing (against rho_1)", ""]
    lines += [
        f"- {f.condition}, rho_{f.q} ({f.prompt}): {f.flips} item(s)"
        + (f": {', '.join(f.item_ids[:20])}" if f.item_ids else "")
        for f in r.flips
    ]
    lines += ["", f"## The {len(r.most_sensitive)} most sensitive items", ""]
    lines += ["| item | gold | S_tau (memory / zero-shot) | labels rho_1..Q | task | response |"]
    lines.append("|---|---|---|---|---|---|")
    for it in r.most_sensitive:
        s = " / ".join(f"{v:.3f}" for v in it.sensitivity.values())
        labs = "; ".join(f"{c}: {' '.join(v)}" for c, v in it.labels.items())
        task, resp = it.task.replace("|", "\\|"), it.response.replace("|", "\\|")
        lines.append(f"| {it.item_id} | {it.gold} | {s} | {labs} | {task} | {resp} |")
    lines += ["", "## Least consistent pairs (same gold class)", ""]
    lines += ["| condition | gold | item | item | 1 - TVD | task | task |", "|---|---|---|---|---|---|---|"]
    for p in r.least_consistent:
        ta, tb = p.task_a.replace("|", "\\|"), p.task_b.replace("|", "\\|")
        lines.append(
            f"| {p.condition} | {p.gold} | {p.item_a} | {p.item_b} | {p.consistency:.3f} | {ta} | {tb} |"
        )
    lines += ["", "![sensitivity.png](sensitivity.png)"]
    return lines


def sensitivity_png(study: StudyRecord) -> bytes:
    """Histograms of S_tau(x) per gold class and condition."""
    r = study.sensitivity
    assert r is not None
    classes = sorted({k for c in r.conditions for k in c.consistency})
    by_class: dict[str, dict[str, list[float]]] = {k: {} for k in classes}
    for item_id, per_cond in r.item_sensitivity.items():
        g = r.item_gold.get(item_id)
        for cond, s in per_cond.items():
            by_class.setdefault(g or "all", {}).setdefault(cond, []).append(s)
    panels = [k for k, v in by_class.items() if v] or ["all"]
    fig = _figure((5 * len(panels), 3.6))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    bins = [i / 10 for i in range(11)]
    for ax, k in zip(axes, panels, strict=True):
        for cond, vals in sorted(by_class.get(k, {}).items()):
            ax.hist(vals, bins=bins, alpha=0.5, label=f"{cond} (n = {len(vals)})")
        ax.set_title(f"gold {k}")
        ax.set_xlabel("S_tau(x)")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("items")
    fig.suptitle(f"Prompt sensitivity {study.id}: Q = {len(r.prompts)} rephrasings")
    return _png(fig)
