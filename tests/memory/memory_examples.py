"""Example factories shared by the memory tests (a uniquely named module, importable from tests)."""

from __future__ import annotations

from typing import Any

from allure.models import IclExample

RESPONSES = {
    "partial_correctness": [
        "1, left, 2, left, 6",
        "Go from 1 to 2 and then stop.",
        "The path is 1, 4 and that is it.",
    ],
    "keywords": [
        "Room 1, Room 3, Room 6",
        "The rooms are room 2 and room 5 with the door.",
        "Reward chest in room 7, room 4.",
    ],
    "lengthy_argument": [
        "Let us think carefully about every possible way one might traverse the building, considering "
        "doors, corridors, stairs, and the general layout, before arriving at any conclusion whatsoever.",
        "There are many considerations: first, the geometry of the map; second, the rewards; third, the "
        "history of previous moves; all of these interact in subtle ways that deserve long discussion.",
    ],
    "gibberish": ["zxq blorf 77 ## mnop qq", "asdf ;; lkj 0x0 ??? @@", "qwop qwop qwop 9 9 9 %%"],
    "parroting": [
        "Imagine a building with six rooms. From the lobby you have two choices.",
        "You are in a house with rooms connected by doors. What is the shortest path?",
    ],
}


def make_example(
    n: int,
    *,
    mode: str = "keywords",
    problem_type: str = "1stepPath",
    group: str = "graphA/rooms",
    response: str | None = None,
    **extra: Any,
) -> IclExample:
    """An approved example number ``n``."""
    item_id = f"item-{n:04d}"
    fields: dict[str, Any] = {
        "id": IclExample.make_id(item_id, 1),
        "item_id": item_id,
        "run_id": "run-test",
        "task": "What is the shortest path from room 1 to room 6?",
        "response": response if response is not None else f"Room {n}, then room {n + 2}",
        "gold_answers": ["1, 3, 6"],
        "correct_label": 0,
        "wrong_label": 1,
        "problem_type": problem_type,
        "group": group,
        "generator": "gpt-4",
        "failure_mode": mode,
        "failure_reason": f"rule for {mode}",
        "decision": "approve",
        "reviewer": "alice",
        "decided_at": "2026-01-02T03:04:05+00:00",
    }
    fields.update(extra)
    return IclExample.model_validate(fields)


def mixed_examples() -> list[IclExample]:
    """Thirteen examples over the five modes, two problem types and two groups."""
    out = []
    n = 0
    for mode, texts in RESPONSES.items():
        for j, text in enumerate(texts):
            out.append(
                make_example(
                    n,
                    mode=mode,
                    response=text,
                    problem_type="1stepPath" if n % 2 == 0 else "valuePath",
                    group="graphA/rooms" if j % 2 == 0 else "graphB/social",
                )
            )
            n += 1
    return out
