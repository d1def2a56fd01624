"""The history of a frozen set's re-audits: rows for a table, CSV, and a trend plot."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from allure.reaudit._gate import metric_value
from allure.reaudit._outputs import SUMMARY_METRICS

if TYPE_CHECKING:
    from allure.reaudit._record import ReauditRecord


class HistoryRow(BaseModel):
    """One re-audit in a set's history."""

    id: str
    """The re-audit id."""
    date: str
    """When it ran (ISO-8601 UTC)."""
    set_version: int
    """The frozen set's version."""
    status: str
    """``pass`` or ``regression``."""
    failed_checks: list[str]
    """Names of the failed gate checks."""
    changes: list[str]
    """Fingerprint changes since the previous re-audit (first row: empty)."""
    baseline_id: str
    """The re-audit it was compared with."""
    values: dict[str, float | None]
    """accuracy, f1, kappa."""
    intervals: dict[str, tuple[float, float] | None]
    """Their 95% bootstrap intervals."""
    calls: int
    """Evaluator calls it sent."""
    prompt_hash: str
    """Prompt-set hash."""
    model: str
    """Evaluator model."""
    memory_size: int
    """Examples in memory."""
    judge: str = ""
    """The exported judge's bundle id (``reaudit --judge``); empty: the spec's evaluator."""
    verdicts_from: str = "stored"
    """Which calls its labels come from: ``stored`` (the run store's), or ``fresh (REASON)`` for the
    fresh generation it made (``--fresh``, ``provider drift``); ``stored fresh:ID`` when it read an
    earlier re-audit's fresh generation."""
    probe: str = ""
    """The provider-drift probe: ``k/n`` disagreements, ``DRIFT`` when drift was found; empty: none."""


def history_rows(records: list[ReauditRecord]) -> list[HistoryRow]:
    """One row per re-audit, oldest first."""
    rows = []
    for r in records:
        ci = {m: getattr(r.metrics.ci, m, None) for m in SUMMARY_METRICS}
        rows.append(
            HistoryRow(
                id=r.id,
                date=r.created_at,
                set_version=r.set_version,
                status=r.status,
                failed_checks=[c.name for c in r.gate.failed],
                changes=list(r.changes) + ([r.set_change] if r.set_change else []),
                baseline_id=r.gate.baseline_id,
                values={m: metric_value(r.metrics, m) for m in SUMMARY_METRICS},
                intervals={
                    m: (iv.low, iv.high) if (iv := ci[m]) is not None else None for m in SUMMARY_METRICS
                },
                calls=r.stats.calls,
                prompt_hash=r.fingerprint.prompt_hash,
                model=r.fingerprint.model,
                memory_size=r.fingerprint.memory_size,
                judge=r.fingerprint.judge,
                verdicts_from=(
                    f"fresh ({r.fresh_reason})"
                    if r.fresh_reason
                    else (f"stored {r.generation}" if r.generation else "stored")
                ),
                probe=(
                    ""
                    if r.probe is None
                    else f"{r.probe.disagreements}/{r.probe.n}" + (" DRIFT" if r.probe.drift else "")
                ),
            )
        )
    return rows


def history_csv(rows: list[HistoryRow]) -> str:
    """The history as CSV: one line per re-audit; each metric with its interval bounds."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = ["id", "date", "set_version", "status", "failed_checks", "changes", "baseline_id"]
    for m in SUMMARY_METRICS:
        header += [m, f"{m}_low", f"{m}_high"]
    header += ["calls", "prompt_hash", "model", "memory_size", "judge", "verdicts_from", "probe"]
    w.writerow(header)
    for r in rows:
        line: list[Any] = [
            r.id,
            r.date,
            r.set_version,
            r.status,
            "; ".join(r.failed_checks),
            "; ".join(r.changes),
            r.baseline_id,
        ]
        for m in SUMMARY_METRICS:
            iv = r.intervals.get(m)
            line += [r.values.get(m), iv[0] if iv else None, iv[1] if iv else None]
        line += [r.calls, r.prompt_hash, r.model, r.memory_size, r.judge, r.verdicts_from, r.probe]
        w.writerow(["" if v is None else v for v in line])
    return buf.getvalue()


def history_plot(rows: list[HistoryRow], title: str, *, dpi: int = 110) -> bytes:
    """PNG of accuracy, F1 and kappa per re-audit with their intervals; changes marked, regressions in red."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    xs = list(range(1, len(rows) + 1))
    nan = float("nan")
    for metric, colour in zip(SUMMARY_METRICS, ("tab:blue", "tab:green", "tab:purple"), strict=True):
        ys = [r.values.get(metric) for r in rows]
        y = [nan if v is None else v for v in ys]
        lo = [
            v - iv[0] if (v is not None and iv) else 0.0
            for v, iv in zip(ys, (r.intervals.get(metric) for r in rows), strict=True)
        ]
        hi = [
            iv[1] - v if (v is not None and iv) else 0.0
            for v, iv in zip(ys, (r.intervals.get(metric) for r in rows), strict=True)
        ]
        ax.errorbar(xs, y, yerr=[lo, hi], marker="o", capsize=3, label=metric, color=colour)
    for x, r in zip(xs, rows, strict=True):
        if r.changes and x > 1:
            ax.axvline(x - 0.5, color="grey", linestyle=":", linewidth=1)
            ax.annotate(
                "; ".join(r.changes)[:60],
                (x - 0.5, 1.0),
                rotation=90,
                fontsize=7,
                va="top",
                ha="right",
                color="grey",
            )
        if r.status != "pass":
            ax.axvspan(x - 0.3, x + 0.3, color="tab:red", alpha=0.15)
    ax.set_xticks(xs, [f"{r.date[5:16]}\nv{r.set_version}" for r in rows], fontsize=7)
    ax.set_ylim(min(0.0, *(r.values.get("kappa") or 0.0 for r in rows)) - 0.05, 1.05)
    ax.set_ylabel("value [95% interval]")
    ax.set_title(f"{title}: re-audits (red: regression; dotted: fingerprint changed)")
    ax.legend(loc="lower left")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
