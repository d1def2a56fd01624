"""``ReplyReader.read`` (the pass's reading, shapes remembered) gives what ``prob_positive`` and
``label_probs`` (the definitions) give, bit for bit, for any reply: random tokens drawn from label
forms, their pieces, spaces and punctuation, random logprobs, replies seen again with new numbers."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allure.evaluator._parse import ReplyReader, label_probs, prob_positive

LABEL_SETS = [
    [0, 1],
    ["yes", "no"],
    ["A", "B", "C"],
    ["Response 1", "Response 2"],
    ["pass", "passable", "fail"],
    ["no", "no way", "yes"],
]
PIECES = ["0", "1", " 0", " 1", "yes", " yes", "no", " no", "A", " A", "B.", " B", "C", "Response", " Response",
          " 1", " 2", "pass", "able", " fail", "fa", "il", ":", " ", "\n", "score", " score", "yes\n", "10", None]  # fmt: skip

logprob = st.one_of(st.none(), st.floats(min_value=-30, max_value=0, allow_nan=False))
alternative = st.fixed_dictionaries({"token": st.sampled_from(PIECES), "logprob": logprob})
token = st.fixed_dictionaries(
    {
        "token": st.sampled_from(PIECES),
        "logprob": logprob,
        "top_logprobs": st.lists(alternative, max_size=5),
    }
)


@st.composite
def reply(draw: st.DrawFn, labels: list) -> tuple[list[dict], object]:
    """Tokens around a label spelled in one or more pieces (a leading space or not), alternatives
    at each token drawn from label forms, their first pieces and other text."""
    label = draw(st.sampled_from(labels))
    form = draw(st.sampled_from(["", " "])) + str(label)
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(1, len(form) - 1)), max_size=2)))
    spelled = [form[a:b] for a, b in zip([0, *cuts], [*cuts, len(form)], strict=True) if form[a:b]]
    forms = [str(x) for x in labels]
    # at the label's tokens, alternatives are mostly label forms and their first pieces
    near = [
        *forms,
        *(" " + f for f in forms),
        *spelled,
        *(f + "." for f in forms),
        *(f + "x" for f in forms),
        *(f[:k] for f in forms for k in (1, 3, 5, 8) if k < len(f)),
    ]
    alt = st.fixed_dictionaries(
        {"token": st.one_of(st.sampled_from(near), st.sampled_from(PIECES)), "logprob": logprob}
    )
    made = [
        {"token": t, "logprob": draw(logprob), "top_logprobs": draw(st.lists(alt, min_size=2, max_size=5))}
        for t in spelled
    ]
    before = draw(st.lists(token, max_size=3))
    after = draw(st.lists(token, max_size=2))
    return before + made + after, label


READERS: dict[tuple, ReplyReader] = {}


def label_probabilities(lp, label, labels, positive, negative):
    """One reader per label set for the whole test run: shapes seen by earlier examples are remembered."""
    key = (tuple(labels), positive, negative)
    reader = READERS.setdefault(key, ReplyReader(labels, positive, negative))
    return reader.read(lp, label)


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    labels=st.sampled_from(LABEL_SETS),
    content=st.lists(token, min_size=1, max_size=8),
    pick=st.integers(min_value=0, max_value=2),
    numbers=st.lists(logprob, min_size=50, max_size=50),
)
def test_the_pass_reading_is_the_definitions(labels, content, pick, numbers) -> None:
    label = labels[pick % len(labels)]
    positive, negative = (labels[-1], labels[0]) if len(labels) == 2 else (labels[-1], None)
    lp = {"content": content}
    expected = (prob_positive(lp, label, positive, negative), label_probs(lp, label, labels))
    assert same(label_probabilities(lp, label, labels, positive, negative), expected)
    # the same shape again with other numbers: what was remembered of the shape must not carry numbers
    it = iter(numbers)
    for tok in content:
        tok["logprob"] = next(it)
        for alt in tok["top_logprobs"]:
            alt["logprob"] = next(it, -1.0)
    expected = (prob_positive(lp, label, positive, negative), label_probs(lp, label, labels))
    assert same(label_probabilities(lp, label, labels, positive, negative), expected)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    data=st.data(), labels=st.sampled_from(LABEL_SETS), numbers=st.lists(logprob, min_size=50, max_size=50)
)
def test_labels_spelled_in_pieces_read_the_same(data, labels, numbers) -> None:
    content, label = data.draw(reply(labels))
    positive, negative = (labels[-1], labels[0]) if len(labels) == 2 else (labels[-1], None)
    lp = {"content": content}
    for _ in range(2):  # the same shape again with other numbers
        expected = (prob_positive(lp, label, positive, negative), label_probs(lp, label, labels))
        assert same(label_probabilities(lp, label, labels, positive, negative), expected)
        it = iter(numbers)
        for tok in content:
            tok["logprob"] = next(it, -0.5)
            for alt in tok["top_logprobs"]:
                alt["logprob"] = next(it, -1.0)


def test_no_logprobs_or_no_label_reads_nothing() -> None:
    assert label_probabilities(None, 1, [0, 1], 1, 0) == (None, None)
    assert label_probabilities({"content": []}, 1, [0, 1], 1, 0) == (None, None)
    assert label_probabilities({"content": [{"token": "1", "logprob": 0.0}]}, None, [0, 1], 1, 0) == (
        None,
        None,
    )


def test_an_unusual_reply_is_read_by_the_definitions() -> None:
    # a token that is a list (unhashable): no shape is remembered, the definitions read it
    lp = {"content": [{"token": ["1"], "logprob": 0.0}, {"token": " 1", "logprob": -0.1, "top_logprobs": []}]}
    assert label_probabilities(lp, 1, [0, 1], 1, 0) == (
        prob_positive(lp, 1, 1, 0),
        label_probs(lp, 1, [0, 1]),
    )


def test_the_remembered_shapes_are_bounded() -> None:
    reader = ReplyReader([0, 1], 1, 0)
    reader.MAX_SHAPES = 3
    for i in range(10):
        tok = {
            "token": f" {i % 2}",
            "logprob": -0.1,
            "top_logprobs": [{"token": f" {i % 2}", "logprob": -0.1}],
        }
        reader.read({"content": [{"token": f"w{i}", "logprob": 0.0}, tok]}, i % 2)
        assert 1 <= len(reader._places) <= 3


def test_a_label_with_punctuation_counts_for_the_longest_label_it_spells() -> None:
    labels = ["no", "no way", "yes"]
    alts = [{"token": " no way.", "logprob": math.log(0.5)}, {"token": " yes", "logprob": math.log(0.3)}]
    lp = {"content": [{"token": " no way.", "logprob": math.log(0.5), "top_logprobs": alts}]}
    got = ReplyReader(labels, None, None).read(lp, "no way")
    assert got == (None, label_probs(lp, "no way", labels))
    assert got[1] is not None and got[1]["no way"] == 0.5 / 0.8 and got[1]["no"] == 0.0
