"""The read-out step gives, to 1e-9, what it gave before it was made cheap (issue 41 item 7).

``benchmarks/bench_readout_cost.py`` times :class:`allure.passes.readout.PassReadout`; making it cheaper
(vectorised features and application, fits started near their optimum) must not change what it
computes. ``data/readout_pinned.json`` holds the step's outputs on fixed scripted passes, written by
the implementation before that work (``python tests/evaluator/test_readout_pinned.py`` rewrites it:
only for a deliberate change of what the read-out computes). Each case is compared field by field:
the decision, every applied and out-of-fold label, each fold's fit items, and the applied read-out's
record (features, C, coefficients and CV score within 1e-9, its fit rows).

The passes: two labels (z) with unparsed verdicts, items without a reference and items with no
verdict; the same with the reversed question's verdicts (``z_reversed`` tried); three labels (a
multinomial read-out); two labels with a memory vote (scripted example vectors: a unit test's fake
embedding); ``logistic`` and ``knn`` modes besides ``auto``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from allure.dataset import cross_folds
from allure.models import Item, Verdict
from allure.passes.readout import PassReadout, VoteSource

PINNED = Path(__file__).parent / "data" / "readout_pinned.json"


def _pass(
    n: int, labels: tuple[str, ...], seed: int
) -> tuple[list[Item], dict[str, Verdict], dict[str, Any]]:
    """``n`` items whose judge leans to the wrong label; some unparsed, unreferenced or not judged."""
    rng = np.random.default_rng(seed)
    k = len(labels)
    refs = rng.choice(k, size=n, p=[0.3] + [0.7 / (k - 1)] * (k - 1))
    items = [Item(id=f"i{j:04d}", task="t", response=f"r{j}") for j in range(n)]
    verdicts: dict[str, Verdict] = {}
    for j, it in enumerate(items):
        logits = rng.normal(0.0, 1.2, size=k)
        logits[(refs[j] + 1) % k] += 1.0
        p = np.exp(logits - logits.max())
        p /= p.sum()
        if j % 37 == 5:
            continue  # no verdict
        if j % 23 == 7:  # unparsed: no label, no probabilities
            verdicts[it.id] = Verdict(item_id=it.id, label=None)
            continue
        if j % 29 == 3:  # a parsed label without probabilities (a replay)
            verdicts[it.id] = Verdict(item_id=it.id, label=labels[int(np.argmax(p))])
            continue
        verdicts[it.id] = Verdict(
            item_id=it.id,
            label=labels[int(np.argmax(p))],
            prob_positive=float(p[0]) if k == 2 else None,
            label_probs={lab: float(q) for lab, q in zip(labels, p, strict=True)},
        )
    references: dict[str, Any] = {
        it.id: (None if j % 31 == 11 else labels[int(refs[j])]) for j, it in enumerate(items)
    }
    return items, verdicts, references


def _back(items: list[Item], verdicts: dict[str, Verdict], seed: int) -> dict[str, Verdict]:
    """The reversed question's verdicts read back: the main order's log-odds plus noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for it in items:
        v = verdicts.get(it.id)
        p = v.prob_positive if v is not None and v.prob_positive is not None else 0.5
        z = math.log(p) - math.log1p(-p) + float(rng.normal(0.0, 1.0))
        q = 1.0 / (1.0 + math.exp(-z))
        out[it.id] = Verdict(item_id=it.id, label="1" if q > 0.5 else "0", prob_positive=q)
    return out


def _vote(items: list[Item], references: dict[str, Any], seed: int) -> VoteSource:
    """Approved examples mined from every fifth item, vectors scripted (a fake embedding)."""
    rng = np.random.default_rng(seed)
    vecs = {it.id: rng.normal(size=4) for it in items}
    mined = [it for j, it in enumerate(items) if j % 5 == 0 and references[it.id] is not None]
    return VoteSource(
        np.array([vecs[it.id] for it in mined]),
        [references[it.id] for it in mined],
        [it.id for it in mined],
        lambda asked: np.array([vecs[it.id] for it in asked]).reshape(len(asked), -1),
    )


