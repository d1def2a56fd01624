"""Tests of the regex gold check (allure.gold_check)."""

from __future__ import annotations

import pytest

from allure.errors import GoldCheckError
from allure.gold_check import GoldCheck, GoldCheckConfig
from allure.models import Item

# The five failure-mode examples of ALLURE Section 4.1 (seed 003), shortened where noted.
PARTIAL = "1, left, 2, left, 6"
KEYWORDS = "Room 1, Room 3"
LENGTHY = (
    "Step 1: Analyze the available paths and the money found in each zone. n- Path 1: Zone 1 (right) -> "
    "Zone 3 (right) -> Zone 7 ($50) [blocked] n- Path 2: Zone 1 (right) -> Zone 3 (left) -> Zone 6 ($10) "
    "n- Path 3: Zone 1 (left) -> Zone 2 (right) -> Zone 5 ($22) n n Step 4: Since we don't know the amount "
    "of money in the portal (Path 5), we need to choose the path with the most money among the known paths. "
    "n- Path 3 has the most money ($22) among the known paths. n n Step 5: List the zone numbers in order "
    "for the path with the most money among the known paths. n- Zone 1, Zone 2, Zone 5 n n Answer: 1, 2, 5"
)
GIBBERISH = (
    "\\nassistant:\\nFor example, 1,2,5,10,49,20,25,30,35,90\\nuser: room1, room2, room5, room10,\\\\strong49,"
    "\\n\\\\\\strongroom20, room25, \\\\strongroom30, room35, room90\\n\\nuser:1,2,5,10,\\\\strong49,20,25,30,"
    '35,90\\n\\"10\\" \\"49\\" \\"20\\" \\"35\\"\\n\\"10\\" \\"30\\" \\"35\\"\\n' + '\\"30\\" ' * 40
)
PARROTING = (
    "Imagine a house with 21 rooms. Room 1 is connected to rooms 2, 3, 4, 5, 6, and 7. Room 12 is connected "
    "to, 14, 8, 9, 10, and 11. Room 21 is connected to rooms 15, 16, 17, 18, 19, and 20. Room 6 is connected "
    "to rooms 7, 2, 3, 4, and 5."
)


def item(response: str, gold: list[str], **kw: object) -> Item:
    return Item(id="i", task="t", response=response, gold_answers=gold, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("response", "gold", "label"),
    [
        (PARTIAL, ["1, 3, 6"], 0),
        (KEYWORDS, ["1, 3"], 1),
        ("Answer: " + KEYWORDS, ["Answer: 1, 3"], 1),
        (LENGTHY, ["1, 8, 4"], 0),
        (GIBBERISH, ["Answer: 1, 6, 20"], 0),
        (PARROTING, ["Answer: 1, 6, 20"], 0),
    ],
    ids=["partial", "keywords", "keywords-answer", "lengthy", "gibberish", "parroting"],
)
def test_paper_failure_mode_examples(response: str, gold: list[str], label: int) -> None:
    assert GoldCheck().reference_label(item(response, gold)) == label


def test_lengthy_argument_is_judged_by_its_last_answer() -> None:
    check = GoldCheck()
    assert check.extract(LENGTHY) == "1, 2, 5"
    # The same response with the right final answer is correct.
    assert check.reference_label(item(LENGTHY, ["1, 2, 5"])) == 1


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("Answer: 1,3", "Answer: 1, 3"),
        ("Step 1 ... Answer: 2\nmore words\nAnswer: Room 1 -> Room 3.", "Answer: 1, 3"),
        ("Answer:\n**1, 3**", "Answer: 1,3"),
        ("Therefore, the answer is: there are 3 clusters.", "Answer: there are 3 clusters"),
        ("Answer: Tulip field -> Orchid field", "Answer: tulip, orchid"),
        ("Answer: Amir, Raj, Reza.", "Answer: Amir, Raj, Reza"),
        ("Answer: Room2", "Answer: room 2"),
        ("Answer: Yes", "Answer: yes"),
        (" 1,3,5", "Answer: 1, 3, 5"),
    ],
)
def test_correct_after_normalisation(response: str, gold: str) -> None:
    assert GoldCheck().reference_label(item(response, [gold])) == 1


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("Answer: 3, 1", "Answer: 1, 3"),  # order matters
        ("Answer: 1, 3, 5", "Answer: 1, 3"),  # extra step
        ("Answer: No", "Answer: yes"),
        ("Answer: Amir, Jing, Eva, Matt, Prem", "Answer: Amir, Jing, Eva, Prem"),
        ("Answer: 1, 3\nOn second thought, Answer: 1, 2, 3", "Answer: 1, 3"),  # the last answer counts
        ("I think 1, 3 is right but I am not sure at all.", "Answer: 1, 3"),  # no Answer:, not terse
    ],
)
def test_incorrect(response: str, gold: str) -> None:
    assert GoldCheck().reference_label(item(response, [gold])) == 0


