"""Position-debiased pairwise verdicts: the consistent rule, the logprob mean, and accuracy with undecided items."""

from __future__ import annotations

import pytest

from allure.metrics import debias_pairwise, decided_accuracy, position_by_group


def test_consistent_keeps_only_agreeing_orders_and_never_coerces() -> None:
    # swapped verdicts are in the swapped order's terms: "B" there names original response A
    original = ["A", "A", "B", "tie", None, "A"]
    swapped = ["B", "A", "A", "tie", "A", None]
    d = debias_pairwise(original, swapped, first="A", second="B", mode="consistent")
    assert d.labels == ["A", None, "B", "tie", None, None]
    assert d.status == ["ok", "inconsistent", "ok", "ok", "unparsed", "unparsed"]


def test_logprob_mean_averages_each_label_over_both_orders_mapped_back() -> None:
    # item 1: orig P(A) = 0.65; swapped P(first) = 0.55 names B -> P(A) back = 0.45: mean A 0.55, B 0.45
    # item 2: orig P(A) = 0.4; swapped P(first) = 0.9 -> P(A) back = 0.1: mean A 0.25 -> B
    # item 3: no probabilities in the swapped order: consistent rule (agree on B)
    # item 4: mean exactly 0.5 / 0.5: undecided
    d = debias_pairwise(
        ["A", "B", "B", "A"],
        ["A", "A", "A", "B"],
        first="A",
        second="B",
        mode="logprob_mean",
        original_probs=[
            {"A": 0.65, "B": 0.35},
            {"A": 0.4, "B": 0.6},
            {"A": 0.1, "B": 0.9},
            {"A": 0.6, "B": 0.4},
        ],
        swapped_probs=[{"A": 0.55, "B": 0.45}, {"A": 0.9, "B": 0.1}, None, {"A": 0.6, "B": 0.4}],
    )
    assert d.labels == ["A", "B", "B", None]
    assert d.status == ["ok", "ok", "ok", "inconsistent"]
    assert d.prob_fallback == 1


def test_logprob_mean_gives_integer_labels_back() -> None:
    d = debias_pairwise(
        [1],
        [1],
        first=1,
        second=2,
        mode="logprob_mean",
        original_probs=[{"1": 0.8, "2": 0.2}],
        swapped_probs=[{"1": 0.6, "2": 0.4}],
        labels=[1, 2],
    )
    # mean P(1) = (0.8 + 0.4) / 2 = 0.6
    assert d.labels == [1]


def test_decided_accuracy_counts_undecided_apart_and_as_wrong() -> None:
    ref = ["A", "B", "A", "B", None]
    labels = ["A", None, "B", "B", "A"]
    m = decided_accuracy(ref, labels)
    # 4 items with a reference, 3 decided, 2 right: 2/3 over decided, 2/4 with undecided wrong
    assert (m.n, m.decided) == (4, 3)
    assert m.accuracy_decided == pytest.approx(2 / 3)
    assert m.accuracy_all == pytest.approx(0.5)
    assert m.undecided_share == pytest.approx(0.25)


def test_position_by_group_splits_the_items() -> None:
    got = position_by_group(["A", "A", "B"], ["B", "A", "A"], ["x", "y", "x"], first="A", second="B")
    assert got["x"]["n"] == 2 and got["x"]["consistency"] == 1.0
    assert got["y"]["consistency"] == 0.0 and got["y"]["first_position_rate"] == 1.0
