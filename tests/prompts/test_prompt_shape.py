"""A judge's prompt set is validated on load (issue 27, group 8): the response placeholder, the label
placeholder and the answer instruction must be there, and every label must read back."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

from allure.config import load_spec
from allure.errors import SpecError
from tests.test_config_strict import SPEC


def grader_copy(dest: Path) -> Path:
    shutil.copytree(Path(str(resources.files("allure.prompts").joinpath("grader"))), dest)
    return dest


@pytest.mark.parametrize(
    ("fname", "old", "new", "words"),
    [
        ("user.txt", "{response}", "(the response)", ["user.txt", "no {response} placeholder"]),
        ("assistant.txt", "{label}", "1", ["assistant.txt", "no {label} placeholder"]),
        (
            "user.txt",
            'Reply with "score: 1" or "score: 0".',
            "Think.",
            ["never tells the evaluator how to answer"],
        ),
        ("assistant.txt", "score: {label}", "verdict = {label}!", ["cannot read label"]),
    ],
)
def test_a_prompt_set_that_cannot_judge_is_refused(
    tmp_path: Path, fname: str, old: str, new: str, words: list[str]
) -> None:
    folder = grader_copy(tmp_path / "mine")
    f = folder / fname
    f.write_text(f.read_text().replace(old, new))
    if "Think" in new:  # the system turn says it too
        sys_ = folder / "system.txt"
        sys_.write_text(sys_.read_text().split("Reply with")[0])
    if "verdict" in new:  # the instruction follows the new format, only the pattern cannot read it
        u = folder / "user.txt"
        u.write_text(u.read_text().replace('"score: 1" or "score: 0"', '"verdict = 1!" or "verdict = 0!"'))
    spec = tmp_path / "audit.toml"
    spec.write_text(
        SPEC.replace(
            "label_pattern = 'score: ([01])'", f"prompt = \"{folder}\"\nlabel_pattern = 'score: ([01])'"
        )
    )
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    msg = info.value.render()
    assert "field 'evaluator" in msg and "fix:" in msg, msg
    for w in words:
        assert w in msg, msg


def test_the_built_in_sets_pass(tmp_path: Path) -> None:
    for name in ("grader", "reference_free", "rubric"):
        spec = tmp_path / f"{name}.toml"
        spec.write_text(SPEC.replace("label_pattern = 'score: ([01])'", f'prompt = "{name}"'))
        assert load_spec(spec).evaluator.prompt == name
