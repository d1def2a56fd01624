"""The read-out's label-probability features of a pass, read once (issue 41 item 7).

A cross-fitted ``readout = "auto"`` fits six read-outs a pass (one on every fit item, one per fold on
the other folds), tries ``z_reversed`` beside ``z`` when the reversed question was asked, and applies
each: reading every verdict's features again for each fit and application cost more than the fits.
:func:`feature_table` reads them once, as arrays over the pass's items (one pass over the verdicts,
the log-odds computed in numpy); the fits and applications take their rows from it
(:meth:`FeatureTable.matrix`). The definitions are those of :mod:`allure.passes.readout._learned`:

- two labels: ``z`` (:func:`allure.metrics.log_odds` of ``prob_positive``, else the log-odds of the
  label probabilities, else the parsed label as +-2; 0 without a verdict), ``z_swap`` (the swapped
  order's, sign turned: read back to the main order's labels), ``z_reversed`` (the reversed
  question's, read back);
- more labels: ``lp[l]`` (:func:`allure.metrics.label_log_probs`) and ``lp_swap[l]`` (the swapped
  order's, ``first`` <-> ``second``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from allure.labels import Label
from allure.metrics import FALLBACK_MARGIN, Z_LIMIT, label_log_probs, log_odds
from allure.models import Item, Verdict


def verdict_z(verdict: Verdict | None, positive: Label, labels: Sequence[Label]) -> float:
    """The label log-odds of one verdict (see the module): from ``prob_positive``, else from its label
    probabilities, else its parsed label as +-2 (0: unparsed or no verdict)."""
    if verdict is None:
        return 0.0
    z = log_odds(verdict.prob_positive)
    if z is not None:
        return z
    lp = label_log_probs(verdict.label_probs, labels, verdict.label)
    pos = list(labels).index(positive)
    return lp[pos] - lp[1 - pos]


def verdict_lp(verdict: Verdict | None, labels: Sequence[Label]) -> list[float]:
    """``log P(l)`` per label of one verdict (:func:`allure.metrics.label_log_probs`)."""
    return label_log_probs(
        None if verdict is None else verdict.label_probs, labels, None if verdict is None else verdict.label
    )


def z_column(verdicts: Sequence[Verdict | None], positive: Label, labels: Sequence[Label]) -> np.ndarray:
    """:func:`verdict_z` of each verdict, vectorised over those with ``prob_positive``."""
    p = np.fromiter(
        (np.nan if v is None or v.prob_positive is None else v.prob_positive for v in verdicts),
        dtype=np.float64,
        count=len(verdicts),
    )
    eps = math.exp(-Z_LIMIT)
    q = np.clip(p, eps, 1.0 - eps)
    z = np.clip(np.log(q) - np.log1p(-q), -Z_LIMIT, Z_LIMIT)
    for i in np.flatnonzero(np.isnan(p)).tolist():
        z[i] = verdict_z(verdicts[i], positive, labels)
    return z


def lp_columns(verdicts: Sequence[Verdict | None], labels: Sequence[Label]) -> np.ndarray:
    """``(n, K)``: :func:`verdict_lp` of each verdict, vectorised (the parsed-label fallback per row)."""
    k = len(labels)
    keys = [str(lab) for lab in labels]
    rows = np.array(
        [
            [max(float(probs.get(key, 0.0)), 0.0) for key in keys]
            if v is not None and (probs := v.label_probs)
            else [0.0] * k
            for v in verdicts
        ],
        dtype=np.float64,
    ).reshape(len(verdicts), k)
    total = rows.sum(axis=1)
    for i in np.flatnonzero(
        total <= 0
    ).tolist():  # no probabilities: the softmax of the margin on the parsed label
        v = verdicts[i]
        parsed = None if v is None else v.label
        rows[i] = [math.exp(FALLBACK_MARGIN) if lab == parsed else 1.0 for lab in labels]
    total = rows.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        logs = np.log(rows / total)
    return np.where(rows > 0, np.maximum(-Z_LIMIT, logs), -Z_LIMIT)


@dataclass(frozen=True)
class FeatureTable:
    """Every item's label-probability features in one pass (:func:`feature_table`)."""

    rows: dict[str, int]
    """Item id -> its row."""
    cols: dict[str, np.ndarray]
    """Feature name -> its value per row."""

    def matrix(
        self, items: Sequence[Item], names: Sequence[str], *, ids: Sequence[str] | None = None
    ) -> np.ndarray:
        """``(len(items), len(names))``: the features ``names`` of ``items`` (``ids``: their ids, when
        the caller has them: not read again).

        Raises:
            KeyError: An item or a feature it does not hold.
        """
        ids = [it.id for it in items] if ids is None else ids
        idx = np.fromiter(map(self.rows.__getitem__, ids), dtype=np.int64, count=len(ids))
        return np.column_stack([self.cols[f][idx] for f in names]) if names else np.zeros((len(items), 0))


def feature_table(
    items: Sequence[Item],
    verdicts: Mapping[str, Verdict],
    *,
    labels: Sequence[Label],
    positive: Label | None,
    swapped: Mapping[str, Verdict] | None = None,
    back: Mapping[str, Verdict] | None = None,
) -> FeatureTable:
    """The features of ``items`` (see the module): those of the main order, of the swapped order when
    ``swapped`` is given, of the reversed question (two labels) when ``back`` is given."""
    cols: dict[str, np.ndarray] = {}
    main = [verdicts.get(it.id) for it in items]
    if len(labels) == 2:
        pos = positive if positive is not None else labels[0]
        cols["z"] = z_column(main, pos, labels)
        if swapped is not None:  # P(back(pos)) of the swapped order is its P(neg): the sign turns
            cols["z_swap"] = -z_column([swapped.get(it.id) for it in items], pos, labels)
        if back is not None:
            cols["z_reversed"] = z_column([back.get(it.id) for it in items], pos, labels)
    else:
        lp = lp_columns(main, labels)
        cols.update({f"lp[{lab}]": lp[:, j] for j, lab in enumerate(labels)})
        if swapped is not None:
            order = [{0: 1, 1: 0}.get(j, j) for j in range(len(labels))]
            lp = lp_columns([swapped.get(it.id) for it in items], labels)
            cols.update({f"lp_swap[{lab}]": lp[:, order[j]] for j, lab in enumerate(labels)})
    return FeatureTable({it.id: j for j, it in enumerate(items)}, cols)
