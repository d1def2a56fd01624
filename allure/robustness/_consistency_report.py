"""The record and figures of a finished score consistency study (seed 002) from each arm's raw outputs: per pair
of prompts the self-scores and the text consistency TC of each side, each compared by Siegel-Tukey."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from allure.metrics import siegel_tukey, text_consistency
from allure.robustness._entail import Entail
from allure.robustness._reports import ConsistencyPair, ConsistencyReport
from allure.studies import StudyRecord, StudySource


class ConsistencyRecord(StudyRecord):
    """``study.json`` of a score consistency study: the shared record and its :class:`ConsistencyReport`."""

    kind: str = "consistency"
    consistency: ConsistencyReport
    """Per pair of prompts the K self-scores and TC, Siegel-Tukey, the flagged pairs."""


def score_number(text: str | None) -> float | None:
    """The number in ``text`` (a score the pattern matched), or ``None`` when it is not one."""
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _side(values: list[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _test(a: list[float], b: list[float], alpha: float) -> tuple[Any, bool]:
    if len(a) < 2 or len(b) < 2:
        return None, False
    res = siegel_tukey(a, b)
    return res, res.p_value < alpha


def consistency_report(
    study: StudyRecord,
    outputs: dict[str, list[str]],
    src: StudySource,
    head: ConsistencyReport,
    pairs: list[tuple[int, int, int, int]],
    entail: Entail,
) -> ConsistencyReport:
    """The report of a finished consistency study from each arm's raw outputs."""
    rx = re.compile(head.score_pattern)
    low, high = head.scale
    by_q: dict[int, list[str]] = {}
    for r in study.arms:
        by_q.setdefault(r.arm.rephrasing or 1, []).append(r.arm.name)
    out_of_scale = 0

    def answers(i: int, q: int) -> list[str]:
        return [outputs[name][i] for name in by_q[q]]

    def score(text: str) -> float | None:
        nonlocal out_of_scale
        m = rx.search(text)
        v = score_number(m.group(1)) if m else None
        if v is not None and not low <= v <= high:
            out_of_scale += 1
            return None
        return v

    tc = _text_consistency(pairs, answers, len(by_q[1]), entail)
    names = {v.q: v.name for v in head.prompts}
    out = []
    for a, qa, b, qb in pairs:
        sa, sb = [score(t) for t in answers(a, qa)], [score(t) for t in answers(b, qb)]
        st, sflag = _test(_side(sa), _side(sb), head.alpha)
        tt, tflag = _test(tc[(a, qa)], tc[(b, qb)], head.alpha)
        same = a == b
        out.append(
            ConsistencyPair(
                a=f"{src.items[a].id}@{names[qa]}" if same else src.items[a].id,
                b=f"{src.items[b].id}@{names[qb]}" if same else src.items[b].id,
                scores_a=sa,
                scores_b=sb,
                score_test=st,
                score_flagged=sflag,
                tc_a=tc[(a, qa)],
                tc_b=tc[(b, qb)],
                tc_test=tt,
                tc_flagged=tflag,
                task_a=src.items[a].task[:100],
                task_b=src.items[b].task[:100],
            )
        )
    report = head.model_copy(update={"pairs": out, "out_of_scale": out_of_scale})
    report.findings = _findings(report, out_of_scale)
    return report


def _text_consistency(
    pairs: list[tuple[int, int, int, int]],
    answers: Callable[[int, int], list[str]],
    k: int,
    entail: Entail,
) -> dict[tuple[int, int], list[float]]:
    """TC of each side (item, variant) of the pairs: how much each of its K answers entails the others."""
    sides = sorted({(i, q) for a, qa, b, qb in pairs for i, q in ((a, qa), (b, qb))})
    jobs = [
        (answers(i, q)[x], answers(i, q)[y]) for i, q in sides for x in range(k) for y in range(k) if x != y
    ]
    probs = iter(entail(jobs))
    tc: dict[tuple[int, int], list[float]] = {}
    for side in sides:
        m = np.zeros((k, k))
        for x in range(k):
            for y in range(k):
                if x != y:
                    m[x, y] = next(probs)
        tc[side] = [float(v) for v in text_consistency(m)]
    return tc


def _findings(report: ConsistencyReport, out_of_scale: int) -> list[str]:
    """Which pairs differ in the spread of their self-scores and of their TC; the scores left out."""
    head, out = report, report.pairs
    low, high = report.scale
    flagged = [p for p in out if p.score_flagged]
    tflagged = [p for p in out if p.tc_flagged]
    findings = [
        f"{len(flagged)} of {len(out)} pair(s) differ in the spread of their self-scores "
        f"(Siegel-Tukey, alpha = {head.alpha:g}, K = {head.samples})"
        + (f": {', '.join(f'{p.a} ~ {p.b}' for p in flagged[:10])}" if flagged else ""),
        f"{len(tflagged)} of {len(out)} pair(s) differ in the spread of their text consistency TC "
        f"({head.entailment})"
        + (f": {', '.join(f'{p.a} ~ {p.b}' for p in tflagged[:10])}" if tflagged else ""),
    ]
    if out_of_scale:
        findings.append(f"{out_of_scale} self-score(s) outside the scale {low:g}-{high:g} left out")
    return findings
