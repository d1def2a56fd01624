"""Errors per group (problem type, generator): where the evaluator goes wrong.

For each group ``g``: ``n`` items with a known reference, ``n_unparsed`` of them without a parsed
label, ``errors`` = parsed labels that differ from the reference,
``error_rate = errors / (n - n_unparsed)`` (``None`` when nothing parsed) and
``error_rate_all = (errors + n_unparsed) / n`` (unparsed counted as wrong).
Rows are sorted by ``errors + n_unparsed`` (descending), then by group name.
Cf. ALLURE (Hasanbeig et al., 2023), Section 4.2: errors per problem type under cluster ablation.
"""

from __future__ import annotations

from collections.abc import Sequence

from allure.metrics._common import Label, check_same_length
from allure.metrics._model import GroupErrors


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def errors_by_group(
    y_true: Sequence[Label | None],
    y_pred: Sequence[Label | None],
    groups: Sequence[str],
) -> list[GroupErrors]:
    """Count errors per group; items whose reference is ``None`` are skipped.

    Args:
        y_true: Reference labels (``None``: the gold check could not decide).
        y_pred: Predicted labels (``None``: unparsed or failed call).
        groups: The group of each item.

    Returns:
        One :class:`GroupErrors` per group that has at least one scored item, worst first.

    Raises:
        MetricsError: Lengths differ.
    """
    check_same_length(y_true=y_true, y_pred=y_pred, groups=groups)
    acc: dict[str, list[int]] = {}
    for t, p, g in zip(y_true, y_pred, groups, strict=True):
        if t is None:
            continue
        row = acc.setdefault(str(g), [0, 0, 0])  # n, unparsed, errors
        row[0] += 1
        if p is None:
            row[1] += 1
        elif p != t:
            row[2] += 1
    out = [
        GroupErrors(
            group=g, n=n, n_unparsed=u, errors=e, error_rate=_rate(e, n - u), error_rate_all=_rate(e + u, n)
        )
        for g, (n, u, e) in acc.items()
    ]
    out.sort(key=lambda r: (-(r.errors + r.n_unparsed), r.group))
    return out