CASES = ("z", "z_reversed", "three_labels", "vote", "logistic", "knn", "dev_split")


def _outputs(case: str) -> dict[str, Any]:
    """What the step gives on ``case``'s pass (the record's date left out)."""
    labels = ("0", "1", "2") if case == "three_labels" else ("1", "0")
    n = 300 if case in ("three_labels", "knn") else 400
    items, verdicts, references = _pass(n, labels, seed=CASES.index(case))
    ids = [it.id for it in items]
    held = frozenset(ids[-50:])  # never fitted on
    dev = frozenset(ids[-100:-50]) if case == "dev_split" else frozenset()
    fit = frozenset(ids[: n - 50 - len(dev)])
    folds = (
        {}
        if case == "dev_split"
        else cross_folds({i: references[i] for i in fit}, {i: "audit" for i in fit}, 5, 0)
    )
    step = PassReadout(
        mode="knn" if case == "knn" else "logistic" if case == "logistic" else "auto",
        labels=labels,
        positive=labels[0] if len(labels) == 2 else None,
        fit_ids=fit,
        references={i: references[i] for i in fit | dev},
        dev_ids=dev,
        not_fit=held | dev,
        vote=_vote(items, references, 7) if case == "vote" else None,
        folds=folds,
    )
    back = _back(items, verdicts, 9) if case == "z_reversed" else None
    got = step.read(items, verdicts, back=back)
    record: dict[str, Any] = {}
    if got.learned is not None:
        record = got.learned.record()
        record.pop("fitted_at", None)
    return {
        "decision": got.decision,
        "labels": dict(sorted(got.labels.items())),
        "out_of_fold": dict(sorted(got.out_of_fold.items())),
        "fold_fit_ids": {str(j): sorted(v) for j, v in sorted(got.fold_fit_ids.items())},
        "record": record,
    }


def _close(got: Any, want: Any, where: str) -> None:
    """``got == want``, floats within 1e-9 (absolute, or relative to a large value)."""
    if isinstance(want, float) and isinstance(got, float | int):
        assert abs(got - want) <= 1e-9 * max(1.0, abs(want)), f"{where}: {got!r} != {want!r}"
    elif isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{where}: keys differ"
        for key in want:
            _close(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: lengths differ"
        for j, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{where}[{j}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("case", CASES)
def test_the_read_out_step_gives_what_it_gave_before(case: str) -> None:
    want = json.loads(PINNED.read_text())[case]
    got = json.loads(json.dumps(_outputs(case)))  # as stored: tuples as lists
    assert want["labels"] or want["decision"], "the pinned case labelled nothing and decided nothing"
    _close(got, want, case)


def test_the_pinned_cases_exercise_what_they_claim() -> None:
    """The fixture's cases are not degenerate: the default case adopts and changes labels, the reversed
    question's case tried z_reversed, the vote case reads the vote, unparsed verdicts stay unlabelled."""
    pinned = json.loads(PINNED.read_text())
    assert "adopted out of fold" in pinned["z"]["decision"]
    assert len(pinned["z"]["out_of_fold"]) > 200
    assert "vote" in pinned["vote"]["record"]["features"]
    assert pinned["three_labels"]["record"]["describe"].startswith("multinomial")
    assert pinned["knn"]["record"]["mode"] == "knn"
    unparsed = {f"i{j:04d}" for j in range(400) if j % 23 == 7 and j % 37 != 5}
    assert unparsed and not unparsed & set(pinned["z"]["labels"])


if __name__ == "__main__":  # rewrite the fixture from the implementation as it is
    PINNED.write_text(json.dumps({c: _outputs(c) for c in CASES}, sort_keys=True) + "\n")
