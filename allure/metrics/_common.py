"""Input checks shared by the metrics: lengths, the label set, and labels turned into codes.

Every metric works on *codes*: the index of a label in the label set (``labels[code]``), with
``-1`` for a missing label (an unknown reference or an unparsed verdict). So ``0/1``,
``"A"/"B"``, ``"pass"/"fail"`` and a ``1..5`` rubric scale go through the same formulas, and the
label set's order is the order of the confusion matrix (and of an ordinal scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from allure.errors import AllureError

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

Label = int | str
"""A class label: an integer (``0``/``1``, a rubric score) or a word (``"pass"``, ``"A"``)."""

MISSING = -1
"""The code of a missing label (no reference, or an unparsed verdict)."""


class MetricsError(AllureError):
    """Inputs to a metric are malformed (lengths differ, an unknown label, a probability outside [0, 1])."""


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


def check_labels(labels: Sequence[Label]) -> list[Label]:
    """The label set as a list: non-empty, distinct, each an ``int`` or a ``str``.

    Raises:
        MetricsError: ``labels`` is empty, has duplicates, or holds something else.
    """
    out = [int(x) if isinstance(x, np.integer) else x for x in labels]
    bad = [x for x in out if isinstance(x, bool) or not isinstance(x, int | str)]
    if not out or bad or len(set(out)) != len(out):
        raise MetricsError(
            f"labels={list(labels)!r} must be a non-empty list of distinct labels (integers or strings)",
            where="argument 'labels'",
            fix="pass the spec's label set, e.g. labels=(0, 1) or labels=('fail', 'pass')",
        )
    return out


def label_set(labels: Sequence[Label] | None, *columns: Sequence[Label | None]) -> list[Label]:
    """``labels`` checked, or (when ``None``) the labels of ``columns`` in order of first appearance."""
    if labels is not None:
        return check_labels(labels)
    seen = dict.fromkeys(v for col in columns for v in col if v is not None)
    return check_labels(list(seen)) if seen else []


def position(label: Label, labels: list[Label], *, field: str = "pos_label") -> int:
    """The code of ``label`` in ``labels``.

    Raises:
        MetricsError: ``label`` is not in ``labels``.
    """
    if isinstance(label, np.integer):
        label = int(label)
    for i, lab in enumerate(labels):
        if type(lab) is type(label) and lab == label:
            return i
    raise MetricsError(
        f"{field}={label!r} is not in labels={labels!r}",
        where=f"argument {field!r}",
        fix=f"pass a {field} that is one of labels",
    )


def encode(values: Sequence[Label | None], labels: list[Label], *, field: str) -> IntArray:
    """The code of each value in ``labels``; ``None`` becomes :data:`MISSING`.

    ``1`` and ``"1"`` are different labels: a value matches a label of the same type only.

    Raises:
        MetricsError: A value is not ``None`` and not in ``labels``.
    """
    lookup: dict[tuple[type, Any], int] = {(type(lab), lab): i for i, lab in enumerate(labels)}
    lookup[(type(None), None)] = MISSING
    try:  # the common case, at C speed: every value a label of its own type, or None
        keys = zip(map(type, values), values, strict=True)
        return np.fromiter(map(lookup.__getitem__, keys), dtype=np.int64, count=len(values))
    except (KeyError, TypeError):
        pass  # numpy integers, or a value not in labels: the loop below says which
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if v is None:
            out[i] = MISSING
            continue
        key = (int, int(v)) if isinstance(v, np.integer) else (type(v), v)
        code = lookup.get(key)
        if code is None:
            fix = f"map labels to {labels!r} before computing metrics (None for a missing label)"
            raise MetricsError(
                f"{field}[{i}] = {v!r} is not in labels={labels!r}", where=f"argument {field!r}", fix=fix
            )
        out[i] = code
    return out


def optional(x: float) -> float | None:
    """``x`` as a float, or ``None`` when it is NaN or infinite (an undefined metric)."""
    return float(x) if np.isfinite(x) else None
