"""``report.md``'s pairwise sections: position consistency and bias of each pass (from the swapped
order), and the position-debiased verdicts beside the raw ones."""

from __future__ import annotations

from allure.report._format import md_table, num, signed
from allure.report._model import PositionConsistency, ReportData


def positions_section(data: ReportData) -> list[str]:
    """Position consistency of a pairwise run per iteration, and per problem type for the last."""
    positions = [(it.iteration, it.position) for it in data.iterations if it.position is not None]
    if not positions:
        return []
    out = ["## Position consistency (pairwise, responses swapped)", ""]
    header = [
        "iter",
        "items",
        "consistent",
        "consistency",
        "first position chosen",
        "position bias",
        "from",
    ]
    out += md_table(header, [[str(i), *_position_cells(p), p.source] for i, p in positions])
    out.append("")
    last_i, last_p = positions[-1]
    if last_p.by_problem_type:
        out += [f"Per problem type (iteration {last_i}):", ""]
        out += md_table(
            [
                "problem type",
                "items",
                "consistent",
                "consistency",
                "first position chosen",
                "position bias",
            ],
            [[g, *_position_cells(p)] for g, p in last_p.by_problem_type.items()],
        )
        out.append("")
    return out


def debiased_section(data: ReportData) -> list[str]:
    """The raw and the position-debiased verdicts' accuracy per iteration, and what stayed undecided."""
    debiased = [(it.iteration, it.debias) for it in data.iterations if it.debias is not None]
    if not debiased:
        return []
    out = ["## Position-debiased verdicts (pairwise, both orders)", ""]
    rows = []
    for i, d in debiased:
        rule = d.used if d.used == d.mode else f"{d.used} (asked: {d.mode}; no logprobs)"
        for name, acc in (("raw (original order)", d.raw), (f"debiased: {rule}", d.debiased)):
            rows.append(
                [str(i), name, str(acc.n), str(acc.decided), num(acc.accuracy_decided)]
                + [num(acc.undecided_share), num(acc.accuracy_all)]
            )
    out += md_table(
        [
            "iter",
            "verdicts",
            "items",
            "decided",
            "accuracy (decided)",
            "undecided",
            "accuracy (undecided wrong)",
        ],
        rows,
    )
    return [
        *out,
        "",
        "Undecided: the two orders disagree (inconsistent) or one has no label; never coerced to a label. "
        + "; ".join(
            f"iteration {i}: {d.inconsistent} inconsistent, {d.unparsed} without a label in an order"
            + (
                f", {d.prob_fallback} decided by the consistent rule (no label probabilities)"
                if d.prob_fallback
                else ""
            )
            for i, d in debiased
        ),
        "",
    ]


def _position_cells(p: PositionConsistency) -> list[str]:
    return [
        str(p.n),
        str(p.consistent),
        num(p.consistency),
        num(p.first_position_rate),
        signed(p.position_bias),
    ]
