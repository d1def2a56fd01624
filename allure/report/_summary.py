"""The one-line verdict on whether ICL examples helped, and the rows the CLI prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure.report._format import DASH, num, signed, with_ci

if TYPE_CHECKING:
    from allure.report._model import ReportData


def helped_sentence(data: ReportData, metric: str = "accuracy") -> str | None:
    """A plain sentence on whether ICL examples helped on the held-out split.

    Examples: ``ICL examples helped on the held-out split: accuracy +0.06 [95% CI 0.02, 0.10].``,
    ``ICL examples did not help on the held-out split: ...``,
    ``Unclear whether ICL examples helped on the held-out split: ... (the interval includes 0).``

    Args:
        data: The report.
        metric: Which entry of ``data.helped`` to state (``accuracy`` or ``f1``).

    Returns:
        The sentence, or ``None`` when the run has no first-vs-last comparison.
    """
    if not data.helped or metric not in data.helped:
        return None
    r = data.helped[metric]
    name = "F1" if metric == "f1" else metric
    if r.delta is None or r.ci_low is None or r.ci_high is None:
        return (
            f"Unclear whether ICL examples helped on the held-out split: {name} could not be compared "
            f"(undefined on {r.n} scored items)."
        )
    figure = f"{name} {signed(r.delta)} [95% CI {num(r.ci_low, 2)}, {num(r.ci_high, 2)}]"
    if r.helped == "yes":
        return f"ICL examples helped on the held-out split: {figure}."
    if r.helped == "no":
        return f"ICL examples did not help on the held-out split, they made it worse: {figure}."
    return f"Unclear whether ICL examples helped on the held-out split: {figure} (the interval includes 0)."


SUMMARY_HEADER = [
    "iter",
    "memory",
    "held-out acc",
    "held-out F1",
    "held-out kappa",
    "held-out AUC",
    "audit acc",
    "unparsed",
    "calls",
    "cache hits",
]
"""Column names of :func:`summary_table`."""


def summary_table(data: ReportData) -> list[list[str]]:
    """Rows for a terminal table: the header first, then one row per iteration.

    Held-out accuracy carries its 95% interval; ``unparsed`` is held-out + audit.
    """
    rows = [list(SUMMARY_HEADER)]
    for it in data.iterations:
        h = it.splits.get("heldout")
        a = it.splits.get("audit")
        unparsed = sum(m.n_unparsed for m in (h, a) if m is not None)
        rows.append(
            [
                str(it.iteration),
                str(it.memory_size),
                with_ci(h.accuracy, h.ci.accuracy) if h else DASH,
                num(h.f1) if h else DASH,
                num(h.kappa) if h else DASH,
                num(h.auc) if h else DASH,
                num(a.accuracy) if a else DASH,
                str(unparsed),
                str(it.calls),
                str(it.cache_hits),
            ]
        )
    return rows
