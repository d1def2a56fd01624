"""The learned read-out as a step of the pass pipeline (issue 34; METHODS.md section 13).

A :class:`LearnedReadout` satisfies the pipeline's ``Readout`` protocol (``name``, ``apply``): it
reads each item's features from its verdict and from the memory, never from the item's reference,
and returns the label the fitted model gives. The features (:func:`probability_features`):

- two labels: ``z``, the judge's label log-odds under the active prompt (``log P(pos) - log P(neg)``;
  ``pos``: the spec's positive label, the first label where it names none, e.g. a pairwise ``A``);
- more labels: ``lp[l]``, the judge's log-probability of each label ``l`` normalised over the label
  set, and a multinomial fit (one coefficient row per label);
- a pairwise pass that ran the swapped order: the same of the swapped order, read back to the main
  order's labels (``z_swap``, ``lp_swap[l]``: ``first`` <-> ``second``), so that the fit learns the
  position correction instead of averaging the two orders;
- two labels and ``[evaluator] polarity_prompt``: ``z_reversed``, the log-odds of the positive label
  read back from the reversed question's verdict (:mod:`allure.passes._polarity`), kept only when
  cross-validation scores it higher than the features without it;
- approved examples: ``vote``, the similarity-weighted share of the positive label among the ``k``
  nearest approved examples, the item's own never counted (beyond two labels ``vote[l]``, the
  share of each label).

A verdict without label probabilities reads as its parsed label (candidate 0:
:func:`allure.metrics.label_log_probs`). :func:`fit_learned_readout` fits it on the *mined* audit
items only: an item of the dev or held-out split in the fit is refused (:class:`ReadoutLeak`), which
is what the leakage test asserts on the run store.

Modes (``[evaluator] readout``): ``logistic`` (class-weighted L2 logistic regression on the features,
``C`` by stratified k-fold CV on the fit items), ``knn`` (kNN prompting: the majority label of the
``k`` fit items nearest in the label-probability features), ``auto`` (the caller keeps zero-shot's
parsed labels as candidate 0 and adopts the read-out only when the guard finds it better on dev).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from allure.errors import AllureError
from allure.labels import Label
from allure.metrics import FittedReadout, fit_readout, knn_labels, memory_vote
from allure.models import ExtraOrder, Item, Verdict, Verdicts
from allure.passes.readout._features import FeatureTable, feature_table
from allure.passes.readout._vote import VoteSource

ReadoutMode = Literal["none", "logistic", "knn", "auto"]
"""``[evaluator] readout``: none (the parsed labels), logistic, knn, or auto (chosen by the guard)."""

K_NEAREST = 8
"""Neighbours of the memory vote and of kNN prompting."""


class ReadoutLeak(AllureError):
    """An item outside the mined audit items was about to be fitted on."""


class ReadoutInputMissing(AllureError):
    """A read-out of both orders of a pair was applied without the swapped order's verdicts."""


_MISSING = {
    "swap": (
        "both orders of each pair ({})",
        "ran only the main order",
        "run the swapped order too (plan_from_spec(..., positions=True))",
    ),
    "polarity": (
        "the polarity variant's answer (z_reversed)",
        "did not ask the reversed question",
        "set the plan's polarity (allure.passes.polarity_variant(spec))",
    ),
}
"""A pass's step (``PassPlan.<step>``) whose answers a read-out may read: what it reads, what the
pass did without the step, the fix (:meth:`LearnedReadout.scored`)."""


def probability_features(labels: Sequence[Label], *, swapped: bool) -> tuple[str, ...]:
    """The label-probability feature names of a label set (see the module), the swapped order's after
    the main order's."""
    if len(labels) == 2:
        return ("z", "z_swap") if swapped else ("z",)
    main = tuple(f"lp[{lab}]" for lab in labels)
    return main + tuple(f"lp_swap[{lab}]" for lab in labels) if swapped else main


@dataclass(frozen=True)
class PassOrders:
    """What a read-out reads of one pass, in one value: the main order's verdicts, a pair's swapped
    order (item id -> its verdict, in that order's terms), the reversed question's verdicts read back
    in the judge's terms, and the pass's features read once (:func:`feature_table`; ``None``: read
    where they are needed)."""

    verdicts: Verdicts
    swapped: ExtraOrder = None
    back: ExtraOrder = None
    table: FeatureTable | None = None


