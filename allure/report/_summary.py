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
"""Column names of :func:`summary_table` (a run that holds nothing out names ``all`` instead of ``held-out``)."""


def nothing_held_out(data: ReportData) -> bool:
    """True when no iteration has a held-out item (``heldout_fraction = 0``: a one-pass audit of a judge)."""
    return bool(data.iterations) and all(
        (it.splits.get("heldout") is None or it.splits["heldout"].n == 0) for it in data.iterations
    )


def headline(data: ReportData) -> str | None:
    """The metrics of the last pass over all items when nothing is held out, as one sentence.

    Example: ``All 100 items (nothing held out), last pass: accuracy 0.81 [0.73, 0.88], F1 0.72,
    kappa 0.55, AUC 0.80; 0 unparsed.`` ``None`` when a held-out split exists.
    """
    if not nothing_held_out(data):
        return None
    last = data.iterations[-1]
    m = last.splits.get("all") or last.splits.get("audit")
    if m is None:
        return None
    parts = [f"accuracy {with_ci(m.accuracy, m.ci.accuracy)}"]
    parts += [f"{name} {num(v)}" for name, v in (("F1", m.f1), ("macro F1", m.f1_macro), ("kappa", m.kappa))]
    if m.auc is not None:
        parts.append(f"AUC {num(m.auc)}")
    return (
        f"All {m.n} items (nothing held out), pass {last.iteration}: {', '.join(parts)}; "
        f"{m.n_unparsed} unparsed, {m.n_no_reference} without a reference."
    )


def summary_table(data: ReportData) -> list[list[str]]:
    """Rows for a terminal table: the header first, then one row per iteration.

    Held-out accuracy carries its 95% interval; ``unparsed`` is held-out + audit. When nothing is
    held out, the metric columns are over all items (headed ``all``).
    """
    everything = nothing_held_out(data)
    header = [h.replace("held-out", "all") for h in SUMMARY_HEADER] if everything else list(SUMMARY_HEADER)
    rows = [header]
    for it in data.iterations:
        a = it.splits.get("audit")
        h = (it.splits.get("all") or a) if everything else it.splits.get("heldout")
        unparsed = (
            (h.n_unparsed if h else 0)
            if everything
            else sum(m.n_unparsed for m in (it.splits.get("heldout"), a) if m is not None)
        )
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
