"""Class-weighted L2 logistic regression, many fits at once, by Newton's method (issue 41 item 7).

The read-out (:mod:`allure.metrics._readout`) fits a handful of features (``z``, a pair's ``z_swap``,
the reversed question's ``z_reversed``, the memory vote; ``lp[l]`` beyond two labels) for every
candidate ``C`` and every cross-validation fold: dozens of tiny problems a pass. scikit-learn's
``LogisticRegression`` solved them one by one (about 4 ms each with 4,000 items, and 1 to 2 s to
import); here they are solved together: fit ``j`` minimises

    ``C_j * sum_i s_ji * loss(y_i, x_i w_j + b_j) + 0.5 * ||w_j||^2``

(``s_ji``: item ``i``'s class weight in fit ``j``'s training items, ``n / (K n_y)``, 0 outside them;
the intercept is not penalised), scikit-learn's objective for ``class_weight = "balanced"``, with one
Newton step for every fit per iteration (one ``(J, p, p)`` Hessian, one batched solve; halved where
the gradient would grow), until every step is below :data:`STEP_TOL` (the one after it would be of
order ``1e-12``: more exact than lbfgs's ``tol = 1e-4``). A caller may start the fits from
coefficients near their optimum (the read-out's fold fits start from their ``C``'s fit on every item).
Binary: the weight of the second class (scikit-learn's ``classes_[1]``); beyond two classes the
symmetric multinomial (one row per class, the intercepts summing to 0 as lbfgs leaves them).

:func:`stratified_test_folds` deals the folds exactly as scikit-learn's
``StratifiedKFold(k, shuffle=True, random_state=seed)`` does (tested equal), so the ``C`` chosen by
cross-validation is the one it chose on the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache
from typing import Any

import numpy as np

from allure.metrics._common import FloatArray, IntArray

STEP_TOL = 1e-6
"""Newton stops when every fit's largest step is below this, after taking it (coefficients of order 1:
converging quadratically, the step after it would be of order ``1e-12``)."""

MAX_NEWTON = 100
"""Most Newton iterations (a fit of a few features takes 4 to 8 from zero, 2 to 4 from a near start)."""

_JITTER = 1e-12
"""Added to the Hessian's diagonal: a fit whose weights saturate stays solvable."""


@cache
def _controller() -> Any:
    """The process's BLAS thread pools, found once (``threadpool_limits`` looks them up on every call:
    about 1.5 ms, a tenth of a read-out fit)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS limited to one thread inside: many small matrix products, where more threads only spin
    (2x the CPU on the read-out's fits)."""
    return _controller().limit(limits=1)


def stratified_test_folds(y: np.ndarray, folds: int, seed: int) -> IntArray:
    """Each item's test fold in ``range(folds)``, dealt as scikit-learn's
    ``StratifiedKFold(folds, shuffle=True, random_state=seed)`` deals them (its ``_make_test_folds``:
    classes in order of first appearance, each class's fold sizes by round robin over the sorted codes,
    each class's folds shuffled by one ``RandomState(seed)`` in turn)."""
    y = np.asarray(y)
    if y.dtype.kind in "iu" and len(y) and y.min() >= 0 and y.max() < 64:  # codes: no sort needed
        seen = np.flatnonzero(np.bincount(y))
        first = np.array([np.argmax(y == k) for k in seen.tolist()], dtype=np.int64)
        rank = np.empty(int(seen[-1]) + 1, dtype=np.int64)
        rank[seen] = np.argsort(np.argsort(first))  # each class's place in order of first appearance
        codes = rank[y]
    else:
        _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
        _, class_perm = np.unique(first, return_inverse=True)
        codes = class_perm[inverse.reshape(-1)]
    n_classes = len(first)
    order = np.sort(codes)
    allocation = np.asarray([np.bincount(order[i::folds], minlength=n_classes) for i in range(folds)])
    rng = np.random.RandomState(seed)
    test = np.empty(len(y), dtype=np.int64)
    for k in range(n_classes):
        dealt = np.arange(folds).repeat(allocation[:, k])
        rng.shuffle(dealt)
        test[codes == k] = dealt
    return test