@dataclass
class LearnedReadout:
    """A fitted read-out, applied as the last step of a pass (see the module)."""

    name: str
    mode: ReadoutMode
    labels: tuple[Label, ...]
    positive: Label | None
    """The label ``z`` is the log-odds of (two labels); ``None`` beyond two."""
    features: tuple[str, ...]
    fitted: FittedReadout | None = None
    knn_x: list[list[float]] = field(default_factory=list)
    knn_y: list[Label] = field(default_factory=list)
    vote: VoteSource | None = None
    fit_ids: tuple[str, ...] = ()
    """The items it was fitted on (the leakage test reads them)."""
    fit_x: list[list[float]] | np.ndarray = field(default_factory=list)
    """Each fit item's features (rows as :attr:`fit_ids`, columns as :attr:`features`): what a refit
    after an approval reads instead of calling the judge again (:meth:`allure.store.RunStore.refit_readout`);
    a fit keeps its array, :meth:`record` writes it as lists (a pass's fold fits are never recorded)."""
    fit_y: list[Label] = field(default_factory=list)
    """Each fit item's label as fitted (an auditor's corrected label winning over the gold check)."""
    objective: str = "balanced_accuracy"
    seed: int = 0
    knn_at: str = ""
    """When a ``knn`` read-out took its neighbours (a logistic one's date is its model's ``fitted_at``)."""

    @property
    def reads_swapped(self) -> bool:
        """Whether it reads a pair's swapped order (``z_swap`` or ``lp_swap[l]``)."""
        return any(f == "z_swap" or f.startswith("lp_swap[") for f in self.features)

    @property
    def reads_reversed(self) -> bool:
        """Whether it reads the polarity variant's answer (``z_reversed``)."""
        return "z_reversed" in self.features

    def columns(
        self, items: list[Item], verdicts: Verdicts, swapped: ExtraOrder = None, back: ExtraOrder = None
    ) -> dict[str, list[float]]:
        """Each feature per item (see the module): the label probabilities from the verdicts (``swapped``:
        item id -> its swapped order's verdict, in that order's terms; ``back``: item id -> its reversed
        question's verdict read back in the judge's terms), ``vote`` from the memory."""
        table = feature_table(
            items, verdicts, labels=self.labels, positive=self.positive, swapped=swapped, back=back
        )
        cols = {f: c.tolist() for f, c in table.cols.items()}
        if self.vote is not None and any(f.startswith("vote") for f in self.features):
            cols.update(self._votes(items, self.vote))
        return cols

    def matrix(
        self, items: list[Item], orders: PassOrders, *, ids: Sequence[str] | None = None
    ) -> np.ndarray:
        """``(len(items), len(features))``: :attr:`features` of ``items``, the label probabilities'
        from ``orders.table`` when it holds them (a pass reads them once: :func:`feature_table`; ``ids``:
        the items' ids, when the caller has them)."""
        probs = [f for f in self.features if not f.startswith("vote")]
        verdicts, swapped, back, table = orders.verdicts, orders.swapped, orders.back, orders.table
        try:
            x = table.matrix(items, probs, ids=ids) if table is not None else None
        except KeyError:  # a table of other items or features: read these here
            x = None
        if x is None:
            table = feature_table(
                items, verdicts, labels=self.labels, positive=self.positive, swapped=swapped, back=back
            )
            x = table.matrix(items, probs)
        if len(probs) == len(self.features):
            return x
        votes = self._votes(items, self.vote) if self.vote is not None else {}
        cols = {f: x[:, j] for j, f in enumerate(probs)} | {f: np.asarray(v) for f, v in votes.items()}
        return np.column_stack([cols[f] for f in self.features])

    def _votes(self, items: list[Item], vote: VoteSource) -> dict[str, list[float]]:
        """``vote`` (two labels: the positive label's share) or ``vote[l]`` per label beyond two."""
        rows: dict[str, set[int]] = {}
        for j, i in enumerate(vote.item_ids):  # each item's own examples (never its voters)
            rows.setdefault(i, set()).add(j)
        own = [rows.get(vote.own_key(it), set()) for it in items]
        queries = vote.embed(items)
        return {
            f"vote[{lab}]" if self.positive is None else "vote": memory_vote(
                queries, vote.vectors, vote.labels, lab, k=K_NEAREST, exclude=own
            )
            for lab in (self.labels if self.positive is None else (self.positive,))
        }

    def apply(
        self,
        items: list[Item],
        verdicts: Verdicts,
        swapped: ExtraOrder = None,
        back: ExtraOrder = None,
        *,
        table: FeatureTable | None = None,
    ) -> dict[str, Label | None]:
        """Item id -> the read-out's label (items without a verdict are left out); ``swapped``: item id
        -> its swapped order's verdict (needed when :attr:`reads_swapped`); ``back``: item id -> its
        reversed question's verdict read back (needed when :attr:`reads_reversed`); ``table``: the
        pass's features, read once (:func:`feature_table`).

        Raises:
            ReadoutInputMissing: It reads the swapped order or the reversed question and that is ``None``.
        """
        return self._read(items, PassOrders(verdicts, swapped, back, table), prob=False)[0]

    def scored(
        self, items: list[Item], orders: PassOrders
    ) -> tuple[dict[str, Label | None], dict[str, float]]:
        """As :meth:`apply` (the pass's orders in one value), with each item's ``P(positive)`` besides
        its label (a logistic read-out of two labels; none for kNN or beyond two labels).

        Raises:
            ReadoutInputMissing: It reads the swapped order or the reversed question and that is ``None``.
        """
        return self._read(items, orders, prob=True)

    def _read(
        self, items: list[Item], orders: PassOrders, *, prob: bool
    ) -> tuple[dict[str, Label | None], dict[str, float]]:
        """:meth:`scored` (``prob``: with each item's ``P(positive)``; :meth:`apply` needs none)."""
        ids = [it.id for it in items]
        judged = list(map(orders.verdicts.__contains__, ids))
        todo = items
        if not all(judged):
            todo = [it for it, j in zip(items, judged, strict=True) if j]
            ids = [it.id for it in todo]
        if not todo:
            return {}, {}
        missing = {
            "swap": self.reads_swapped and orders.swapped is None,
            "polarity": self.reads_reversed and orders.back is None,
        }
        for step, (reads, missed, fix) in _MISSING.items():
            if missing[step]:
                raise ReadoutInputMissing(
                    f"{self.name} reads {reads.format(', '.join(self.features))} and the pass {missed}",
                    where=f"the pass's plan (PassPlan.{step})",
                    fix=f"{fix} when this read-out is applied",
                )
        x = self.matrix(todo, orders, ids=ids)
        if self.mode == "knn":
            # a fit item is never its own neighbour: its label comes from the other fit items'
            row = {i: j for j, i in enumerate(self.fit_ids)}
            own = [{row[it.id]} if it.id in row else set() for it in todo]
            got = knn_labels(np.array(self.knn_x), self.knn_y, x, k=K_NEAREST, exclude=own)
            return {it.id: g for it, g in zip(todo, got, strict=True)}, {}
        assert self.fitted is not None
        by_str = {str(lab): lab for lab in self.labels}
        classes = [by_str[c] for c in self.fitted.labels]
        codes, decided = self.fitted.decide(x)
        labels: dict[str, Label | None] = dict(
            zip(ids, map(classes.__getitem__, codes.tolist()), strict=True)
        )
        if not decided.all():  # a tie: the item keeps its label (see FittedReadout.decide)
            kept = orders.verdicts
            labels.update({ids[j]: kept[ids[j]].label for j in np.flatnonzero(~decided).tolist()})
        if self.positive is None or not prob:
            return labels, {}
        return labels, dict(zip(ids, self.fitted.prob(x, self.positive), strict=True))

    def record(self) -> dict[str, Any]:
        """What the memory version stores: mode, features, coefficients, CV score, n, date."""
        out: dict[str, Any] = {"mode": self.mode, "features": list(self.features), "n": len(self.fit_ids)}
        if self.positive is not None:
            out["positive"] = self.positive  # the label z is the log-odds of
        if self.fitted is not None:
            out.update(self.fitted.model_dump(mode="json"))
            out["describe"] = self.fitted.describe()
        else:
            on = ", ".join(self.features)
            out["describe"] = f"kNN prompting on {on} (k = {K_NEAREST}, n = {len(self.fit_ids)})"
            out["fitted_at"] = self.knn_at
        x = self.fit_x.tolist() if isinstance(self.fit_x, np.ndarray) else self.fit_x
        out["fit"] = {"ids": list(self.fit_ids), "x": x, "y": self.fit_y}
        out.update(objective=self.objective, seed=self.seed)
        return out


