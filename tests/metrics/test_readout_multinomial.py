"""The learned read-out beyond two labels and for a pair's two orders (issue 34 item 3): the features
(per-label log-probabilities, the swapped order read back), the multinomial fit, its shuffled-label
control, and a learned position correction that beats either order alone."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from allure.labels import Label
from allure.metrics import fit_readout, label_log_probs, objective_value
from allure.models import Item, Verdict
from allure.passes.readout import (
    PassReadout,
    ReadoutInputMissing,
    VoteSource,
    fit_learned_readout,
    probability_features,
)

GRADES = [1, 2, 3]


def test_label_log_probs_are_normalised_and_fall_back_to_the_parsed_label() -> None:
    row = label_log_probs({"1": 0.2, "2": 0.2, "3": 0.4}, GRADES, 3)
    assert row == pytest.approx([math.log(0.25), math.log(0.25), math.log(0.5)])
    # no probabilities: the softmax of +2 on the parsed label (log-odds 2 against each other label)
    fb = label_log_probs(None, GRADES, 2)
    assert fb[1] - fb[0] == pytest.approx(2.0) and fb[0] == pytest.approx(fb[2])
    assert label_log_probs({"1": 0.0, "2": 0.0, "3": 0.0}, GRADES, 2) == fb
    assert label_log_probs(None, GRADES, None) == pytest.approx([math.log(1 / 3)] * 3)
    assert label_log_probs({"1": 1.0}, GRADES, 1) == [0.0, -12.0, -12.0]  # a zero clipped at -Z_LIMIT
    assert probability_features(GRADES, swapped=True) == (
        "lp[1]",
        "lp[2]",
        "lp[3]",
        "lp_swap[1]",
        "lp_swap[2]",
        "lp_swap[3]",
    )
    assert probability_features(["A", "B"], swapped=True) == ("z", "z_swap")


def _lenient(n: int, seed: int) -> tuple[list[int], np.ndarray]:
    """A 1..3 judge that puts most of its mass one grade above the truth (3 stays 3): its own argmax is
    wrong on every 1 and 2, while its log-probabilities say the truth linearly."""
    rng = np.random.default_rng(seed)
    y = [int(g) for g in rng.choice(GRADES, size=n)]
    rows = []
    for g in y:
        logits = rng.normal(0, 0.6, size=3)
        logits[min(g, 3) - 1 + (1 if g < 3 else 0)] += 2.0  # the peak: one above the truth
        logits[g - 1] += 1.0
        p = np.exp(logits) / np.exp(logits).sum()
        rows.append(label_log_probs({str(k): float(q) for k, q in zip(GRADES, p, strict=True)}, GRADES, None))
    return y, np.array(rows)


def test_a_multinomial_read_out_undoes_a_lenient_judge() -> None:
    y, x = _lenient(600, 0)
    features = probability_features(GRADES, swapped=False)
    model = fit_readout(x[:300], y[:300], features)
    assert model is not None and len(model.coef) == 3 and model.labels == ("1", "2", "3")
    assert model.describe().startswith("multinomial logistic on lp[1], lp[2], lp[3]: w[1] = (")
    parsed = [GRADES[int(j)] for j in np.argmax(x[300:], axis=1)]
    read = [int(p) for p in model.predict(x[300:])]
    ba_parsed = objective_value(y[300:], parsed, labels=GRADES)
    ba_read = objective_value(y[300:], read, labels=GRADES)
    assert ba_parsed is not None and ba_read is not None
    assert ba_parsed < 0.5 and ba_read > 0.8 and model.cv_score is not None and model.cv_score > 0.8


def test_the_multinomial_shuffled_label_control_scores_chance() -> None:
    """Fitted on permuted labels, the multinomial read-out scores chance (1/3 balanced accuracy for three
    labels) on held-back items, as a mean over permutations; the real labels score far above it."""
    y, x = _lenient(400, 1)
    features = probability_features(GRADES, swapped=False)
    scores = []
    for r in range(20):
        shuffled = random.Random(r).sample(y[:200], 200)
        model = fit_readout(x[:200], shuffled, features, seed=r, grid=(1.0,))  # the fit, not the C choice
        assert model is not None
        got = objective_value(y[200:], [int(p) for p in model.predict(x[200:])], labels=GRADES)
        assert got is not None
        scores.append(got)
    assert abs(float(np.mean(scores)) - 1 / 3) < 0.06
    real = fit_readout(x[:200], y[:200], features, grid=(1.0,))
    assert real is not None
    real_score = objective_value(y[200:], [int(p) for p in real.predict(x[200:])], labels=GRADES)
    assert real_score is not None and real_score > max(scores) + 0.1


def _verdict(i: str, probs: dict[str, float] | None, label: object) -> Verdict:
    return Verdict(item_id=i, label=label, label_probs=probs)  # type: ignore[arg-type]


def test_fit_learned_readout_beyond_two_labels_reads_each_verdicts_label_probabilities() -> None:
    y, x = _lenient(160, 2)
    items = [Item(id=f"i{k}", task="t", response="r") for k in range(160)]
    verdicts = {}
    for k, it in enumerate(items):
        probs = {str(g): float(math.exp(v)) for g, v in zip(GRADES, x[k], strict=True)}
        top = GRADES[int(np.argmax(x[k]))]
        # every tenth verdict came without logprobs: it reads as its parsed label (candidate 0)
        verdicts[it.id] = _verdict(it.id, None if k % 10 == 0 else probs, top)
    refs = {it.id: y[k] for k, it in enumerate(items)}
    learned = fit_learned_readout(
        "logistic",
        items[:100],
        verdicts,
        refs,
        labels=GRADES,
        positive=None,
        not_fit={i.id for i in items[100:]},
    )
    assert (
        learned is not None and learned.features == ("lp[1]", "lp[2]", "lp[3]") and learned.positive is None
    )
    out = learned.apply(items, verdicts)
    assert set(out.values()) <= set(GRADES)  # labels of the label set's own type, not strings
    held = [i.id for i in items[100:]]
    read = objective_value([refs[i] for i in held], [out[i] for i in held], labels=GRADES)
    parsed = objective_value([refs[i] for i in held], [verdicts[i].label for i in held], labels=GRADES)
    assert read is not None and parsed is not None and read > parsed + 0.3
    rec = learned.record()
    assert rec["features"] == ["lp[1]", "lp[2]", "lp[3]"] and len(rec["coef"]) == 3 and "positive" not in rec
    knn = fit_learned_readout(
        "knn", items[:100], verdicts, refs, labels=GRADES, positive=None, not_fit={i.id for i in items[100:]}
    )
    assert knn is not None and knn.features == learned.features and len(knn.knn_x[0]) == 3


def _p(z: float) -> dict[str, float]:
    p = 1 / (1 + math.exp(-z))
    return {"A": p, "B": 1 - p}


def _pairs(n: int, seed: int) -> tuple[list[Item], dict[str, Verdict], dict[str, Verdict], dict[str, str]]:
    """A position-biased pairwise judge: the log-odds of "the response shown first is better" is a
    position bias that varies by pair (0.4 + N(0, 1)) plus +-0.8 towards the truth; the swapped order's
    verdicts are in that order's own terms ("A": the response shown first there, B)."""
    rng = np.random.default_rng(seed)
    items, main, swapped, refs = [], {}, {}, {}
    for k in range(n):
        truth = "A" if rng.random() < 0.5 else "B"
        bias, s = 0.4 + float(rng.normal(0, 1.0)), 0.8 if truth == "A" else -0.8
        it = Item(id=f"p{k}", task="t", response="a", response_b="b")
        items.append(it)
        refs[it.id] = truth
        main[it.id] = _verdict(it.id, _p(bias + s), "A" if bias + s > 0 else "B")
        swapped[it.id] = _verdict(it.id, _p(bias - s), "A" if bias - s > 0 else "B")
    return items, main, swapped, refs


