"""Compact text formatting of numbers and intervals for the markdown report and the CLI table."""

from __future__ import annotations

from allure.metrics import Interval, SplitMetrics
from allure.safe_text import markdown_cell

DASH = "–"
"""Shown for an undefined value."""


def num(x: float | None, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals, or a dash when undefined."""
    return DASH if x is None else f"{x:.{digits}f}"


def signed(x: float | None, digits: int = 2) -> str:
    """``x`` with an explicit sign (``+0.06``, ``-0.03``), or a dash when undefined."""
    return DASH if x is None else f"{x:+.{digits}f}"


def with_ci(x: float | None, ci: Interval | None, digits: int = 3) -> str:
    """``0.710 [0.650, 0.770]``; the interval is left out when undefined."""
    if x is None:
        return DASH
    if ci is None:
        return num(x, digits)
    return f"{num(x, digits)} [{num(ci.low, digits)}, {num(ci.high, digits)}]"


def metric_cells(m: SplitMetrics | None) -> list[str]:
    """Accuracy, F1, kappa and AUC (each with its interval), unparsed and n of one split."""
    if m is None:
        return [DASH] * 6
    auc = with_ci(m.auc, m.ci.auc)
    if m.auc is not None and m.auc_source == "hard_labels":
        auc += " (hard)"
    return [
        with_ci(m.accuracy, m.ci.accuracy),
        with_ci(m.f1, m.ci.f1),
        with_ci(m.kappa, m.ci.kappa),
        auc,
        str(m.n_unparsed),
        str(m.n_scored),
    ]


def md_cell(text: object) -> str:
    """Text made safe for a markdown table cell (:func:`allure.safe_text.markdown_cell`)."""
    return markdown_cell(text)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured markdown table as lines."""
    lines = ["| " + " | ".join(md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return lines
