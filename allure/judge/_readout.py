"""The learned read-out (issue 34) in an exported judge: the pass's fitted read-out carried in the
bundle (``readout.json``, part of the manifest hash) and applied, never refitted, as the last step
of the judge's pass, so that a bundle gives the run's own labels back.

The read-out carried is the one a re-audit of the pass's memory version applies (issue 34 item 5):
the pass's current read-out (:func:`allure.store.current_readout`), that is its latest refit after an
approval or an undo (:meth:`allure.store.RunStore.refit_readout`), else what the pass fitted. A
refit's ``readout.json`` says so (``refit``: when, on how many fit items, how many labels corrected),
and so do ``judge.toml`` and the card; the export still checks that the pass's own read-out gives
the pass's stored labels back.

Carried: a ``logistic`` read-out on the judge's label probabilities, read from each verdict
(:func:`allure.passes.readout.probability_features`: ``z`` for two labels, ``lp[l]`` per label beyond
two, multinomial; and a pair's swapped order read back, ``z_swap`` or ``lp_swap[l]``, in which case
the judge's pass runs the swapped order too), and the memory's ``vote`` (``vote[l]`` beyond two
labels): then the bundle carries the voters too (``vote.json``: each approved example of the pass's
memory version, its item and that item's response hash, its corrected label and its stored
embedding), and an item to label is embedded as the memory embeds one (its response,
all-MiniLM-L6-v2, shipped offline); an item that is a voter's own (its id and its response) never
votes for itself, as in the run. Refused at export, with the fix: ``knn``
(its neighbours are not stored) and the polarity variant's ``z_reversed`` (the reversed question is
not part of a bundle).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.labels import Label

if TYPE_CHECKING:
    from pathlib import Path

    from allure.judge._source import JudgeSource
    from allure.metrics import ReadoutRecord
    from allure.models import Item
    from allure.passes.readout import LearnedReadout, VoteSource
    from allure.store import RunStore

READOUT = "readout.json"
"""The bundle file holding the fitted read-out (absent: the pass applied none)."""

VOTERS = "vote.json"
"""The bundle file holding a read-out's voters (absent: the read-out reads no ``vote``)."""


def reads_vote(features: tuple[str, ...] | list[str]) -> bool:
    """Whether a read-out's features include the memory's vote (``vote``, ``vote[l]``)."""
    return any(f.startswith("vote") for f in features)


def applied_readout(src: JudgeSource) -> ReadoutRecord | None:
    """The read-out the exported pass applied (its stored record, :func:`allure.store.pass_readout`);
    ``None`` when none was applied (``readout = "none"``, nothing fitted, or ``auto`` kept the parsed labels).

    Raises:
        JudgeError: It was applied but cannot be carried (``z_reversed`` feature, ``knn``).
    """
    from allure.store import pass_readout

    rec = pass_readout(src.run.info, src.iteration)
    if rec is None or not rec.applied:
        return None  # a fitted read-out's record names its features; a kept or unfitted one does not
    polar = "z_reversed" in rec.features  # the reversed question is not part of a bundle
    if rec.mode == "logistic" and not polar and rec.coef:
        return rec
    what = "the polarity variant's feature z_reversed" if polar else f"mode {rec.mode!r}"
    raise JudgeError(
        f"pass {src.iteration} applied a learned read-out with {what} ({rec.describe}); a bundle "
        "carries only a logistic read-out on the judge's label probabilities and the memory's vote, so "
        "it would not give the run's labels back",
        where=f"run {src.run.id}, run info 'readout_{src.iteration}' (spec field 'evaluator.readout')",
        fix="export a pass without it (`--zero-shot` or `--iteration N`, where its read-out does not read "
        'z_reversed, or is none), or audit with readout = "none" or "logistic"',
    )


