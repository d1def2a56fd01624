"""Label probabilities from OpenAI-style logprobs: one-token labels with a leading space, labels
spread over several tokens, shared first tokens, and no logprobs."""

from __future__ import annotations

import math

import pytest

from allure.evaluator._parse import label_probs


def tok(token: str, p: float, alts: dict[str, float] | None = None) -> dict:
    return {
        "token": token,
        "logprob": math.log(p),
        "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in (alts or {}).items()],
    }


def test_one_token_labels_with_a_leading_space_are_normalised_over_the_label_set() -> None:
    lp = {
        "content": [
            tok("preference", 0.99),
            tok(":", 0.99),
            tok(" A", 0.6, {" A": 0.6, " B": 0.3, " C": 0.1}),
        ]
    }
    got = label_probs(lp, "A", ["A", "B"])
    # " C" is no label: 0.6 / (0.6 + 0.3) and 0.3 / 0.9
    assert got == pytest.approx({"A": 2 / 3, "B": 1 / 3})


def test_the_same_label_written_with_and_without_a_space_adds_up() -> None:
    lp = {"content": [tok("score", 0.9), tok(":", 0.9), tok(" 1", 0.5, {" 1": 0.5, "1": 0.1, " 2": 0.2})]}
    # label 1: 0.5 + 0.1 = 0.6; label 2: 0.2 -> 0.75 / 0.25
    assert label_probs(lp, 1, [1, 2]) == pytest.approx({"1": 0.75, "2": 0.25})


def test_a_label_spread_over_several_tokens_is_found_and_its_first_token_counts() -> None:
    lp = {
        "content": [
            tok("preference", 0.9),
            tok(":", 0.9),
            tok(" Resp", 0.7, {" Resp": 0.7, " Tie": 0.2}),
            tok("onse", 0.99),
            tok(" 1", 0.8),
        ]
    }
    labels = ["Response 1", "Response 2", "Tie"]
    got = label_probs(lp, "Response 1", labels)
    # "Resp" starts both response labels: it counts for the parsed one only, times the rest of its
    # tokens as written (0.99 * 0.8); "Tie" is a whole label.
    m1, tie = 0.7 * 0.99 * 0.8, 0.2
    assert got == pytest.approx({"Response 1": m1 / (m1 + tie), "Response 2": 0.0, "Tie": tie / (m1 + tie)})


def test_a_first_token_only_one_label_starts_with_counts_for_that_label() -> None:
    lp = {"content": [tok(" yes", 0.4, {" yes": 0.4, " nope": 0.1}), tok("_really", 0.9)]}
    labels = ["yes_really", "nope_not"]
    # "nope" starts only "nope_not": 0.4 / 0.5 and 0.1 / 0.5
    assert label_probs(lp, "yes_really", labels) == pytest.approx({"yes_really": 0.8, "nope_not": 0.2})


def test_no_logprobs_no_label_or_no_label_token_give_none() -> None:
    lp = {"content": [tok(" A", 0.6, {" A": 0.6, " B": 0.4})]}
    assert label_probs(None, "A", ["A", "B"]) is None
    assert label_probs({"content": []}, "A", ["A", "B"]) is None
    assert label_probs(lp, None, ["A", "B"]) is None
    assert label_probs(lp, "B", ["A", "B"]) is None  # the output never spells B