def test_a_pairwise_read_out_learns_the_position_correction_from_both_orders() -> None:
    """Both orders as features cancel a position bias that varies by pair: the read-out beats each
    order's own labels and a read-out fitted on either order's log-odds alone."""
    items, main, swapped, refs = _pairs(400, 3)
    fit, rest = items[:200], [it.id for it in items[200:]]
    learned = fit_learned_readout(
        "logistic", fit, main, refs, labels=["A", "B"], positive=None, not_fit=set(rest), swapped=swapped
    )
    assert learned is not None and learned.features == ("z", "z_swap") and learned.positive == "A"
    assert learned.reads_swapped and learned.fitted is not None
    w = learned.fitted.coef[0]
    assert w[0] * w[1] > 0 and 0.5 < w[0] / w[1] < 2  # learned: both orders weigh alike once read back
    out = learned.apply(items, main, swapped)
    cols = learned.columns(items, main, swapped)
    y = [refs[i] for i in rest]
    back = {"A": "B", "B": "A"}

    def ba(labels: Sequence[Label | None]) -> float:
        got = objective_value(y, labels, labels=["A", "B"])
        assert got is not None
        return got

    one = {}
    for f in ("z", "z_swap"):
        alone = fit_readout(np.array(cols[f][:200])[:, None], [refs[i.id] for i in fit], [f])
        assert alone is not None
        one[f] = ba(alone.predict(np.array(cols[f][200:])[:, None]))
    ba_read = ba([out[i] for i in rest])
    ba_main = ba([main[i].label for i in rest])
    ba_swap = ba([back[str(swapped[i].label)] for i in rest])
    assert ba_read > 0.97 and ba_read > max(ba_main, ba_swap, *one.values()) + 0.1
    with pytest.raises(ReadoutInputMissing, match="both orders"):
        learned.apply(items, main)


