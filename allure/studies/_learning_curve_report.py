"""The learning curve's files: ``study.md`` with the curve's table and ``learning_curve.png``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from allure.studies._write import study_markdown, write_study
from allure.studies.figures import figure, fmt, png

if TYPE_CHECKING:
    from allure.studies._learning_curve_record import LearningCurveRecord


def curve_setup(study: LearningCurveRecord) -> list[str]:
    """The curve's setup lines: pool, sizes, draws, features, what is tested."""
    what = study.objective.replace("_", " ")
    return [
        f"- read-out: the loop's (class-weighted L2 logistic regression on {', '.join(study.features)}, C by "
        f"stratified CV), fitted on the first n of {study.pool} mined audit items (the audit split outside dev, "
        f"an auditor's label winning) in {study.repeats} seeded review order(s); features from the stored "
        f"zero-shot pass {study.zero_shot_iteration} of the source run (0 calls); zero-shot: that pass's labels "
        "as the judge parsed them (never the loop's calibration or read-out of them)",
        f"- sizes: {', '.join(map(str, study.sizes)) or 'none'}"
        + (
            f"; skipped (above the pool of {study.pool}): {', '.join(map(str, study.skipped))}"
            if study.skipped
            else ""
        ),
        f"- curve: held-out {what}, mean over draws with a 95% stratified bootstrap interval; delta vs zero-shot "
        "with its interval; p: the draws' paired permutation p-values merged (order statistic), Holm over "
        "the sizes (exploratory)",
    ]


def curve_table(study: LearningCurveRecord) -> list[str]:
    """The curve's section of ``study.md``: one row per size."""
    what = study.objective.replace("_", " ")
    lines = [
        "",
        "## Learning curve (held-out)",
        "",
        f"| n approved | draws | {what} [95% CI] | sd | min | max | zero-shot | delta [95% CI] | p | p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in study.curve:
        d = "-" if p.delta is None else f"{p.delta:+.3f} [{fmt(p.delta_low)}, {fmt(p.delta_high)}]"
        lines.append(
            f"| {p.size} | {p.draws} | {fmt(p.mean)} [{fmt(p.ci_low)}, {fmt(p.ci_high)}] | {fmt(p.sd)} | "
            f"{fmt(p.low)} | {fmt(p.high)} | {fmt(p.zero_shot)} | {d} | {fmt(p.p_value, 4)} | {fmt(p.p_holm, 4)} |"
        )
    lines += ["", "Fits:", ""] + [f"- n = {f.size} #{f.repeat}: {f.describe}" for f in study.fits]
    return lines


def curve_png(study: LearningCurveRecord) -> bytes:
    """The objective against n: each draw, the mean over draws with its interval, zero-shot as a line."""
    fig = figure((7, 4.5))
    ax = fig.subplots()
    pts = [p for p in study.curve if p.mean is not None]
    for p in study.curve:
        ys = [v for v in p.values if v is not None]
        ax.scatter([p.size] * len(ys), ys, s=12, color="tab:blue", alpha=0.4)
    if pts:
        xs = [p.size for p in pts]
        ax.plot(xs, [p.mean for p in pts], color="tab:blue", marker="o", label="read-out, mean over draws")
        lows = [p.ci_low if p.ci_low is not None else p.mean for p in pts]
        highs = [p.ci_high if p.ci_high is not None else p.mean for p in pts]
        ax.fill_between(xs, lows, highs, color="tab:blue", alpha=0.15, linewidth=0, label="95% interval")
    zero = next((p.zero_shot for p in study.curve if p.zero_shot is not None), None)
    if zero is not None:
        ax.axhline(zero, color="tab:gray", linestyle="--", label="zero-shot")
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(study.sizes or [1], [str(n) for n in study.sizes] or ["1"])
    ax.set_xlabel("approved (mined) audit items the read-out is fitted on")
    ax.set_ylabel(f"held-out {study.objective.replace('_', ' ')}")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(
        f"Learning curve {study.id}\n{study.n_items} held-out items, {study.repeats} draw(s) per size",
        fontsize=10,
    )
    return png(fig)


def write_curve(study: LearningCurveRecord, folder: Path) -> dict[str, Path]:
    """``study.json``, ``study.md`` and the plots."""
    text = study_markdown(
        study, setup=curve_setup(study), middle=curve_table(study), plots=["learning_curve.png"]
    )
    return write_study(study, folder, text, {"learning_curve.png": curve_png(study)})