def balanced_weights(codes: IntArray, train: np.ndarray) -> FloatArray:
    """``(J, n)`` sample weights: in fit ``j`` (``train[j]``, a boolean row), item ``i`` of class ``y``
    weighs ``n_j / (K_j n_jy)`` (scikit-learn's ``class_weight = "balanced"`` on the fit's items), 0
    outside the fit."""
    weights = np.array(train, dtype=np.float64)  # a copy: scaled in place below
    n_classes = int(codes.max()) + 1 if len(codes) else 0
    counts = np.stack([weights[:, codes == k].sum(axis=1) for k in range(n_classes)], axis=1)  # (J, K)
    present = np.count_nonzero(counts, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_class = np.where(counts > 0, counts.sum(axis=1, keepdims=True) / (present[:, None] * counts), 0.0)
    weights *= per_class[:, codes]
    return weights


def _outer_columns(xa: FloatArray) -> FloatArray:
    """``(n, p * p)``: each row's ``x x^T``, flattened (a weighted Hessian is then one matrix product)."""
    n, p = xa.shape
    return (xa[:, :, None] * xa[:, None, :]).reshape(n, p * p)


def _binary_state(
    theta: FloatArray, xa: FloatArray, xx: FloatArray, pulled: FloatArray, cw: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Each fit's gradient and Hessian at ``theta`` (``(J, p)``; ``pulled``: ``(cw t) @ xa``, the part
    of the gradient that does not move): one ``exp`` per item and fit, and as few passes over the
    ``(J, n)`` arrays as can be, in place (this is most of a read-out's CPU)."""
    p = (-theta) @ xa.T
    with np.errstate(over="ignore"):  # exp(-s) = inf: P = 0 exactly, as the sigmoid's limit
        np.exp(p, out=p)
    p += 1.0
    np.divide(1.0, p, out=p)  # the sigmoid 1 / (1 + exp(-s))
    work = np.multiply(cw, p)
    grad = work @ xa - pulled
    grad[:, :-1] += theta[:, :-1]
    work *= np.subtract(1.0, p, out=p)  # cw p (1 - p)
    j, q = theta.shape
    return grad, (work @ xx).reshape(j, q, q)


def fit_binary(
    x: FloatArray, t: FloatArray, weights: FloatArray, c: FloatArray, start: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """``J`` class-weighted L2 logistic fits of ``t`` (0/1) on ``x`` (``(n, f)``) at once.

    Args:
        x: The features.
        t: 1 where the item is of the second class.
        weights: ``(J, n)`` sample weights (0: not in the fit).
        c: ``(J,)`` inverse L2 strengths.
        start: ``(J, f + 1)`` starting coefficients and intercepts (``None``: zeros).

    Returns:
        ``coef`` ``(J, f)`` and ``intercept`` ``(J,)``.
    """
    n, f = x.shape
    xa = np.hstack([x, np.ones((n, 1))])
    xx = _outer_columns(xa)
    cw = weights * c[:, None]
    theta = np.zeros((len(c), f + 1)) if start is None else np.array(start, dtype=np.float64)
    ridge = np.diag(np.r_[np.ones(f), 0.0] + _JITTER)
    pulled = cw @ (xa * t[:, None])  # (cw t) @ xa: t is 0 or 1
    theta = _newton(theta, lambda th: _binary_state(th, xa, xx, pulled, cw), ridge)
    return theta[:, :-1], theta[:, -1]


def _multinomial_state(
    theta: FloatArray, xa: FloatArray, xx: FloatArray, onehot: FloatArray, cw: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """As :func:`_binary_state` for ``theta`` ``(J, K, p)``; the Hessian ``(J, K p, K p)``."""
    j, k, q = theta.shape
    m = theta @ xa.T  # (J, K, n)
    e = np.exp(m - m.max(axis=1, keepdims=True))
    prob = e * (1.0 / e.sum(axis=1))[:, None, :]
    grad = (cw[:, None, :] * (prob - onehot)) @ xa
    grad[:, :, :-1] += theta[:, :, :-1]
    a = cw[:, None, :] * prob  # (J, K, n)
    cross = -(a[:, :, None, :] * prob[:, None, :, :])  # (J, K, K, n)
    idx = np.arange(k)
    cross[:, idx, idx, :] += a
    hess = (cross.reshape(j * k * k, -1) @ xx).reshape(j, k, k, q, q).transpose(0, 1, 3, 2, 4)
    return grad, hess.reshape(j, k * q, k * q)


def fit_multinomial(
    x: FloatArray,
    codes: IntArray,
    n_classes: int,
    weights: FloatArray,
    c: FloatArray,
    start: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """As :func:`fit_binary` for ``n_classes`` classes (codes ``0..K-1``): the symmetric multinomial.

    Returns:
        ``coef`` ``(J, K, f)`` and ``intercept`` ``(J, K)`` (each fit's intercepts sum to 0).
    """
    n, f = x.shape
    k = n_classes
    xa = np.hstack([x, np.ones((n, 1))])
    xx = _outer_columns(xa)
    onehot = (codes[None, :] == np.arange(k)[:, None]).astype(np.float64)  # (K, n)
    cw = weights * c[:, None]
    theta = np.zeros((len(c), k, f + 1)) if start is None else np.array(start, dtype=np.float64)
    ridge = np.tile(np.r_[np.ones(f), 0.0], k) + _JITTER
    ridge[f :: f + 1] += 1e-9  # the intercepts' common shift is free: kept at 0 (centred steps)
    theta = _newton(theta, lambda th: _multinomial_state(th, xa, xx, onehot, cw), np.diag(ridge))
    return theta[:, :, :-1], theta[:, :, -1]


State = Callable[[FloatArray], tuple[FloatArray, FloatArray]]
"""Coefficients -> each fit's gradient and Hessian there."""


def _newton(theta: FloatArray, state: State, ridge: FloatArray) -> FloatArray:
    """Damped Newton for every fit at once, on the gradient's norm (the problems are strictly convex:
    the gradient vanishes at the optimum alone, and along a Newton step its norm falls at first): the
    full step, halved (up to 30 times) for a fit whose gradient would grow; until every fit's largest
    step is below :data:`STEP_TOL`."""
    j = len(theta)
    shape = (j,) + (1,) * (theta.ndim - 1)
    axes = tuple(range(1, theta.ndim))
    grad, hess = state(theta)
    norm = (grad * grad).sum(axis=axes)
    for _ in range(MAX_NEWTON):
        step = np.linalg.solve(hess + ridge, grad.reshape(j, -1, 1)).reshape(theta.shape)
        if theta.ndim == 3:  # multinomial: the intercepts' common shift stays 0
            step[:, :, -1] -= step[:, :, -1].mean(axis=1, keepdims=True)
        if (np.abs(step).max(axis=axes) < STEP_TOL).all():
            return theta - step
        scale = np.ones(j)
        todo = np.ones(j, dtype=bool)
        new_theta, new_grad, new_hess, new_norm = theta, grad, hess, norm
        for _ in range(30):
            trial = theta - scale.reshape(shape) * step
            g, h = state(trial)
            gn = (g * g).sum(axis=axes)
            take = todo & (gn < norm)
            new_theta = np.where(take.reshape(shape), trial, new_theta)
            new_grad = np.where(take.reshape(shape), g, new_grad)
            new_hess = np.where(take.reshape((j,) + (1,) * (hess.ndim - 1)), h, new_hess)
            new_norm = np.where(take, gn, new_norm)
            todo &= ~take
            if not todo.any():
                break
            scale = np.where(todo, 0.5 * scale, scale)
        if todo.all():  # no fit could move: at the optimum to rounding
            return theta
        theta, grad, hess, norm = new_theta, new_grad, new_hess, new_norm
    return theta