def test_the_swapped_order_is_read_back_to_the_main_orders_labels_beyond_two_labels() -> None:
    labels = ["A", "B", "tie"]
    items = [Item(id=f"q{k}", task="t", response="a", response_b="b") for k in range(40)]
    main = {it.id: _verdict(it.id, {"A": 0.5, "B": 0.3, "tie": 0.2}, "A") for it in items}
    swapped = {it.id: _verdict(it.id, {"A": 0.7, "B": 0.2, "tie": 0.1}, "A") for it in items}
    refs = {it.id: labels[k % 3] for k, it in enumerate(items)}
    learned = fit_learned_readout(
        "logistic", items, main, refs, labels=labels, positive=None, not_fit=set(), swapped=swapped
    )
    assert learned is not None
    cols = learned.columns(items[:1], main, swapped)
    # the swapped order's "A" (the response shown first there) is the main order's "B"
    assert cols["lp_swap[B]"][0] == pytest.approx(math.log(0.7))
    assert cols["lp_swap[A]"][0] == pytest.approx(math.log(0.2))
    assert cols["lp_swap[tie]"][0] == pytest.approx(math.log(0.1))
    assert cols["lp[A]"][0] == pytest.approx(math.log(0.5))


def test_the_bundle_carries_a_logistic_read_out_with_its_voters_and_refuses_knn() -> None:
    """What ``allure judge export`` carries (unit level: a stand-in for the run's record)."""
    from types import SimpleNamespace

    from allure.errors import JudgeError
    from allure.judge._readout import applied_readout, fixed_readout, readout_json
    from allure.metrics import ReadoutRecord

    items, main, swapped, refs = _pairs(80, 4)
    learned = fit_learned_readout(
        "logistic", items, main, refs, labels=["A", "B"], positive=None, not_fit=set(), swapped=swapped
    )
    assert learned is not None

    def src(rec: dict[str, object]) -> Any:
        return SimpleNamespace(iteration=1, run=SimpleNamespace(id="r1", info={"readout_1": rec}))

    rec = learned.record()
    assert applied_readout(src(rec)) == ReadoutRecord.read(rec)  # a stored record read back typed
    carried = fixed_readout(readout_json(ReadoutRecord.model_validate(rec), None), ["A", "B"], "bundle")
    assert carried.features == ("z", "z_swap") and carried.positive == "A" and carried.reads_swapped
    assert carried.apply(items, main, swapped) == learned.apply(items, main, swapped)
    for other in ({**rec, "mode": "knn"}, {**rec, "features": ["z", "z_reversed"]}):
        with pytest.raises(JudgeError, match="read-out with"):
            applied_readout(src(other))
    with pytest.raises(JudgeError, match="does not fit this judge"):
        fixed_readout(readout_json(ReadoutRecord.model_validate(rec), None), ["A", "B", "tie"], "bundle")
    # a read-out on the vote: carried with its voters (vote.json), refused without them
    voted = {**rec, "features": ["z", "z_swap", "vote"], "coef": [[0.5, -0.5, 2.0]]}
    assert applied_readout(src(voted)) is not None
    text = readout_json(ReadoutRecord.model_validate(voted), None)
    with pytest.raises(JudgeError, match="has no vote.json"):
        fixed_readout(text, ["A", "B"], "bundle")
    import hashlib

    def sha(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    voters = json.dumps(
        {
            "voters": [
                {"item_id": "p0", "response_sha256": sha("first"), "label": "A", "vector": [1.0, 0.0]},
                {"item_id": "p1", "response_sha256": sha("second"), "label": "B", "vector": [0.0, 1.0]},
            ]
        }
    )
    with_vote = fixed_readout(text, ["A", "B"], "bundle", voters)
    vote = with_vote.vote
    assert vote is not None and vote.labels == ["A", "B"] and vote.vectors.dtype == np.float32
    # an item is a voter's own only with the voter's item's id and response (new data may reuse ids)
    assert vote.own_key(Item(id="p0", task="t", response="first")) == vote.item_ids[0]
    assert vote.own_key(Item(id="p0", task="t", response="another")) not in vote.item_ids
    bad = json.dumps({"voters": [{"item_id": "p0", "response_sha256": "", "label": "tie", "vector": [1.0]}]})
    with pytest.raises(JudgeError, match="voters do not fit"):
        fixed_readout(text, ["A", "B"], "bundle", bad)


def test_auto_adopts_a_multinomial_read_out_only_when_it_is_better_on_dev() -> None:
    y, x = _lenient(300, 5)
    items = [Item(id=f"i{k}", task="t", response="r") for k in range(300)]
    verdicts = {
        it.id: _verdict(
            it.id,
            {str(g): float(math.exp(v)) for g, v in zip(GRADES, x[k], strict=True)},
            GRADES[int(np.argmax(x[k]))],
        )
        for k, it in enumerate(items)
    }
    refs = {it.id: y[k] for k, it in enumerate(items)}
    fit, dev = {i.id for i in items[:150]}, {i.id for i in items[150:]}

    def step(dev_ids: set[str]) -> PassReadout:
        return PassReadout(
            mode="auto",
            labels=tuple(GRADES),
            positive=None,
            fit_ids=frozenset(fit),
            references={i: refs[i] for i in fit | dev_ids},
            dev_ids=frozenset(dev_ids),
            not_fit=frozenset(dev),
        )

    good = step(dev).read(items, verdicts)
    out = good.labels
    assert out and good.learned is not None and "adopted on dev" in good.decision
    assert good.learned.features == ("lp[1]", "lp[2]", "lp[3]") and set(out.values()) <= set(GRADES)
    tiny = step(set(sorted(dev)[:12])).read(items, verdicts)  # a handful of each label cannot tell
    assert tiny.labels == {} and tiny.learned is None and "holds" in tiny.decision


def test_beyond_two_labels_the_memory_votes_once_per_label_and_never_for_the_item_itself() -> None:
    y, x = _lenient(90, 6)
    items = [Item(id=f"i{k}", task="t", response="r") for k in range(90)]
    verdicts = {
        it.id: _verdict(it.id, {str(g): float(math.exp(v)) for g, v in zip(GRADES, x[k], strict=True)}, 1)
        for k, it in enumerate(items)
    }
    refs = {it.id: y[k] for k, it in enumerate(items)}
    # one approved example per item of the first 30, its embedding one-hot on its own grade
    vectors = np.array([np.eye(3)[y[k] - 1] for k in range(30)])
    vote = VoteSource(
        vectors,
        [y[k] for k in range(30)],
        [f"i{k}" for k in range(30)],
        lambda its: np.array([np.eye(3)[refs[it.id] - 1] for it in its]),
    )
    learned = fit_learned_readout(
        "logistic", items[:60], verdicts, refs, labels=GRADES, positive=None, not_fit=set(), vote=vote
    )
    assert learned is not None
    assert learned.features == ("lp[1]", "lp[2]", "lp[3]", "vote[1]", "vote[2]", "vote[3]")
    cols = learned.columns(items, verdicts)
    shares = np.array([cols[f"vote[{g}]"] for g in GRADES]).T
    assert np.allclose(shares.sum(axis=1), 1.0)
    assert [GRADES[int(j)] for j in shares.argmax(axis=1)] == y  # the nearest examples share the grade
    # two examples in one direction: item i0's own (grade 1) and i1's (grade 2); i0 hears only i1
    two = VoteSource(
        np.array([[1.0, 0, 0], [1.0, 0, 0]]), [1, 2], ["i0", "i1"], lambda its: np.ones((len(its), 3))
    )
    heard = replace(learned, vote=two).columns([items[0], items[2]], verdicts)
    assert [heard[f"vote[{g}]"] for g in GRADES] == [[0.0, 0.5], [1.0, 0.5], [0.0, 0.0]]
