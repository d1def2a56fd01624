"""The learned read-out (issue 34) in an exported judge: the pass's fitted read-out carried in the
bundle (``readout.json``, part of the manifest hash) and applied, never refitted, as the last step
of the judge's pass, so that a bundle gives the run's own labels back.

Carried: a ``logistic`` read-out on the judge's label probabilities alone, read from each verdict
(:func:`allure.evaluator.probability_features`: ``z`` for two labels, ``lp[l]`` per label beyond
two, multinomial; and a pair's swapped order read back, ``z_swap`` or ``lp_swap[l]``, in which case
the judge's pass runs the swapped order too). Refused at export, with the fix: a read-out with the
memory ``vote`` feature (it would need the examples' embeddings from the memory's embedding model)
and ``knn`` (its neighbours are not stored).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.labels import Label

if TYPE_CHECKING:
    from allure.evaluator import LearnedReadout
    from allure.judge._source import JudgeSource

READOUT = "readout.json"
"""The bundle file holding the fitted read-out (absent: the pass applied none)."""


def applied_readout(src: JudgeSource) -> dict[str, Any] | None:
    """The read-out the exported pass applied (run info ``readout_<iteration>``), as stored; ``None``
    when none was applied (``readout = "none"``, nothing fitted, or ``auto`` kept the parsed labels).

    Raises:
        JudgeError: It was applied but cannot be carried (``vote`` or ``z_reversed`` feature, ``knn``).
    """
    rec = src.run.info.get(f"readout_{src.iteration}")
    if not isinstance(rec, dict) or "features" not in rec:
        return None  # a fitted read-out's record names its features; a kept or unfitted one does not
    votes = any(str(f).startswith("vote") for f in rec["features"])
    polar = "z_reversed" in rec["features"]  # the reversed question is not part of a bundle
    if rec.get("mode") == "logistic" and not votes and not polar and rec.get("coef"):
        return rec
    what = (
        "the memory vote feature"
        if votes
        else "the polarity variant's feature z_reversed"
        if polar
        else f"mode {rec.get('mode')!r}"
    )
    raise JudgeError(
        f"pass {src.iteration} applied a learned read-out with {what} ({rec.get('describe', '')}); a bundle "
        "carries only a logistic read-out on the judge's label probabilities, so it would not give the "
        "run's labels back",
        where=f"run {src.run.id}, run info 'readout_{src.iteration}' (spec field 'evaluator.readout')",
        fix="export a pass without it (`--zero-shot` or `--iteration N`, where its read-out reads neither "
        'the vote nor z_reversed, or is none), or audit with readout = "none" (or "logistic" before the first approved example)',
    )


def readout_json(rec: dict[str, Any], positive: Label | None) -> str:
    """``readout.json``'s text: the fitted model exactly as stored (coefficients, intercept, classes)."""
    from allure.metrics import FittedReadout

    fitted = FittedReadout.model_validate({k: rec[k] for k in FittedReadout.model_fields if k in rec})
    # the label z is the log-odds of: the spec's positive label, or the first label where it names none
    positive = rec.get("positive", positive) if len(fitted.features) and fitted.features[0] == "z" else None
    doc = {"mode": "logistic", "positive_label": positive, "fitted": fitted.model_dump(mode="json")}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def fixed_readout(text: str, labels: list[Label], where: str) -> LearnedReadout:
    """The carried read-out, ready to apply (no refit).

    Raises:
        JudgeError: ``readout.json`` is not a carried read-out of this label set.
    """
    from pydantic import ValidationError

    from allure.evaluator import LearnedReadout, probability_features
    from allure.metrics import FittedReadout

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