def voters_json(src: JudgeSource, store: RunStore, project: Path) -> str:
    """``vote.json``'s text: the voters of the pass's read-out, the approved examples of its memory
    version (read from the run's memory, as :func:`allure.judge._source.pass_examples` reads them):
    each one's item, corrected label and stored embedding (float32, as the memory holds it).

    Raises:
        JudgeError: The memory no longer holds one of them.
    """
    from allure.memory import EpisodicMemory

    _, ids = store.memory_versions(src.run.id).get(src.iteration, ("", []))
    mem = src.spec.memory
    memory = EpisodicMemory.open_at(mem.location, project_dir=project, collection=mem.collection, lazy=True)
    examples, vectors = memory.embeddings()
    row = {ex.id: j for j, ex in enumerate(examples)}
    missing = [i for i in ids if i not in row]
    if missing or not ids:
        raise JudgeError(
            f"the memory no longer holds the voters of pass {src.iteration}'s read-out "
            f"({len(missing)} missing{', e.g. ' + missing[0] if missing else ''})",
            where=f"memory {memory.location}, run {src.run.id}",
            fix="export from the project whose memory the run used, before examples are deleted",
        )
    voters = [
        {
            "example_id": i,
            "item_id": examples[row[i]].item_id,
            "response_sha256": _sha(examples[row[i]].response),
            "label": examples[row[i]].correct_label,
            "vector": [float(x) for x in vectors[row[i]]],
        }
        for i in sorted(ids)
    ]
    return json.dumps({"embedding": "all-MiniLM-L6-v2", "voters": voters}, sort_keys=True) + "\n"


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vote_source(text: str, labels: list[Label], where: str) -> VoteSource:
    """The voters ``vote.json`` holds, an item to label embedded as the memory embeds one (its response).
    An item is a voter's own, and does not count that voter, when both its id and its response are
    the voter's item's (new data may reuse an audit item's id for another response).

    Raises:
        JudgeError: ``vote.json`` is not a voters file of this label set.
    """
    import numpy as np

    from allure.passes.readout import VoteSource

    try:
        voters = json.loads(text)["voters"]
        vectors = np.asarray([v["vector"] for v in voters], dtype=np.float32)
        got = [v["label"] for v in voters]
        items = [f"{v['item_id']}\n{v['response_sha256']}" for v in voters]
    except (ValueError, KeyError, TypeError) as exc:
        raise JudgeError(
            f"not a voters file ({str(exc).splitlines()[0]})",
            where=f"{where}/{VOTERS}",
            fix="export the judge again with `allure judge export`",
        ) from exc
    if not voters or vectors.ndim != 2 or any(lab not in labels for lab in got):
        raise JudgeError(
            "the voters do not fit this judge (none, ragged vectors, or a label outside its label set)",
            where=f"{where}/{VOTERS}, field 'voters'",
            fix="export the judge again with `allure judge export`",
        )

    def embed_items(items_: list[Item]) -> np.ndarray:
        from allure.memory import embed

        return embed([it.response for it in items_])

    def own(item: Item) -> str:
        return f"{item.id}\n{_sha(item.response)}"

    return VoteSource(vectors, got, items, embed_items, own)


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
    voters: str | None
    """``vote.json`` (:func:`voters_json`; ``None``: the read-out reads no vote)."""
    table: dict[str, Any]
    """``judge.toml``'s ``[readout]``."""
    card: dict[str, Any]
    """The card's ``readout``: ``describe`` and ``refit`` (:func:`refit_facts`, ``None``: not a refit)."""


def bundle_readout(src: JudgeSource, store: RunStore, project: Path) -> BundleReadout | None:
    """The pass's read-out in a bundle (``None``: the pass applied none), with its voters when it
    reads the memory's vote.

    Raises:
        JudgeError: It cannot be carried (:func:`applied_readout`), its record is not a read-out, or
            the memory no longer holds its voters.
    """
    applied = applied_readout(src)
    if applied is None:
        return None
    labels, positive, where = src.spec.label_set, src.spec.positive_label, f"run {src.run.id}"
    voters = voters_json(src, store, project) if reads_vote(applied.features) else None
    own = fixed_readout(readout_json(applied, positive), labels, where, voters)
    rec, refit = carried_readout(src, applied)
    facts = refit_facts(applied, refit)
    text = readout_json(rec, positive, facts)
    fixed_readout(text, labels, where, voters)  # the refit is a read-out of this judge too
    describe = rec.describe
    table = {"file": READOUT, "describe": describe}
    if voters is not None:
        table["voters"] = VOTERS
    if facts is not None:
        table["refit"] = refit_sentence(facts)
    return BundleReadout(own, text, voters, table, {"describe": describe, "refit": facts})


def fixed_readout(text: str, labels: list[Label], where: str, voters: str | None = None) -> LearnedReadout:
    """The carried read-out, ready to apply (no refit); ``voters``: ``vote.json``'s text, for a
    read-out that reads the memory's vote.

    Raises:
        JudgeError: ``readout.json`` is not a carried read-out of this label set, or it reads the vote
            and ``voters`` is missing or not a voters file.
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
    probs = probability_features(labels, swapped=both)
    votes = ("vote",) if len(labels) == 2 else tuple(f"vote[{lab}]" for lab in labels)
    fits = fitted.features in (probs, probs + votes)
    if len(labels) == 2:
        fits = fits and positive in labels
    if not fits or set(fitted.labels) != {str(x) for x in labels}:
        raise JudgeError(
            "the read-out does not fit this judge (features other than the label probabilities, or another "
            "label set)",
            where=f"{where}/{READOUT}, field 'fitted'",
            fix="export the judge again with `allure judge export`",
        )
    vote = None
    if reads_vote(fitted.features):
        if voters is None:
            raise JudgeError(
                f"the read-out reads the memory's vote but the bundle has no {VOTERS}",
                where=f"{where}/{READOUT}, field 'fitted.features'",
                fix="export the judge again with `allure judge export`",
            )
        vote = vote_source(voters, labels, where)
    return LearnedReadout(
        name="read-out (carried)",
        mode="logistic",
        labels=tuple(labels),
        positive=positive if len(labels) == 2 else None,
        features=fitted.features,
        fitted=fitted,
        vote=vote,
    )
