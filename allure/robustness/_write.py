"""The robustness studies' own parts of ``study.md`` and their plots (``sensitivity.png``, ``entropy.png``),
each a function of the kind's report.

``sensitivity.png``: per gold class, the histogram of S_tau(x) over its items for each condition
(seed 001, Fig. 3-5: the per-sample distribution matters more than the mean).
"""

from __future__ import annotations

from allure.robustness._reports import ConsistencyReport, EntropyReport, RequestReport, SensitivityReport
from allure.safe_text import markdown_cell as md
from allure.studies.figures import figure, fmt, png


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


def consistency_markdown(r: ConsistencyReport) -> list[str]:
    """The score consistency sections of ``study.md``."""
    low, high = r.scale
    lines = [
        "",
        f"## Score consistency (K = {r.samples} at T = {r.temperature:g}, scale {low:g}-{high:g}, "
        f"pairs from {r.pairs_from}, entailment: {r.entailment})",
        "",
        f"Score pattern: `{r.score_pattern}`; {r.out_of_scale} score(s) outside the scale left out.",
        "",
        "| a | b | scores a | scores b | p (scores) | flagged | mean TC a | mean TC b | p (TC) | flagged |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in sorted(r.pairs, key=lambda p: (not p.score_flagged, not p.tc_flagged, p.a)):
        sa = " ".join(fmt(v, 0) if v is None else f"{v:g}" for v in p.scores_a)
        sb = " ".join(fmt(v, 0) if v is None else f"{v:g}" for v in p.scores_b)
        ta = sum(p.tc_a) / len(p.tc_a) if p.tc_a else None
        tb = sum(p.tc_b) / len(p.tc_b) if p.tc_b else None
        lines.append(
            f"| {md(p.a)} | {md(p.b)} | {sa} | {sb} | {fmt(p.score_test.p_value if p.score_test else None, 4)} | "
            f"{'yes' if p.score_flagged else ''} | {fmt(ta)} | {fmt(tb)} | "
            f"{fmt(p.tc_test.p_value if p.tc_test else None, 4)} | {'yes' if p.tc_flagged else ''} |"
        )
    return lines


def request_markdown(r: RequestReport) -> list[str]:
    """The ReQuest section of ``study.md``: the procedure and PerRR/PreRR."""
    x = r.reproducibility
    return [
        "",
        f"## ReQuest: the procedure {r.written_by} says it followed",
        "",
        *[f"> {line}" for line in r.procedure.splitlines()],
        "",
        f"Run as the prompt set `{r.procedure_prompt}` ({x.kind}, {' vs '.join(x.models)}): "
        f"macro-F1 {fmt(x.f1_a)} (original) vs {fmt(x.f1_b)} (procedure), PerRR = {fmt(x.perrr)}, "
        f"PreRR = {fmt(x.prerr)}; {len(x.disagreements)} item(s) labelled differently"
        + (f": {', '.join(x.disagreements[:20])}" if x.disagreements else ""),
    ]
