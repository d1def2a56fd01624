"""A label written in several tokens still gets an AUC of its probabilities, not of its hard labels.

``prob_positive`` reads the probabilities at one token, so a judge answering ``not_entailment``
(``not``, ``_ent``, ``ail``, ``ment``) had none and every report ranked its hard labels: the AUC
was the balanced accuracy again (RTE in bench_loop). :meth:`Verdict.positive_score` falls back to
the two labels' ``label_probs``.
"""

from __future__ import annotations

import math

import pytest

from allure.evaluator._parse import label_probs, prob_positive
from allure.metrics import compute_metrics
from allure.models import Verdict

LABELS = ("entailment", "not_entailment")


def _reply(label: str, p_entail: float) -> dict:
    """Logprobs of a reply ``label: <label>`` whose label is written in several tokens; at the
    label's first token the judge put ``p_entail`` on ``ent`` (entailment) and the rest on ``not``."""
    first = "not" if label == "not_entailment" else "ent"
    rest = ["_ent", "ail", "ment"] if label == "not_entailment" else ["ail", "ment"]
    top = [
        {"token": " ent", "logprob": math.log(p_entail)},
        {"token": " not", "logprob": math.log(1.0 - p_entail)},
    ]
    chosen = next(t for t in top if t["token"].strip() == first)
    return {
        "content": [
            {"token": "label", "logprob": -0.01, "top_logprobs": []},
            {"token": ":", "logprob": -0.01, "top_logprobs": []},
            {**chosen, "top_logprobs": top},
            *({"token": t, "logprob": 0.0, "top_logprobs": []} for t in rest),
        ]
    }


def _verdict(label: str, p_entail: float) -> Verdict:
    lp = _reply(label, p_entail)
    return Verdict(
        item_id="x",
        label=label,
        prob_positive=prob_positive(lp, label, "not_entailment", "entailment"),
        label_probs=label_probs(lp, label, LABELS),
    )


def test_a_multi_token_label_has_no_prob_positive_but_a_positive_score() -> None:
    v = _verdict("not_entailment", 0.3)
    assert v.prob_positive is None  # the one-token reading finds no "not_entailment" token
    assert v.label_probs is not None
    assert v.positive_score(LABELS, "not_entailment") == pytest.approx(0.7)
    assert v.positive_score(LABELS, "entailment") == pytest.approx(0.3)


def test_prob_positive_wins_where_there_is_one() -> None:
    v = Verdict(item_id="x", label=1, prob_positive=0.9, label_probs={"0": 0.5, "1": 0.5})
    assert v.positive_score((0, 1), 1) == 0.9


@pytest.mark.parametrize(
    ("labels", "positive", "probs"),
    [
        (LABELS, None, {"entailment": 0.4, "not_entailment": 0.6}),  # no positive label
        (("a", "b", "c"), "a", {"a": 0.2, "b": 0.3, "c": 0.5}),  # more than two labels
        (LABELS, "not_entailment", None),  # no logprobs
        (LABELS, "not_entailment", {"entailment": 0.4}),  # the other label's probability missing
        (LABELS, "neutral", {"entailment": 0.4, "not_entailment": 0.6}),  # not one of the labels
    ],
)
def test_no_score_without_two_labels_probabilities(labels, positive, probs) -> None:
    v = Verdict(item_id="x", label=labels[0], label_probs=probs)
    assert v.positive_score(labels, positive) is None


def test_the_auc_ranks_the_probabilities_of_a_judge_that_says_one_label() -> None:
    """The RTE case: the judge says not_entailment to every item, but leans less to it on the items
    that are entailments. The hard labels' AUC is 0.5; the probabilities rank every item right."""
    truth = ["entailment"] * 4 + ["not_entailment"] * 4
    leans = [0.45, 0.40, 0.35, 0.30, 0.20, 0.15, 0.10, 0.05]  # P(entailment) the judge gave each
    vs = [_verdict("not_entailment", p) for p in leans]
    pred = [v.label for v in vs]
    hard = compute_metrics(truth, pred, labels=LABELS, pos_label="not_entailment", n_resamples=10)
    assert (hard.auc, hard.auc_source) == (0.5, "hard_labels")
    ranked = compute_metrics(
        truth,
        pred,
        labels=LABELS,
        pos_label="not_entailment",
        prob_positive=[v.positive_score(LABELS, "not_entailment") for v in vs],
        n_resamples=10,
    )
    assert ranked.auc_source == "logprobs"
    assert ranked.auc == pytest.approx(1.0)
    assert ranked.balanced_accuracy == pytest.approx(0.5)


def test_a_pass_report_ranks_the_label_probabilities() -> None:
    """The wiring: a pass's split metrics (``metrics_for``, what report.json says) use the fallback."""
    from types import SimpleNamespace

    from allure.graphs.passes import metrics_for
    from allure.models import Item

    truth = ["entailment"] * 4 + ["not_entailment"] * 4
    leans = [0.45, 0.40, 0.35, 0.30, 0.20, 0.15, 0.10, 0.05]
    items = [Item(id=f"i{k}", task="t", response="r") for k in range(8)]
    spec = SimpleNamespace(
        label_set=list(LABELS),
        positive_label="not_entailment",
        loop=SimpleNamespace(bootstrap_resamples=10, seed=0),
    )
    ctx = SimpleNamespace(
        spec=spec,
        items=lambda run_id: items,
        verdicts=lambda run_id, it: {
            x.id: _verdict("not_entailment", p).model_copy(update={"item_id": x.id})
            for x, p in zip(items, leans, strict=True)
        },
        references=lambda run_id: {x.id: t for x, t in zip(items, truth, strict=True)},
        splits=lambda run_id: {x.id: "heldout" if k % 2 else "audit" for k, x in enumerate(items)},
        dev_ids=lambda run_id: set(),
    )
    held = metrics_for(ctx, "run", 1)["heldout"]  # type: ignore[arg-type]
    assert held.auc_source == "logprobs"
    assert held.auc == pytest.approx(1.0)
