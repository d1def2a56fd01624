"""The learned read-out (issue 34) in an exported judge: the pass's fitted read-out carried in the
bundle (``readout.json``, part of the manifest hash) and applied, never refitted, as the last step
of the judge's pass, so that a bundle gives the run's own labels back.

The read-out carried is the one a re-audit of the pass's memory version applies (issue 34 item 5):
the pass's current read-out (:func:`allure.store.current_readout`), that is its latest refit after an
approval or an undo (:meth:`allure.store.RunStore.refit_readout`), else what the pass fitted. A
refit's ``readout.json`` says so (``refit``: when, on how many fit items, how many labels corrected),
and so do ``judge.toml`` and the card; the export still checks that the pass's own read-out gives
the pass's stored labels back.

Carried: a ``logistic`` read-out on the judge's label probabilities alone, read from each verdict
(:func:`allure.passes.readout.probability_features`: ``z`` for two labels, ``lp[l]`` per label beyond
two, multinomial; and a pair's swapped order read back, ``z_swap`` or ``lp_swap[l]``, in which case
the judge's pass runs the swapped order too). Refused at export, with the fix: a read-out with the
memory ``vote`` feature (it would need the examples' embeddings from the memory's embedding model)
and ``knn`` (its neighbours are not stored).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.labels import Label

if TYPE_CHECKING:
    from allure.judge._source import JudgeSource
    from allure.metrics import ReadoutRecord
    from allure.passes.readout import LearnedReadout

READOUT = "readout.json"
"""The bundle file holding the fitted read-out (absent: the pass applied none)."""


def applied_readout(src: JudgeSource) -> ReadoutRecord | None:
    """The read-out the exported pass applied (its stored record, :func:`allure.store.pass_readout`);
    ``None`` when none was applied (``readout = "none"``, nothing fitted, or ``auto`` kept the parsed labels).

    Raises:
        JudgeError: It was applied but cannot be carried (``vote`` or ``z_reversed`` feature, ``knn``).
    """
    from allure.store import pass_readout

    rec = pass_readout(src.run.info, src.iteration)
    if rec is None or not rec.applied:
        return None  # a fitted read-out's record names its features; a kept or unfitted one does not
    votes = any(f.startswith("vote") for f in rec.features)
    polar = "z_reversed" in rec.features  # the reversed question is not part of a bundle
    if rec.mode == "logistic" and not votes and not polar and rec.coef:
        return rec
    what = (
        "the memory vote feature"
        if votes
        else "the polarity variant's feature z_reversed"
        if polar
        else f"mode {rec.mode!r}"
    )
    raise JudgeError(
        f"pass {src.iteration} applied a learned read-out with {what} ({rec.describe}); a bundle "
        "carries only a logistic read-out on the judge's label probabilities, so it would not give the "
        "run's labels back",
        where=f"run {src.run.id}, run info 'readout_{src.iteration}' (spec field 'evaluator.readout')",
        fix="export a pass without it (`--zero-shot` or `--iteration N`, where its read-out reads neither "
        'the vote nor z_reversed, or is none), or audit with readout = "none" (or "logistic" before the first approved example)',
    )


def carried_readout(src: JudgeSource, applied: ReadoutRecord) -> tuple[ReadoutRecord, dict[str, Any] | None]:
    """What the bundle carries for a pass that applied ``applied``: its current read-out, as a
    re-audit applies it (the latest refit after an approval, else ``applied``), and the refit's line
    of the refit history (``at``, ``n``, ``changed``; ``None``: the pass's own read-out)."""
    from allure.store import current_readout, readout_refit

    rec = current_readout(src.run.info, src.iteration)
    if rec is None or rec == applied:
        return applied, None
    return rec, readout_refit(src.run.info, src.iteration)


def refit_facts(applied: ReadoutRecord, refit: dict[str, Any] | None) -> dict[str, Any] | None:
    """A refit in a bundle's terms (``readout.json``'s ``refit``, the card's): when, on how many
    fit items, how many of their labels an approval corrected, and what the pass itself applied."""
    if refit is None:
        return None
    return {
        "refitted_at": refit.get("at"),
        "n": refit.get("n"),
        "labels_corrected": refit.get("changed"),
        "pass_fitted_at": applied.fitted_at,
        "pass_describe": applied.describe,
    }


def refit_sentence(facts: dict[str, Any]) -> str:
    """A refit in one line (``judge.toml``, the card)."""
    return (
        f"refitted {facts['refitted_at']} after an approval: {facts['labels_corrected']} of {facts['n']} "
        f"fit labels corrected (the pass applied the one fitted {facts['pass_fitted_at']}: "
        f"{facts['pass_describe']})"
    )


def readout_json(rec: ReadoutRecord, positive: Label | None, refit: dict[str, Any] | None = None) -> str:
    """``readout.json``'s text: the fitted model exactly as stored (coefficients, intercept, classes),
    and ``refit`` (:func:`refit_facts`) when it is a refit after an approval."""
    fitted = rec.fitted
    assert fitted is not None  # applied_readout carries logistic read-outs only
    # the label z is the log-odds of: the spec's positive label, or the first label where it names none
    own = rec.positive if rec.positive is not None else positive
    positive = own if len(fitted.features) and fitted.features[0] == "z" else None
    doc = {"mode": "logistic", "positive_label": positive, "fitted": fitted.model_dump(mode="json")}
    if refit is not None:
        doc["refit"] = refit
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class BundleReadout:
    """The read-out of an exported pass, as the bundle holds it."""

    own: LearnedReadout
    """What the pass applied: it must give the pass's stored labels back (the export checks it)."""
    text: str
    """``readout.json``: the read-out carried (:func:`carried_readout`)."""
    table: dict[str, Any]
    """``judge.toml``'s ``[readout]``."""
    card: dict[str, Any]
    """The card's ``readout``: ``describe`` and ``refit`` (:func:`refit_facts`, ``None``: not a refit)."""


def bundle_readout(src: JudgeSource) -> BundleReadout | None:
    """The pass's read-out in a bundle (``None``: the pass applied none).

    Raises:
        JudgeError: It cannot be carried (:func:`applied_readout`), or its record is not a read-out.
    """
    applied = applied_readout(src)
    if applied is None:
        return None
    labels, positive, where = src.spec.label_set, src.spec.positive_label, f"run {src.run.id}"
    own = fixed_readout(readout_json(applied, positive), labels, where)
    rec, refit = carried_readout(src, applied)
    facts = refit_facts(applied, refit)
    text = readout_json(rec, positive, facts)
    fixed_readout(text, labels, where)  # the refit is a read-out of this judge too
    describe = rec.describe
    table = {"file": READOUT, "describe": describe}
    if facts is not None:
        table["refit"] = refit_sentence(facts)
    return BundleReadout(own, text, table, {"describe": describe, "refit": facts})


def fixed_readout(text: str, labels: list[Label], where: str) -> LearnedReadout:
    """The carried read-out, ready to apply (no refit).

    Raises:
        JudgeError: ``readout.json`` is not a carried read-out of this label set.
    """
    from pydantic import ValidationError

    from allure.metrics import FittedReadout
    from allure.passes.readout import LearnedReadout, probability_features

    try:
        doc = json.loads(text)
        fitted = FittedReadout.model_validate(doc["fitted"])
        positive = doc["positive_label"]
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        raise JudgeError(
            f"not a carried read-out ({str(exc).splitlines()[0]})",
            where=f"{where}/{READOUT}",
            fix="export the judge again with `allure judge export`",
        ) from exc
    both = any("_swap" in f for f in fitted.features)
    fits = fitted.features == probability_features(labels, swapped=both)
    if len(labels) == 2:
        fits = fits and positive in labels
    if not fits or set(fitted.labels) != {str(x) for x in labels}:
        raise JudgeError(
            "the read-out does not fit this judge (features other than the label probabilities, or another "
            "label set)",
            where=f"{where}/{READOUT}, field 'fitted'",
            fix="export the judge again with `allure judge export`",
        )
    return LearnedReadout(
        name="read-out (carried)",
        mode="logistic",
        labels=tuple(labels),
        positive=positive if len(labels) == 2 else None,
        features=fitted.features,
        fitted=fitted,
    )
