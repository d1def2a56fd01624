"""A learned read-out of the judge's verdicts: labelled examples as data (METHODS.md section 13).

Contextual, prior and offset calibration move the decision boundary; they cannot turn a score that
ranks items backwards (AUC < 0.5) nor combine several scores. A read-out learned from labelled
audit items can (Gundem et al. 2025, "Supervised calibration", arXiv 2505.23783):

- features of item i: ``z_i = log P(pos) - log P(neg)`` from the judge's label probabilities
  (:func:`log_odds`); beyond two labels, the judge's log-probability of each label ``l``,
  normalised over the label set (:func:`label_log_probs`); and the memory vote ``v_i = sum_j s_ij [y_j = pos] / sum_j s_ij`` over the
  ``k`` nearest approved examples (cosine similarity, the item's own example never counted:
  :func:`memory_vote`); never the item's reference;
- :func:`fit_readout`: class-weighted (``n / (K n_y)``, the balanced-accuracy counterpart of the
  loss) L2 logistic regression (multinomial beyond two labels: one coefficient row per label), its ``C`` chosen by stratified k-fold cross-validation on the fit
  items by the loop's objective; threshold 0.5 on the class-weighted model;
- :func:`knn_labels`: kNN prompting (Xu et al., ICLR 2023): the majority label of the ``k`` nearest
  labelled items in the space of the judge's label log-probabilities.

Zero-shot is the read-out ``w = (1, 0, ...)``, ``b = 0`` on ``z``: a caller keeps it as candidate 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
from pydantic import BaseModel, ConfigDict

from allure.metrics._common import Label, MetricsError, optional
from allure.metrics._logistic import (
    balanced_weights,
    fit_binary,
    fit_multinomial,
    one_blas_thread,
    stratified_test_folds,
)
from allure.metrics._model import Objective
from allure.metrics._objective import objective_rows

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
"""The inverse regularisation strengths cross-validation chooses from (smallest wins a tie)."""

Z_LIMIT = 12.0
"""Log-odds are clipped to ``[-Z_LIMIT, Z_LIMIT]`` (a probability of exactly 0 or 1)."""

MIN_PER_LABEL = 2
"""A read-out is fitted only when every label has at least this many fit items."""


def log_odds(p: float | None) -> float | None:
    """``log p - log (1 - p)`` of ``P(positive)``, clipped to ``[-Z_LIMIT, Z_LIMIT]``; ``None`` stays."""
    if p is None or math.isnan(p):
        return None
    eps = math.exp(-Z_LIMIT)
    q = min(max(float(p), eps), 1.0 - eps)
    return max(-Z_LIMIT, min(Z_LIMIT, math.log(q) - math.log1p(-q)))


FALLBACK_MARGIN = 2.0
"""A verdict without label probabilities reads as the softmax of this margin on its parsed label:
``z = +-2`` for two labels, ``log P(parsed) - log P(other) = 2`` for every other label beyond two."""


def label_log_probs(
    probs: Mapping[str, float] | None, labels: Sequence[Label], parsed: Label | None
) -> list[float]:
    """``log P(l)`` per label of ``labels`` (in order), normalised over the label set, each clipped to
    ``[-Z_LIMIT, 0]``.

    Args:
        probs: The verdict's label probabilities (label string -> probability), if any.
        labels: The label set.
        parsed: The verdict's parsed label: without probabilities (or with all zero) the row is the
            softmax of :data:`FALLBACK_MARGIN` on it, the uniform row when it is ``None`` too.
    """
    row = [max(float(probs.get(str(lab), 0.0)), 0.0) for lab in labels] if probs else []
    if not row or sum(row) <= 0:
        row = [math.exp(FALLBACK_MARGIN) if lab == parsed else 1.0 for lab in labels]
    total = sum(row)
    return [max(-Z_LIMIT, math.log(p / total)) if p > 0 else -Z_LIMIT for p in row]


def memory_vote(
    queries: np.ndarray,
    examples: np.ndarray,
    example_labels: Sequence[Label],
    positive: Label,
    *,
    k: int = 8,
    exclude: Sequence[set[int]] | None = None,
) -> list[float]:
    """The similarity-weighted share of ``positive`` among each query's ``k`` nearest examples.

    Args:
        queries: ``(n, d)`` embeddings of the items (any scale: rows are normalised here).
        examples: ``(m, d)`` embeddings of the approved examples.
        example_labels: Each example's (corrected) label.
        positive: The positive label.
        k: Neighbours that vote.
        exclude: Per query, example rows that must not vote (the item's own examples).

    Returns:
        ``v_i`` per query; 0.5 when no example with a positive similarity is left.
    """
    if len(example_labels) != len(examples):
        raise MetricsError(
            f"{len(examples)} example rows but {len(example_labels)} labels",
            where="memory_vote",
            fix="pass one label per example row",
        )
    if len(examples) == 0:
        return [0.5] * len(queries)
    q = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    e = examples / np.maximum(np.linalg.norm(examples, axis=1, keepdims=True), 1e-12)
    sims = q @ e.T
    if exclude is not None:
        for i, own in enumerate(exclude):
            if own:
                sims[i, list(own)] = -np.inf
    is_pos = np.array([lab == positive for lab in example_labels], dtype=np.float64)
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]  # each row as its own stable argsort
    w = np.clip(np.take_along_axis(sims, top, axis=1), 0.0, None)
    w[~np.isfinite(w)] = 0.0
    total = w.sum(axis=1)
    votes = (w * is_pos[top]).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total <= 0, 0.5, votes / total).tolist()


TIE = 1e-9
"""Log-odds by which a read-out must prefer a label to give it. Fitted on features that cannot tell
the items apart, its weights come out as rounding noise (about 1e-13) whose sign, different in
each fold's fit, would label whole folds one way or the other: out of fold that looks like a gain
the read-out does not have (the items of a fold are not exchangeable with the others')."""


class FittedReadout(BaseModel):
    """A fitted read-out: what it reads, its coefficients, and the evidence it was chosen on."""

    model_config = ConfigDict(frozen=True)

    features: tuple[str, ...]
    """Feature names, in column order (``z``: the label log-odds; ``lp[l]``: the log-probability of
    label ``l``; ``z_swap``, ``lp_swap[l]``: the same of a pair's swapped order, read back to the main
    order's labels; ``vote``: the memory vote)."""
    labels: tuple[str, ...]
    """The classes, as strings, in the order of the coefficient rows (sklearn's ``classes_``)."""
    coef: list[list[float]]
    """One row per class (one row for two labels: the weight of ``labels[1]``)."""
    intercept: list[float]
    """The intercepts, as ``coef``."""
    C: float
    """The inverse L2 strength cross-validation chose."""
    cv_score: float | None
    """The objective of the chosen ``C``'s out-of-fold predictions on the fit items."""
    cv_folds: int
    """Folds of the stratified cross-validation."""
    objective: str
    """The objective cross-validation maximised."""
    n: int
    """Fit items."""
    n_per_label: dict[str, int]
    """Fit items per reference label."""
    fitted_at: str
    """When it was fitted (UTC, ISO 8601)."""

    def _scores(self, x: np.ndarray) -> np.ndarray:
        w = np.asarray(self.coef, dtype=np.float64)
        return np.asarray(x, dtype=np.float64).reshape(len(x), w.shape[1]) @ w.T + np.asarray(
            self.intercept, dtype=np.float64
        )

    def predict_codes(self, x: np.ndarray) -> np.ndarray:
        """The class of each row of ``x`` as its index in :attr:`labels` (columns as :attr:`features`):
        ``labels[1]`` where the score is above 0 for two labels, the highest score's beyond."""
        return self.decide(x)[0]

    def decide(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict_codes` of each row of ``x``, and whether the read-out prefers that class by
        more than :data:`TIE` in log-odds (``False``: a tie, as every row of a read-out whose
        weights came out numerically zero, when the judge gave every item the same probabilities).
        On a tie the read-out has no label of its own: its caller keeps the label the item had."""
        scores = self._scores(x)
        if scores.shape[1] == 1:
            return (scores[:, 0] > 0).astype(np.int64), np.abs(scores[:, 0]) > TIE
        codes = np.argmax(scores, axis=1)
        top2 = np.sort(scores, axis=1)[:, -2:]
        return codes, (top2[:, 1] - top2[:, 0]) > TIE

    def predict(self, x: np.ndarray) -> list[str]:
        """The label (as a string) of each row of ``x`` (columns as :attr:`features`)."""
        return [self.labels[j] for j in self.predict_codes(x).tolist()]

    def prob(self, x: np.ndarray, label: Label) -> list[float]:
        """``P(label | x)`` per row of ``x`` (softmax over the classes; sigmoid for two)."""
        scores = self._scores(x)
        if scores.shape[1] == 1:
            p1 = 1.0 / (1.0 + np.exp(-scores[:, 0]))
            return (p1 if str(label) == self.labels[1] else 1.0 - p1).tolist()
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        return probs[:, self.labels.index(str(label))].tolist()

    def describe(self) -> str:
        """``logistic on z, vote: w = (+1.20, -0.30), b = +0.10, C = 1, CV balanced accuracy 0.640 (5 folds, n = 180)``;
        beyond two labels ``multinomial logistic on lp[1], ...: w[1] = (...), b[1] = ...; w[2] = ...``."""
        cv = "-" if self.cv_score is None else f"{self.cv_score:.3f}"
        tail = f"C = {self.C:g}, CV {self.objective.replace('_', ' ')} {cv} ({self.cv_folds} folds, n = {self.n})"
        if len(self.coef) == 1:
            w = ", ".join(f"{c:+.2f}" for c in self.coef[0])
            return f"logistic on {', '.join(self.features)}: w = ({w}), b = {self.intercept[0]:+.2f}, {tail}"
        rows = "; ".join(
            f"w[{lab}] = ({', '.join(f'{c:+.2f}' for c in row)}), b[{lab}] = {b:+.2f}"
            for lab, row, b in zip(self.labels, self.coef, self.intercept, strict=True)
        )
        return f"multinomial logistic on {', '.join(self.features)}: {rows}, {tail}"


def _counts(y: Sequence[str]) -> dict[str, int]:
    return dict(sorted(Counter(y).items()))


def _fit_all(
    x: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    train: np.ndarray,
    cs: np.ndarray,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    repeat: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Every fit ``j`` (its items ``train[j % len(train)]``, its ``cs[j]``) at once: ``coef``
    ``(J, R, f)`` and ``intercept`` ``(J, R)``, ``R`` = 1 row for two classes (the second class's), else
    one per class; ``start``: ``(coef, intercept)`` to start from (``None``: zeros); ``repeat``: the
    rows of ``train`` taken that many times in turn (their class weights computed once)."""
    weights = balanced_weights(codes, train)
    if repeat > 1:
        weights = np.tile(weights, (repeat, 1))
    theta = None if start is None else np.concatenate([start[0], start[1][..., None]], axis=-1)
    if n_classes == 2:
        coef, intercept = fit_binary(
            x, (codes == 1).astype(np.float64), weights, cs, None if theta is None else theta[:, 0]
        )
        return coef[:, None, :], intercept[:, None]
    return fit_multinomial(x, codes, n_classes, weights, cs, theta)


def _cv_scores(
    x: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    grid: Sequence[float],
    folds: int,
    seed: int,
    objective: Objective,
) -> tuple[list[float | None], np.ndarray, np.ndarray]:
    """The objective of each ``C``'s pooled out-of-fold predictions (stratified ``folds``-fold, as
    scikit-learn deals them), and each ``C``'s fit on every item (``coef``, ``intercept``): those fits
    first, together, then every fold's fits together, each started from its ``C``'s fit on every item
    (a few Newton steps away)."""
    n, n_c = len(codes), len(grid)
    cs = np.asarray(grid, dtype=np.float64)
    coef, intercept = _fit_all(x, codes, n_classes, np.ones((1, n), dtype=bool), cs, repeat=n_c)
    test = stratified_test_folds(codes, folds, seed)
    in_fold = test[None, :] != np.arange(folds)[:, None]  # (folds, n): fold j's training items
    fold_coef, fold_intercept = _fit_all(
        x,
        codes,
        n_classes,
        in_fold,
        np.repeat(cs, folds),
        (np.repeat(coef, folds, axis=0), np.repeat(intercept, folds, axis=0)),
        repeat=n_c,
    )
    size = n_classes + 1  # the objective's confusion matrices keep a column for unparsed
    pred = np.empty((n_c, n), dtype=np.int64)
    for c in range(n_c):  # each item scored by its own fold's fit of this C
        own = c * folds + test
        scores = np.einsum("nrf,nf->nr", fold_coef[own], x) + fold_intercept[own]
        pred[c] = (scores[:, 0] > 0).astype(np.int64) if scores.shape[1] == 1 else np.argmax(scores, axis=1)
    flat = (codes * size)[None, :] + pred + (np.arange(n_c) * size * size)[:, None]
    cms = np.bincount(flat.ravel(), minlength=n_c * size * size).reshape(n_c, size, size)
    return [optional(v) for v in objective_rows(objective, cms, n_classes)], coef, intercept


def fit_readout(
    x: np.ndarray,
    y: Sequence[Label],
    features: Sequence[str],
    *,
    objective: Objective = "balanced_accuracy",
    seed: int = 0,
    grid: Sequence[float] = C_GRID,
    folds: int = 5,
) -> FittedReadout | None:
    """Class-weighted L2 logistic regression of ``y`` on ``x``, ``C`` chosen by stratified k-fold CV.

    Every candidate ``C``'s fold fits and its fit on every item are solved together
    (:mod:`allure.metrics._logistic`: scikit-learn's objective and folds, without scikit-learn); the
    chosen ``C``'s fit on every item is the read-out.

    Args:
        x: ``(n, f)`` features of the fit items (never their references).
        y: Their reference labels (an auditor's corrected label where there is one).
        features: Column names.
        objective: What cross-validation maximises (the loop's objective).
        seed: Seed of the folds.
        grid: Candidate ``C`` values.
        folds: Most folds (fewer when a label has fewer items).

    Returns:
        The fitted read-out, or ``None`` when fewer than two labels, or a label with fewer than
        :data:`MIN_PER_LABEL` items, are in ``y``.
    """
    x = np.asarray(x, dtype=np.float64).reshape(len(y), -1)
    as_str = {v: str(v) for v in set(y)}  # the classes are compared as strings (scikit-learn's classes_)
    counts = _counts(list(map(as_str.__getitem__, y)))
    if len(counts) < 2 or min(counts.values()) < MIN_PER_LABEL:
        return None
    k = min(folds, min(counts.values()))
    labels = sorted(counts)
    code_of = {v: labels.index(s) for v, s in as_str.items()}
    codes = np.fromiter(map(code_of.__getitem__, y), dtype=np.int64, count=len(y))
    with one_blas_thread():  # many small matrix products: more BLAS threads only spin (2x the CPU)
        scores, coef, intercept = _cv_scores(x, codes, len(labels), grid, k, seed, objective)
    best = max(range(len(grid)), key=lambda c: (-1.0 if scores[c] is None else scores[c], -grid[c]))
    return FittedReadout(
        features=tuple(features),
        labels=tuple(labels),
        coef=coef[best].tolist(),
        intercept=intercept[best].tolist(),
        C=float(grid[best]),
        cv_score=scores[best],
        cv_folds=k,
        objective=objective,
        n=len(y),
        n_per_label=counts,
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def knn_labels(
    train: np.ndarray,
    train_labels: Sequence[Label],
    queries: np.ndarray,
    *,
    k: int = 8,
    exclude: Sequence[set[int]] | None = None,
) -> list[Label | None]:
    """kNN prompting: the majority label among each query's ``k`` nearest training rows (Euclidean
    distance between label log-probability vectors; a tie goes to the nearest row's label)."""
    train = np.asarray(train, dtype=np.float64).reshape(len(train_labels), -1)
    queries = np.asarray(queries, dtype=np.float64).reshape(len(queries), -1)
    out: list[Label | None] = []
    for i, q in enumerate(queries):
        d = np.linalg.norm(train - q, axis=1)
        if exclude is not None and exclude[i]:
            d[list(exclude[i])] = np.inf
        order = [j for j in np.argsort(d, kind="stable")[:k] if np.isfinite(d[j])]
        if not order:
            out.append(None)
            continue
        votes = Counter(train_labels[j] for j in order)
        top = max(votes.values())
        out.append(next(train_labels[j] for j in order if votes[train_labels[j]] == top))
    return out
