"""The one-line verdict on whether ICL examples helped, and the rows the CLI prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure.metrics import OBJECTIVE_NAMES
from allure.report._format import DASH, num, signed, with_ci

if TYPE_CHECKING:
    from allure.metrics import IclEffect
    from allure.report._model import ReportData


def _effect_figures(e: IclEffect) -> str:
    o = e.objective
    name = OBJECTIVE_NAMES.get(o.objective, o.objective)
    if o.delta is None or o.ci_low is None or o.ci_high is None:
        return f"{name} undefined on {o.n} items"
    acc = e.accuracy
    accuracy = (
        f"; accuracy {signed(acc.delta)} (McNemar p = {e.mcnemar.p_value:.3g})"
        if acc.delta is not None and o.objective != "accuracy"
        else ""
    )
    p = "-" if o.p_value is None else f"{o.p_value:.3g}"
    return (
        f"{name} {num(o.value_a)} -> {num(o.value_b)}, {signed(o.delta)} [95% CI {num(o.ci_low, 2)}, "
        f"{num(o.ci_high, 2)}], permutation p = {p}, n = {o.n}{accuracy}"
    )


def memory_tried(data: ReportData) -> bool:
    """True when some pass other than the zero-shot one was evaluated with examples in memory (only
    then can the run say whether ICL examples helped)."""
    return any(it.iteration != data.zero_shot_iteration and it.memory_size > 0 for it in data.iterations)


def effect_sentences(data: ReportData) -> list[str]:
    """The held-out claim of a run with a guard: which version the loop kept, whether it helped by
    the objective, and the label-prior warning. Empty for a run without a zero-shot pass."""
    if data.zero_shot_iteration is None or data.active_iteration is None:
        return []
    out = []
    if data.active_iteration == data.zero_shot_iteration and not memory_tried(data):
        why = f" (it stopped: {data.stop_reason})" if data.stop_reason else ""
        out.append(f"The run tried no memory version: it evaluated the zero-shot judge only{why}.")
    elif data.active_iteration == data.zero_shot_iteration:
        where = (
            "the audit split out of fold"
            if data.decision_data and "cross-fitted" in data.decision_data
            else "the dev split"
        )
        out.append(
            f"The loop kept the zero-shot judge: no memory version beat it on {where} (ICL examples did not help)."
        )
    elif data.effect is not None:
        o = data.effect.objective
        figures = _effect_figures(data.effect)
        if o.helped == "yes":
            out.append(f"ICL examples helped on the held-out split: {figures}.")
        elif o.helped == "no":
            out.append(f"ICL examples made the judge worse on the held-out split: {figures}.")
        elif o.delta is not None and o.delta < 0:
            out.append(
                f"ICL examples did not help on the held-out split: the judge scored worse, not significantly "
                f"at n = {o.n}: {figures}."
            )
        else:
            disagree = o.disagreement()
            out.append(
                f"Unclear whether ICL examples helped on the held-out split (not significant at n = {o.n}): "
                f"{figures}" + (f"; {disagree}." if disagree else ".")
            )
        if data.effect.warning:
            out.append(f"Warning: {data.effect.warning}.")
    if data.primary is not None:
        o = data.primary.objective
        verdict = f"not significant at alpha 0.05 (n = {o.n})"
        if o.p_value is not None and o.p_value < 0.05 and o.delta:
            verdict = "significantly better" if o.delta > 0 else "significantly worse"
        disagree = o.disagreement()
        if disagree and o.p_value is not None and o.p_value >= 0.05:
            verdict += f": {disagree}"
        out.append(
            f"Primary comparison (pre-registered): the loop's judge (pass {data.active_iteration}) against the "
            f"zero-shot judge's parsed labels on the held-out split: {_effect_figures(data.primary)}; {verdict}."
        )
    if data.refused_effect is not None:
        out.append(
            f"The refused memory version (pass {data.iterations[-1].iteration if data.iterations else '?'}) "
            f"on the held-out split, for the record: {_effect_figures(data.refused_effect)}."
        )
        if data.refused_effect.warning:
            out.append(f"Warning: {data.refused_effect.warning}.")
    return out


def helped_sentence(data: ReportData, metric: str = "accuracy") -> str | None:
    """A plain sentence on whether ICL examples helped on the held-out split.

    Examples: ``ICL examples helped on the held-out split: accuracy +0.06 [95% CI 0.02, 0.10].``,
    ``ICL examples did not help on the held-out split: ...``,
    ``Unclear whether ICL examples helped on the held-out split: ... (the interval includes 0).``

    Args:
        data: The report.
        metric: Which entry of ``data.helped`` to state (``accuracy`` or ``f1``).

    A run with a zero-shot pass (every run since the guard) states :func:`effect_sentences` instead
    (by the loop's objective, active version against zero-shot), joined into one paragraph.

    Returns:
        The sentence, or ``None`` when the run has no first-vs-last comparison.
    """
    if metric == "accuracy" and data.zero_shot_iteration is not None and data.active_iteration is not None:
        return " ".join(effect_sentences(data)) or None
    if metric != "accuracy" and data.zero_shot_iteration is not None:
        return None
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
