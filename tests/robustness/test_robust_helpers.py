"""LLM-written rephrasings, meta-prompts, ReQuest procedure prompts and score scales, without a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.errors import SpecError, StudyError
from allure.prompts import (
    check_rephrasing,
    llm_rephrasing,
    load_meta_prompt,
    load_prompt_set,
    meta_requests,
    prompt_texts,
)
from allure.robustness._consistency import SCORE_INSTRUCTION, SCORE_PATTERN, parse_scale
from allure.robustness._request import PROCEDURE_HEADER, procedure_texts


def test_an_llm_answer_in_a_code_fence_is_unwrapped_and_checked() -> None:
    base = load_prompt_set("grader")
    texts = prompt_texts(base)
    answers = {
        "system.txt": "```text\n"
        + texts["system.txt"].replace("Decide whether", "Work out whether")
        + "\n```"
    }
    r = llm_rephrasing(base, "g~llm2", answers, labels=[0, 1], source="meta.txt")
    assert (
        r.texts["system.txt"].startswith("You are a strict grader")
        and "Work out whether" in r.texts["system.txt"]
    )
    assert r.texts["user.txt"] == texts["user.txt"] and r.method == "llm" and r.rules == ("meta:meta.txt",)
    with pytest.raises(SpecError, match="changed nothing"):
        llm_rephrasing(base, "g~llm2", {"system.txt": texts["system.txt"]}, labels=[0, 1], source="m")
    with pytest.raises(SpecError, match="label instruction"):
        llm_rephrasing(
            base,
            "g~llm2",
            {"user.txt": texts["user.txt"].replace('"score: 1"', "one")},
            labels=[0, 1],
            source="m",
        )


def test_meta_prompts(tmp_path: Path) -> None:
    meta = tmp_path / "m.txt"
    meta.write_text("Say it otherwise:\n{text}\n")
    got = meta_requests(load_prompt_set("grader"), load_meta_prompt(meta))
    assert set(got) == {"system.txt", "user.txt"} and got["user.txt"].startswith("Say it otherwise:\nTask:")
    meta.write_text("{text} and {text}")
    with pytest.raises(SpecError, match="2 times"):
        load_meta_prompt(meta)


def test_a_procedure_with_braces_keeps_the_placeholders() -> None:
    original = prompt_texts(load_prompt_set("grader"))
    texts = procedure_texts(
        original, "1. Compare {response} with the answer.\n2. Reply score: 1 or score: 0."
    )
    assert PROCEDURE_HEADER.strip() in texts["system.txt"] and "{{response}}" in texts["system.txt"]
    check_rephrasing(original, texts, [0, 1], where="procedure")  # the escaped braces are no placeholder


@pytest.mark.parametrize(
    ("scale", "bounds"), [("1-10", (1.0, 10.0)), ("0..1", (0.0, 1.0)), (" 1 to 5 ", (1.0, 5.0))]
)
def test_score_scales(scale: str, bounds: tuple[float, float]) -> None:
    assert parse_scale(scale, SCORE_PATTERN, SCORE_INSTRUCTION) == bounds


@pytest.mark.parametrize(
    ("scale", "pattern", "needle"),
    [
        ("10-1", SCORE_PATTERN, "LOW < HIGH"),
        ("1-10", r"confidence: (\d)", "cannot read the score 10"),
        ("1-10", "(", "does not compile"),
    ],
)
def test_bad_score_scales(scale: str, pattern: str, needle: str) -> None:
    with pytest.raises(StudyError, match=needle):
        parse_scale(scale, pattern, SCORE_INSTRUCTION)