def fit_learned_readout(
    mode: ReadoutMode,
    fit_items: Sequence[Item],
    verdicts: Mapping[str, Verdict],
    references: Mapping[str, Label | None],
    *,
    labels: Sequence[Label],
    positive: Label | None,
    not_fit: AbstractSet[str],
    vote: VoteSource | None = None,
    objective: str = "balanced_accuracy",
    seed: int = 0,
    swapped: Mapping[str, Verdict] | None = None,
    back: Mapping[str, Verdict] | None = None,
    table: FeatureTable | None = None,
    ids: Sequence[str] | None = None,
) -> LearnedReadout | None:
    """Fit the read-out on ``fit_items`` (the mined audit items) with their ``references``.

    Args:
        mode: ``logistic`` or ``knn`` (``auto`` fits ``logistic``; the caller's guard adopts it or not).
        fit_items: The items fitted on.
        verdicts: Their verdicts under the active prompt.
        references: Item id -> reference label (an auditor's corrected label where there is one).
        labels: The label set.
        positive: The positive label of a two-label set (``None``: the first label; unused beyond two).
        not_fit: Items that must never be fitted on (the dev and held-out splits).
        vote: The approved examples that vote (``None``: no ``vote`` feature).
        objective: What cross-validation maximises.
        seed: Seed of the folds.
        swapped: A pairwise pass that ran the swapped order: item id -> its swapped order's verdict
            (in that order's terms); its label probabilities become features too.
        back: Two labels: item id -> its verdict under the polarity variant, read back in the judge's
            terms (``None``: not asked). The logistic read-out then also tries ``z_reversed`` and keeps
            it only when its cross-validated score is higher (a tie keeps the fewer features).
        table: The pass's features, read once (:func:`feature_table`; ``None``: read here).
        ids: The ids of ``fit_items``, when the caller has them (``None``: read here).

    Raises:
        ReadoutLeak: A dev or held-out item is among ``fit_items``.
    """
    ids = [it.id for it in fit_items] if ids is None else ids
    if not not_fit.isdisjoint(ids):  # a set's test, at C speed (issue 41 item 7)
        leaked = sorted(i for i in ids if i in not_fit)
        raise ReadoutLeak(
            f"{len(leaked)} dev or held-out item(s) in the read-out's fit (e.g. {leaked[0]})",
            where="the read-out's fit items",
            fix="fit the read-out on the mined audit items only",
        )
    if mode == "none" or len(labels) < 2:
        return None
    refs = list(map(references.get, ids))
    judged = list(map(verdicts.__contains__, ids))
    y: list[Label] = refs  # type: ignore[assignment]
    keep, keep_ids = list(fit_items), list(ids)
    if None in refs or not all(judged):  # only the items with a reference and a verdict
        pairs = [(it, r) for it, r, j in zip(fit_items, refs, judged, strict=True) if j and r is not None]
        keep, y = [it for it, _ in pairs], [r for _, r in pairs]
        keep_ids = [it.id for it in keep]
    two = len(labels) == 2
    features = probability_features(labels, swapped=swapped is not None)
    if vote is not None and mode != "knn":
        features += ("vote",) if two else tuple(f"vote[{lab}]" for lab in labels)
    base = LearnedReadout(
        name=f"read-out ({mode})",
        mode="knn" if mode == "knn" else "logistic",
        labels=tuple(labels),
        positive=(labels[0] if positive is None else positive) if two else None,
        features=features,
        vote=vote,
        fit_ids=tuple(keep_ids),
        objective=objective,
        seed=seed,
    )
    if len(set(y)) < 2:
        return None
    if base.mode == "knn":
        x = base.matrix(keep, PassOrders(verdicts, swapped, table=table), ids=keep_ids)
        base.fit_x, base.fit_y = x.tolist(), list(y)
        base.knn_x, base.knn_y = x.tolist(), y
        base.knn_at = datetime.now(UTC).isoformat(timespec="seconds")
        return base
    n_prob = len(probability_features(labels, swapped=swapped is not None))
    tries = [features]
    if back is not None and two:
        tries.append((*features[:n_prob], "z_reversed", *features[n_prob:]))
    best: LearnedReadout | None = None
    for names in tries:
        cand = replace(base, features=names)
        x = cand.matrix(keep, PassOrders(verdicts, swapped, back, table), ids=keep_ids)
        cand.fit_x, cand.fit_y = x, list(y)
        cand.fitted = fit_readout(x, y, names, objective=objective, seed=seed)  # type: ignore[arg-type]
        if cand.fitted is not None and (best is None or _cv(cand) > _cv(best)):
            best = cand
    return best


def _cv(learned: LearnedReadout) -> float:
    """The cross-validated score a feature set is chosen by (-1: none)."""
    score = learned.fitted.cv_score if learned.fitted is not None else None
    return -1.0 if score is None else score