def test_any_gold_answer_matches() -> None:
    gold = ["Answer: 1, 7, 4", "Answer: 1, 10, 4"]
    explained = GoldCheck().explain(item("Answer: 1,10,4", gold))
    assert explained["label"] == 1
    assert explained["matched_gold"] == "Answer: 1, 10, 4"
    assert explained["normalised_gold"] == ["1, 7, 4", "1, 10, 4"]
    assert explained["normalised_answer"] == "1, 10, 4"
    assert explained["source"] == "regex"


def test_gold_label_wins_and_no_gold_gives_none() -> None:
    check = GoldCheck()
    assert check.reference_label(item("Answer: 1, 3", ["Answer: 1, 3"], gold_label=0)) == 0
    assert check.explain(item("x", [], gold_label=1))["source"] == "gold_label"
    assert check.reference_label(item("Answer: 1, 3", [])) is None
    assert check.explain(item("Answer: 1, 3", []))["source"] == "none"


def test_fallbacks() -> None:
    response = "The shortest path is 1, 3 as I said."
    gold = ["Answer: 1, 3"]
    assert GoldCheck(GoldCheckConfig(fallback="incorrect")).reference_label(item(KEYWORDS, ["1, 3"])) == 0
    assert GoldCheck(GoldCheckConfig(fallback="whole")).reference_label(item(response, gold)) == 0
    # "search": the normalised gold parts occur as a contiguous run inside the response.
    assert GoldCheck(GoldCheckConfig(fallback="search")).reference_label(item(response, gold)) == 1
    assert GoldCheck(GoldCheckConfig(fallback="search")).reference_label(item("1, 2, 3", gold)) == 0
    explained = GoldCheck(GoldCheckConfig(fallback="incorrect")).explain(item(response, gold))
    assert explained["source"] == "fallback" and explained["answer"] is None


def test_whole_fallback_skips_long_responses() -> None:
    terse = "Room 1, Room 3" + " " * 50
    assert GoldCheck(GoldCheckConfig(whole_max_chars=100)).reference_label(item(terse, ["1, 3"])) == 1
    assert GoldCheck(GoldCheckConfig(whole_max_chars=20)).reference_label(item(terse, ["1, 3"])) == 0


def test_normalisation_options() -> None:
    default = GoldCheck()
    assert default.normalise("Answer: Room 1 -> Room 3 -> ROOM 5.") == "1, 3, 5"
    assert default.normalise("  Rose   field; Tulip field and Lily  ") == "rose, tulip, lily"
    cased = GoldCheck(GoldCheckConfig(lowercase=False, strip_words=[]))
    assert cased.normalise("Room 1, Room 3") == "Room 1, Room 3"
    assert cased.reference_label(item("Answer: Room 1, Room 3", ["room 1, room 3"])) == 0
    only_commas = GoldCheck(GoldCheckConfig(separators=r"\s*,\s*"))
    assert only_commas.normalise("1 -> 3, 5") == "1 -> 3, 5"
    zone = GoldCheck(GoldCheckConfig(strip_words=["zone", "answer:"]))
    assert zone.normalise("Answer: Zone 1, Zone 2, room 5") == "1, 2, room 5"


def test_contains_match() -> None:
    check = GoldCheck(GoldCheckConfig(match="contains"))
    assert check.reference_label(item("Answer: 2, 4, 6, 8", ["Answer: 4, 6"])) == 1
    assert check.reference_label(item("Answer: 2, 4, 8, 6", ["Answer: 4, 6"])) == 0
    assert check.reference_label(item("Answer: 14, 6", ["Answer: 4, 6"])) == 0  # whole parts only


def test_custom_labels() -> None:
    check = GoldCheck(GoldCheckConfig(positive_label=5, negative_label=-1))
    assert check.reference_label(item("Answer: 1", ["1"])) == 5
    assert check.reference_label(item("Answer: 2", ["1"])) == -1


@pytest.mark.parametrize("field", ["answer_pattern", "separators"])
def test_bad_regex_names_the_field(field: str) -> None:
    with pytest.raises(GoldCheckError) as info:
        GoldCheck(GoldCheckConfig(**{field: "Answer: ([0-9]+"}))
    text = str(info.value)
    assert f"gold_check.{field}" in text
    assert "missing )" in text  # the regex engine's own message
    assert "fix:" in text


def test_answer_pattern_needs_one_group() -> None:
    with pytest.raises(GoldCheckError, match="0 capture groups"):
        GoldCheck(GoldCheckConfig(answer_pattern=r"Answer: .*"))


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match="lower_case"):
        GoldCheckConfig(lower_case=True)  # type: ignore[call-arg]
