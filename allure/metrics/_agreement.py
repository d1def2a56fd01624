"""Agreement between two labellings of the same items, overall and per group.

``rate = #{k : a[k] == b[k]} / n`` over items where both labels are known; items where either
is ``None`` are counted in ``n_missing``. Used in replay mode to compare the recorded
evaluator's labels (e.g. GPT-4's in CogEval) with the reference labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from allure.metrics._common import check_same_length, safe_div


class AgreementRow(TypedDict):
    """Agreement within one group (``group`` is ``""`` for the overall row)."""

    group: str
    """The group's name."""
    n: int
    """Items where both labels are known."""
    agree: int
    """Items where the labels are equal."""
    rate: float | None
    """``agree / n``; ``None`` when ``n == 0``."""


class Agreement(TypedDict):
    """Agreement overall and per problem type and generator."""

    overall: AgreementRow
    """All items."""
    n_missing: int
    """Items left out because a label was ``None``."""
    by_problem_type: list[AgreementRow] | None
    """Per problem type, lowest rate first; ``None`` when not given."""
    by_generator: list[AgreementRow] | None
    """Per generator, lowest rate first; ``None`` when not given."""


def _rows(a: Sequence[int | None], b: Sequence[int | None], groups: Sequence[str]) -> list[AgreementRow]:
    acc: dict[str, list[int]] = {}
    for x, y, g in zip(a, b, groups, strict=True):
        if x is None or y is None:
            continue
        row = acc.setdefault(str(g), [0, 0])
        row[0] += 1
        row[1] += int(int(x) == int(y))
    out: list[AgreementRow] = [
        {"group": g, "n": n, "agree": k, "rate": safe_div(k, n)} for g, (n, k) in acc.items()
    ]
    out.sort(key=lambda r: (r["rate"] if r["rate"] is not None else 2.0, r["group"]))
    return out


def agreement(
    labels_a: Sequence[int | None],
    labels_b: Sequence[int | None],
    *,
    problem_types: Sequence[str] | None = None,
    generators: Sequence[str] | None = None,
) -> Agreement:
    """Agreement of ``labels_a`` with ``labels_b`` overall and per group.

    Raises:
        MetricsError: Lengths differ.
    """
    check_same_length(
        labels_a=labels_a, labels_b=labels_b, problem_types=problem_types, generators=generators
    )
    overall = _rows(labels_a, labels_b, [""] * len(labels_a))
    n_known = sum(1 for x, y in zip(labels_a, labels_b, strict=True) if x is not None and y is not None)
    return {
        "overall": overall[0] if overall else {"group": "", "n": 0, "agree": 0, "rate": None},
        "n_missing": len(labels_a) - n_known,
        "by_problem_type": None if problem_types is None else _rows(labels_a, labels_b, problem_types),
        "by_generator": None if generators is None else _rows(labels_a, labels_b, generators),
    }
