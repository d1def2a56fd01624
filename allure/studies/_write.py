"""The files every study writes: ``study.json``, ``study.md`` (the shared sections, with the kind's
own sections where it puts them) and ``errors_by_problem_type.png`` (errors per problem type and
arm; ALLURE Fig. 8), each written atomically. A kind's own plots come from its own module.
matplotlib is used through its object API with the Agg canvas.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from allure._io import atomic_write_bytes
from allure.safe_text import markdown_cell as md
from allure.studies._record import StudyRecord
from allure.studies.figures import figure, fmt, png

PANELS = (("accuracy", "Accuracy"), ("f1", "F1"), ("kappa", "Cohen's kappa"), ("auc", "ROC AUC"))
"""(metric, title) of the plotted metrics."""


def errors_table(study: StudyRecord) -> tuple[list[str], dict[str, dict[str, int]]]:
    """Problem types (sorted) and arm -> problem type -> errors (unparsed counted separately)."""
    table: dict[str, dict[str, int]] = {}
    types: set[str] = set()
    for r in study.arms:
        row = {g.group or "-": g.errors for g in r.metrics.errors_by_problem_type or []}
        types.update(row)
        table[r.arm.name] = row
    return sorted(types), table


def comparison_png(study: StudyRecord, title: str) -> bytes:
    """Each arm's change against the reference arm: accuracy and F1 with the paired bootstrap
    interval, kappa and AUC as point differences; red bars are significant (McNemar exact, Holm)."""
    arms = [r for r in study.arms if r.comparison is not None]
    ref = next(r for r in study.arms if r.arm.name == study.reference_arm)
    fig = figure((10, 7))
    axes = fig.subplots(2, 2)
    names = [r.arm.name for r in arms]
    for ax, (metric, panel) in zip(axes.flat, PANELS, strict=True):
        deltas, lows, highs = [], [], []
        for r in arms:
            c = r.comparison
            assert c is not None
            if metric in ("accuracy", "f1"):
                pd_ = c.accuracy if metric == "accuracy" else c.f1
                deltas.append(pd_.delta)
                lows.append(pd_.ci_low)
                highs.append(pd_.ci_high)
            else:
                a, b = getattr(r.metrics, metric), getattr(ref.metrics, metric)
                deltas.append(None if a is None or b is None else a - b)
                lows.append(None)
                highs.append(None)
        ys = [0.0 if d is None else d for d in deltas]
        colors = ["tab:red" if (r.comparison and r.comparison.significant) else "tab:gray" for r in arms]
        ax.barh(names, ys, color=colors)
        for i, (d, lo, hi) in enumerate(zip(deltas, lows, highs, strict=True)):
            if d is not None and lo is not None and hi is not None:
                ax.errorbar([d], [i], xerr=[[d - lo], [hi - d]], fmt="none", color="black", capsize=3)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(f"change in {panel} vs {study.reference_arm}")
        ax.grid(axis="x", alpha=0.3)
        ax.invert_yaxis()
    fig.suptitle(
        f"{title} {study.id}: n = {study.n_items} items\nred = significant (McNemar exact, Holm, "
        f"alpha {study.alpha:g}); intervals: paired bootstrap 95%"
    )
    return png(fig)


def errors_png(study: StudyRecord) -> bytes:
    """Errors per problem type and arm as an annotated grid (ALLURE Fig. 8)."""
    import numpy as np

    types, table = errors_table(study)
    names = [r.arm.name for r in study.arms]
    grid = np.asarray([[table[n].get(t, 0) for t in types] for n in names], dtype=float).reshape(
        len(names), len(types)
    )
    fig = figure((max(6.0, 1.1 * len(types) + 3), max(3.0, 0.4 * len(names) + 1.5)))
    ax = fig.subplots()
    ax.imshow(grid if grid.size else np.zeros((1, 1)), cmap="Reds", aspect="auto")
    ax.set_xticks(range(len(types)), types, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(types)):
            ax.text(j, i, str(int(grid[i, j])), ha="center", va="center", fontsize=8)
    ax.set_title(f"Errors per problem type ({study.id}, n = {study.n_items})")
    return png(fig)


def study_markdown(
    study: StudyRecord,
    *,
    setup: Sequence[str] = (),
    middle: Sequence[str] = (),
    tail: Sequence[str] = (),
    plots: Sequence[str] = (),
) -> str:
    """``study.md``: the setup (with the kind's ``setup`` lines), the findings, the arms table, the
    kind's ``middle`` sections, the errors per problem type and generator, its ``tail`` sections,
    and the plots (the kind's ``plots``, then the errors grid)."""
    lines = _setup(study) + list(setup)
    lines += ["", "## Findings", ""] + [f"- {md(f)}" for f in study.findings]
    lines += _arms_table(study) + _arm_notes(study) + list(middle) + _errors_tables(study) + list(tail)
    lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in [*plots, "errors_by_problem_type.png"]]
    return "\n".join(lines) + "\n"


def _setup(study: StudyRecord) -> list[str]:
    """The title and the shared setup lines: items, evaluator, memory, tests, budget, last run."""
    src = md(", ".join(f"{k} {v}" for k, v in study.source.items()))
    return [
        f"# Study {md(study.id)} ({study.kind})",
        "",
        f"- items: {study.n_items} ({src})",
        f"- evaluator: {md(study.evaluator.get('model'))}; prompt: {md(study.prompt)}",
        f"- memory: {study.memory_size} examples, version {study.memory_version} ({md(study.memory_location)})",
        f"- reference arm: {md(study.reference_arm)}; tests: McNemar exact on discordant pairs, Holm over "
        f"{max(len(study.arms) - 1, 0)} arm(s), alpha {study.alpha:g}; intervals: bootstrap 95%",
        f"- context budget: {study.max_prompt_tokens or 'none'}"
        + (f" tokens per prompt, counted by {study.token_counter}" if study.max_prompt_tokens else ""),
        f"- last run: {study.calls} calls, {study.wall_s:.1f}s",
    ]


def _arms_table(study: StudyRecord) -> list[str]:
    """The arms: metrics with intervals, and the paired comparison with the reference arm."""
    lines = [
        "",
        "## Arms",
        "",
        "| arm | examples/prompt | dropped | accuracy [95% CI] | F1 | kappa | AUC | unparsed | "
        "d accuracy [paired 95% CI] | b | c | p (McNemar) | p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in study.arms:
        m, c = r.metrics, r.comparison
        ci = m.ci.accuracy
        acc = fmt(m.accuracy) + (f" [{ci.low:.3f}, {ci.high:.3f}]" if ci else "")
        d = (
            f"{c.accuracy.delta:+.3f} [{fmt(c.accuracy.ci_low)}, {fmt(c.accuracy.ci_high)}]"
            if c and c.accuracy.delta is not None
            else "-"
        )
        lines.append(
            f"| {md(r.arm.name)} | {r.mean_examples:.1f} | {r.dropped} | {acc} | {fmt(m.f1)} | "
            f"{fmt(m.kappa)} | {fmt(m.auc)} | {m.n_unparsed} | {d} | "
            f"{c.mcnemar.b if c else '-'} | {c.mcnemar.c if c else '-'} | "
            f"{fmt(c.mcnemar.p_value, 4) if c else '-'} | {fmt(c.p_holm, 4) if c else '-'} |"
        )
    tasks = next((r.comparison.mcnemar.groups for r in study.arms if r.comparison), None)
    if tasks is not None:
        lines += [
            "",
            f"The items share tasks ({tasks} tasks): each p is the larger of McNemar's and the test that swaps "
            "whole tasks, and each interval resamples whole tasks.",
        ]
    return lines


def _arm_notes(study: StudyRecord) -> list[str]:
    """Which arms were position-debiased (with their undecided items) and which calibrated."""
    lines: list[str] = []
    debiased = [r for r in study.arms if r.position_debias]
    if debiased:
        lines += [
            "",
            "Position-debiased arms (each pair labelled in both orders; an undecided item, where the",
        ]
        lines += ["two orders disagree, counts in *unparsed*, as wrong in accuracy over all items):", ""]
        lines += [f"- {r.arm.name}: {r.position_debias}, {r.undecided} undecided" for r in debiased]
    calibrated = [r for r in study.arms if r.calibration]
    if calibrated:
        lines += [
            "",
            "Calibrated arms (contextual calibration; the parsed labels stay in the run store):",
            "",
        ]
        lines += [
            f"- {r.arm.name}: {cal.get('mode')}, {cal.get('changed')} labels changed"
            for r in calibrated
            if (cal := r.calibration or {})
        ]
    return lines


def _errors_tables(study: StudyRecord) -> list[str]:
    """Each arm's errors per problem type (with the total) and per generator."""
    ptypes, table = errors_table(study)
    lines = [
        "",
        "## Errors per problem type",
        "",
        "| arm | " + " | ".join(md(t) for t in ptypes) + " | total |",
    ]
    lines.append("|---|" + "---|" * (len(ptypes) + 1))
    for name, row in table.items():
        lines.append(
            f"| {md(name)} | " + " | ".join(str(row.get(t, 0)) for t in ptypes) + f" | {sum(row.values())} |"
        )
    gens: dict[str, dict[str, int]] = {
        r.arm.name: {g.group or "-": g.errors for g in r.metrics.errors_by_generator or []}
        for r in study.arms
    }
    gnames = sorted({g for row in gens.values() for g in row})
    lines += ["", "## Errors per generator", "", "| arm | " + " | ".join(md(g) for g in gnames) + " |"]
    lines.append("|---|" + "---|" * len(gnames))
    for name, row in gens.items():
        lines.append(f"| {md(name)} | " + " | ".join(str(row.get(g, 0)) for g in gnames) + " |")
    return lines


def write_study(study: StudyRecord, out_dir: Path, markdown: str, plots: dict[str, bytes]) -> dict[str, Path]:
    """Write ``study.json``, ``markdown`` as ``study.md``, the errors grid and the kind's ``plots``
    into ``out_dir``; returns their paths by file name."""
    files: dict[str, bytes] = {
        "study.json": json.dumps(study.model_dump(mode="json"), indent=2).encode(),
        "study.md": markdown.encode(),
        "errors_by_problem_type.png": errors_png(study),
        **plots,
    }
    out = {}
    for fname, payload in files.items():
        atomic_write_bytes(out_dir / fname, payload)
        out[fname] = out_dir / fname
    return out
