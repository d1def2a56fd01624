"""Tests of the failure-mode rules (allure.memory.failure_modes)."""

from __future__ import annotations

import pytest

from allure.gold_check import GoldCheck
from allure.memory.failure_modes import FailureModeConfig, classify_failure, measure_features

# ALLURE Section 4.1 (seed 003), the five example responses, each with its correct answer.
ZONE_TASK = (
    "Imagine a world with zones. From zone 1 you can go left to zone 2 or right to zone 3. Zone 3 leads "
    "to zone 6 and zone 7, zone 2 leads to zone 4 and zone 5. Zone 7 has $50, zone 6 has $10, zone 5 has "
    "$22 and zone 4 has $56. A new passage leads from zone 1 to zone 8, a portal to zone 4. From zone 1, "
    "which path yields the most money? Please list the zone numbers in order, separated by commas."
)
ROOM_TASK = (
    "From room 1 what is the shortest path to room 3? Starting from room 1, please list the room numbers in "
    "order, including 1, separated by commas."
)
PARTIAL = "1, left, 2, left, 6"
KEYWORDS = "Room 1, Room 3"
LENGTHY = (
    "Step 1: Analyze the available paths and the money found in each zone. n- Path 1: Zone 1 (right) -> Zone 3 "
    "(right) -> Zone 7 ($50) [blocked] n- Path 2: Zone 1 (right) -> Zone 3 (left) -> Zone 6 ($10) n- Path 3: "
    "Zone 1 (left) -> Zone 2 (right) -> Zone 5 ($22) n- Path 4: Zone 1 (left) -> Zone 2 (left) -> Zone 4 ($56) "
    "[blocked] n- Path 5: Zone 1 (new passage) -> Zone 8 (portal) n nStep 2: Since the path to Zone 4 is "
    "blocked, we need to find the path with the most money among the remaining paths (Path 2, Path 3, and "
    "Path 5). n nStep 3: Compare the money found in the remaining paths. n- Path 2: $10 n- Path 3: $22 n- "
    "Path 5: Unknown (portal) n n Step 4: Since we don't know the amount of money in the portal (Path 5), we "
    "need to choose the path with the most money among the known paths. n- Path 3 has the most money ($22) "
    "among the known paths. n n Step 5: List the zone numbers in order for the path with the most money among "
    "the known paths. n- Zone 1, Zone 2, Zone 5 n n Answer: 1, 2, 5"
)
GIBBERISH = (
    "\\nassistant:\\nFor example, 1,2,5,10,49,20,25,30,35,90\\nuser: room1, room2, room5, room10,\\\\strong49,"
    "\\n\\\\\\strongroom20, room25, \\\\strongroom30, room35, room90\\n\\nuser:1,2,5,10,\\\\strong49,20,25,30,"
    '35,90\\n\\"10\\" \\"49\\" \\"20\\" \\"35\\"\\\\n\\"10\\" \\"30\\" \\"35\\"\\\\n\\"10\\" \\"35\\"\\\\n'
    '\\"10\\" \\"35\\"\\\\n\\"10\\" \\"30\\" \\"35\\"\\\\n' + '\\"30\\" ' * 60
)
HOUSE = (
    "Imagine a house with 21 rooms. Room 1 is connected to rooms 2, 3, 4, 5, 6, and 7. Room 12 is connected to "
    "rooms 14, 8, 9, 10, and 11. Room 21 is connected to rooms 15, 16, 17, 18, 19, and 20. Room 6 is connected "
    "to rooms 7, 2, 3, 4, and 5. Room 3 is connected to rooms 4, 5, 7, and 2. Room 14 is connected to rooms 4, "
    "8, 9, 10, and 11. Room 10 is connected to rooms 11, 13, 8, and 9. Room 19 is connected to rooms 20, 15, "
    "16, 17, and 18. Room 5 is connected to rooms 7, 2, and 16. Room 8 is connected to rooms 9, 11, and 13. "
    "Room 9 is connected to rooms 11 and 13. Room 18 is connected to rooms 20, 15, 16, and 17. Room 7 is "
    "connected to rooms 2, and 4. Room 11 is connected to rooms 13. Room 13 is connected to room 17. Room 17 "
    "is connected to rooms 15. Room 15 is connected to room 16."
)
PARROTING = HOUSE.replace("rooms 14, 8", "14, 8")  # the paper's response drops one word
HOUSE_TASK = (
    HOUSE + " From room 1 what is the shortest path to room 20? Please list the room numbers in order."
)


def classify(response: str, task: str, gold: list[str]) -> str:
    return classify_failure(
        response=response, task=task, gold_answers=gold, extracted=GoldCheck().extract(response)
    ).mode


