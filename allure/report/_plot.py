"""``metrics.png``: accuracy, F1, kappa and AUC per iteration, held-out and audit split.

matplotlib is imported inside :func:`render_plot` (slow to import) and used through its
object API with the Agg canvas, so no global pyplot state or display is touched.
"""

from __future__ import annotations

import io

from allure.report._model import ReportData

PANELS = (("accuracy", "Accuracy"), ("f1", "F1"), ("kappa", "Cohen's kappa"), ("auc", "ROC AUC"))
"""(metric, title) of the four panels."""

SPLIT_STYLE = {"heldout": ("held-out", "tab:blue", "o"), "audit": ("audit", "tab:orange", "s")}


def render_plot(data: ReportData, *, dpi: int = 110) -> bytes:
    """Draw the four metric panels and return the PNG bytes.

    Each panel plots the metric per iteration for the held-out and the audit split, with the
    95% bootstrap interval as a band; undefined values leave a gap.

    Args:
        data: The report.
        dpi: Resolution of the PNG.

    Returns:
        The PNG file's bytes.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 7), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2, sharex=True)
    xs = [it.iteration for it in data.iterations]
    nan = float("nan")
    for ax, (metric, title) in zip(axes.flat, PANELS, strict=True):
        for split, (label, color, marker) in SPLIT_STYLE.items():
            ms = [it.splits.get(split) for it in data.iterations]
            if all(m is None for m in ms):
                continue
            ys, lo, hi = [], [], []
            for m in ms:
                v = None if m is None else getattr(m, metric)
                ci = None if m is None else getattr(m.ci, metric)
                ys.append(nan if v is None else v)
                lo.append(nan if ci is None else ci.low)
                hi.append(nan if ci is None else ci.high)
            ax.plot(xs, ys, marker=marker, color=color, label=label)
            ax.fill_between(xs, lo, hi, color=color, alpha=0.15, linewidth=0)
        ax.set_title(title)
        ax.set_ylim(-1.05 if metric == "kappa" else -0.02, 1.02)
        ax.grid(alpha=0.3)
        if xs:
            ax.set_xticks(xs)
    for ax in axes[1]:
        ax.set_xlabel("iteration")
    axes[0][0].legend(loc="lower right")
    fig.suptitle(f"allure run {data.run_id}: evaluator vs reference labels (95% bootstrap CI)")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()
