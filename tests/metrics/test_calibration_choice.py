"""``calibration = "auto"``: the mode is chosen on dev by the objective, a collapse to one label is refused."""

from __future__ import annotations

import pytest

from allure.metrics import choose_calibration, collapsed

REFS = ["yes", "no", "no", "no", "yes", "no", "no", "no", "no", "yes"]


def test_a_mode_that_answers_one_label_everywhere_is_refused_even_when_it_scores_higher() -> None:
    # the parsed judge is worse than chance (balanced accuracy 0.333 + 0.286... < 0.5); "all no" scores 0.5
    worse = ["no", "yes", "yes", "no", "no", "yes", "no", "yes", "no", "no"]
    all_no = ["no"] * len(REFS)
    pick = choose_calibration({"none": worse, "prior": all_no}, REFS, labels=["yes", "no"], alpha=None)
    assert pick.scores["prior"] == pytest.approx(0.5)
    assert pick.scores["none"] is not None and pick.scores["none"] < 0.5
    assert pick.refused == ("prior",)
    assert pick.mode == "none"
    assert "refused prior" in pick.describe()


def test_the_best_mode_by_balanced_accuracy_wins_not_the_best_by_accuracy() -> None:
    # "offset" says "no" but once: accuracy 0.8, balanced accuracy 0.667;
    # "contextual" finds every "yes" with two false alarms: accuracy 0.8, balanced accuracy 0.857
    offset = ["no", "no", "no", "no", "yes", "no", "no", "no", "no", "no"]
    contextual = ["yes", "yes", "no", "no", "yes", "yes", "no", "no", "no", "yes"]
    parsed = ["no", "no", "no", "no", "no", "no", "no", "no", "yes", "yes"]
    pick = choose_calibration(
        {"none": parsed, "offset": offset, "contextual": contextual}, REFS, labels=["yes", "no"], alpha=None
    )
    assert list(pick.scores) == ["none", "contextual", "offset"]  # simplest first
    assert pick.mode == "contextual"
    acc = choose_calibration(
        {"none": parsed, "offset": offset, "contextual": contextual},
        REFS,
        labels=["yes", "no"],
        objective="accuracy",
        alpha=None,
    )
    assert acc.scores["offset"] == acc.scores["contextual"] == pytest.approx(0.8)
    assert acc.mode == "contextual"  # a tie goes to the simpler mode


def test_none_is_kept_when_no_mode_is_strictly_better() -> None:
    same = list(REFS)
    pick = choose_calibration(
        {"none": same, "contextual": same, "prior": same}, REFS, labels=["yes", "no"], alpha=None
    )
    assert pick.mode == "none" and pick.refused == ()


def test_without_dev_references_nothing_is_scored_and_none_is_kept() -> None:
    pick = choose_calibration(
        {"none": ["yes", "no"], "contextual": ["no", "no"]}, [None, None], labels=["yes", "no"]
    )
    assert pick.mode == "none" and pick.n == 0 and pick.scores == {"none": None, "contextual": None}


def test_collapse_needs_two_reference_labels_and_ignores_unparsed() -> None:
    assert collapsed(["no", "no", None], ["yes", "no", "no"])
    assert not collapsed(["no", "yes", None], ["yes", "no", "no"])
    assert not collapsed(["no", "no"], ["no", "no"])  # dev holds one label: nothing to collapse


def test_a_mode_must_be_shown_better_on_dev_before_it_replaces_the_parsed_labels() -> None:
    """Issue 34: the best mode on a dev split too small to tell (3 "yes") or by a non-significant rise
    keeps the parsed labels; a clear rise on enough items of each label is applied."""
    refs = ["yes"] * 3 + ["no"] * 27
    parsed = ["no"] * 30
    small = choose_calibration(
        {"none": parsed, "contextual": ["yes"] + ["no"] * 29}, refs, labels=["yes", "no"]
    )
    assert small.mode == "none" and "3 'yes' items" in small.evidence and "kept none" in small.describe()
    refs = ["yes"] * 20 + ["no"] * 20
    parsed = ["no"] * 40
    noisy = ["yes"] * 2 + ["no"] * 38
    clear = ["yes"] * 14 + ["no"] * 26
    assert choose_calibration({"none": parsed, "prior": noisy}, refs, labels=["yes", "no"]).mode == "none"
    assert choose_calibration({"none": parsed, "prior": clear}, refs, labels=["yes", "no"]).mode == "prior"