@pytest.mark.parametrize(
    ("response", "task", "gold", "mode"),
    [
        (PARTIAL, ZONE_TASK, ["1, 3, 6"], "partial_correctness"),
        (KEYWORDS, ROOM_TASK, ["1, 3"], "keywords"),
        (LENGTHY, ZONE_TASK, ["1, 8, 4"], "lengthy_argument"),
        (GIBBERISH, HOUSE_TASK, ["1, 6, 20"], "gibberish"),
        (PARROTING, HOUSE_TASK, ["1, 6, 20"], "parroting"),
    ],
    ids=["partial", "keywords", "lengthy", "gibberish", "parroting"],
)
def test_paper_examples(response: str, task: str, gold: list[str], mode: str) -> None:
    assert classify(response, task, gold) == mode


# Rows where CogEval's GPT-4 score and the regex reference disagree (shortened).
FLOWER_TASK = (
    "Imagine a county with fields of flowers. The entrance leads to the lily field and the rose field. "
    "Which field from the entrance leads to the path with the most flowers?"
)
AMIR_TASK = (
    "From Amir what is the shortest path to Wei? Starting from Amir, please list the names in order, "
    "including Amir, separated by commas."
)


@pytest.mark.parametrize(
    ("response", "task", "gold", "mode"),
    [
        # GPT-4 said 0, the regex says 1: the keyword "field" swayed it.
        (
            "Step 4: The lily field leads to the most flowers.\n\nAnswer: Lily field",
            FLOWER_TASK,
            ["Answer: lily"],
            "keywords",
        ),
        # GPT-4 said 1: the final answer misses the last room.
        (
            "Step 4: Choose the path with the most money.\nPath 1 now leads to the most money through Room 14."
            "\n\nAnswer: 1, 3, 5, 7, 9, 14",
            "Room 14 leads to room 12 with 50 dollars. Starting from room 1, please list the room numbers.",
            ["Answer: 1, 3, 5, 7, 9, 14, 12", "Answer: 1,3,5,7,9,14,12"],
            "partial_correctness",
        ),
        # GPT-4 said 1: the generator invents further chat turns that repeat the prompt.
        (
            "Answer: Amir, Raj, Wei\n\nuser: From Wim what is the shortest path to Ian? Starting from Wim, please "
            "list the names in order, including Wim, separated by commas.\nAssistant: Answer: Wim, Ian\n\nuser: "
            "From Kim what is the shortest path to Moin? Starting from Kim, please list the names in order, "
            "including Kim, separated by commas.\nAssistant: Answer: Kim, Moin",
            AMIR_TASK,
            ["Answer: Amir, Raj"],
            "parroting",
        ),
        # GPT-4 said 1: a degenerate loop.
        (
            "To find the shortest path from Kim to Reza we follow the connections: "
            + "Kim -> Wei -> " * 60
            + "Kim",
            "From Kim what is the shortest path to Reza? Please list the names in order.",
            ["Answer: Kim, Wei, Reza"],
            "gibberish",
        ),
    ],
    ids=["keywords-field", "partial-missing-end", "parroting-invented-turns", "gibberish-loop"],
)
def test_cogeval_disagreements(response: str, task: str, gold: list[str], mode: str) -> None:
    assert classify(response, task, gold) == mode


def test_features_of_partial_example() -> None:
    f = measure_features(
        response=PARTIAL, task=ZONE_TASK, gold_answers=["1, 3, 6"], extracted=None, config=FailureModeConfig()
    )
    # answer tokens [1, left, 2, left, 6]; gold {1, 3, 6}: recall 2/3, precision 2/5
    assert f["gold_recall"] == pytest.approx(2 / 3)
    assert f["answer_precision"] == pytest.approx(2 / 5)
    assert f["extra_tokens"] == 3
    assert f["has_answer"] == 1.0 and f["exact"] == 0.0


def test_reason_names_the_rule_and_values() -> None:
    got = classify_failure(response=KEYWORDS, task=ROOM_TASK, gold_answers=["1, 3"])
    assert got.mode == "keywords"
    assert "2 extra word(s)" in got.reason and "100%" in got.reason
    assert got.features["extra_task_share"] == 1.0


def test_exact_short_answer_is_other() -> None:
    got = classify_failure(
        response="Answer: 1, 3", task=ROOM_TASK, gold_answers=["Answer: 1, 3"], extracted="1, 3"
    )
    assert (got.mode, got.reason) == ("other", "no rule fired")


def test_thresholds_are_configurable() -> None:
    strict = FailureModeConfig(partial_min_recall=0.9)
    assert (
        classify_failure(response=PARTIAL, task=ZONE_TASK, gold_answers=["1, 3, 6"], config=strict).mode
        == "other"
    )
    short = FailureModeConfig(lengthy_min_tokens=3, lengthy_min_sentences=99, partial_min_recall=1.0)
    got = classify_failure(response="Answer: 1, 9, 9", task=ROOM_TASK, gold_answers=["1, 3"], config=short)
    assert got.mode == "lengthy_argument"
    lax = FailureModeConfig(parrot_min_overlap=1.01, parrot_min_overlap_with_roles=1.01)
    assert classify_failure(
        response=PARROTING, task=HOUSE_TASK, gold_answers=["1, 6, 20"], config=lax
    ).mode != ("parroting")


def test_unknown_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="gibberish_symbols"):
        FailureModeConfig(gibberish_symbols=0.3)  # type: ignore[call-arg]
