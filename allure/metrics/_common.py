"""Shared input checks and small helpers of the metric functions.

Every metric takes plain Python sequences (or numpy arrays) of integer labels and
returns plain Python values: a ``float`` or ``None`` when the metric is undefined
(for example precision with no predicted positives). Nothing returns ``NaN``, so
every result is JSON-able as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from allure.errors import AllureError

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

Average = Literal["binary", "macro"]
"""How per-class scores are combined.

- ``binary``: the score of the class ``pos_label`` alone (one-vs-rest).
- ``macro``: the unweighted mean over classes of the per-class scores; classes where the
  score is undefined (0/0) are left out of the mean, as scikit-learn does with
  ``zero_division=np.nan``.
"""


class MetricsError(AllureError):
    """Inputs to a metric are malformed (lengths differ, an unknown label, a probability outside [0, 1])."""


def as_labels(values: Sequence[Any] | NDArray[Any], *, field: str) -> IntArray:
    """Convert ``values`` to a 1-D integer array, refusing ``None`` and non-integers.

    Args:
        values: Labels, one per item.
        field: The argument name, used in the error message.

    Returns:
        A 1-D ``int64`` array.

    Raises:
        MetricsError: An entry is ``None``, not an integer, or the input is not 1-D.
    """
    seq = list(values)
    for i, v in enumerate(seq):
        if v is None:
            raise MetricsError(
                f"{field}[{i}] is None: this metric needs parsed labels only",
                where=f"argument {field!r}",
                fix="drop unparsed items first, or call allure.metrics.compute_metrics, which counts them",
            )
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise MetricsError(
                f"{field}[{i}] = {v!r} is not an integer label",
                where=f"argument {field!r}",
                fix="pass integer class labels such as 0 and 1",
            )
    return np.asarray(seq, dtype=np.int64).reshape(-1)


def check_same_length(**arrays: Sequence[Any] | NDArray[Any] | None) -> int:
    """Check that all given (non-``None``) sequences have the same length and return it.

    Raises:
        MetricsError: Two sequences differ in length.
    """
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{k}={v}" for k, v in lengths.items())
        raise MetricsError(
            f"inputs differ in length ({shown})",
            where="arguments " + ", ".join(repr(k) for k in lengths),
            fix="pass one entry per item in every sequence, in the same item order",
        )
    return next(iter(lengths.values()), 0)


def resolve_labels(
    labels: Sequence[int] | None, *arrays: IntArray, check: bool = True, field: str = "y_true/y_pred"
) -> list[int]:
    """The label set: ``labels`` when given (checked against the data), else the sorted union of the data.

    Raises:
        MetricsError: ``labels`` is empty or has duplicates, or the data hold a label not in ``labels``.
    """
    if labels is None:
        present: set[int] = set()
        for a in arrays:
            present.update(int(x) for x in np.unique(a))
        return sorted(present)
    out = [int(x) for x in labels]
    if not out or len(set(out)) != len(out):
        raise MetricsError(
            f"labels={list(labels)!r} must be a non-empty list of distinct labels",
            where="argument 'labels'",
            fix="pass e.g. labels=(0, 1)",
        )
    if check:
        known = set(out)
        for a in arrays:
            extra = sorted({int(x) for x in np.unique(a)} - known)
            if extra:
                raise MetricsError(
                    f"label(s) {extra} in {field} are not in labels={out}",
                    where=f"argument {field!r}",
                    fix=f"map labels to {out} before computing metrics, or pass labels that include {extra}",
                )
    return out


def safe_div(num: float, den: float) -> float | None:
    """``num / den`` as a float, or ``None`` when ``den`` is zero (the metric is undefined)."""
    if den == 0:
        return None
    return float(num) / float(den)


def mean_defined(values: Sequence[float | None]) -> float | None:
    """Mean of the defined (non-``None``) values, ``None`` if there are none."""
    defined = [v for v in values if v is not None]
    if not defined:
        return None
    return float(np.mean(defined))


def check_average(average: str) -> None:
    """Raise :class:`MetricsError` unless ``average`` is ``"binary"`` or ``"macro"``."""
    if average not in ("binary", "macro"):
        raise MetricsError(
            f"average={average!r} is not supported",
            where="argument 'average'",
            fix='pass average="binary" or average="macro"',
        )
